"""The Agent Data Protocol (ADP) 1.0 schema as pydantic models, and trajectory validation.

A trajectory is `{id, content: [event, ...], details: {str: str}}`; each event carries a
`class_` discriminator. The later optional fields (`schema_version` on the trajectory;
`reasoning_content`, `reward`, `tool_call_id` on events) are accepted and kept, so data
written by later ADP versions validates as long as it keeps the 1.0 shape. Any other
unknown key is an error: a typo in a field name must not pass silently.

`validate_trajectory(doc)` returns the model or raises `TrajectoryError`, whose message
names the trajectory id, the event index and the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, TypeAdapter, ValidationError

from curate.errors import CurateError

# Languages a code_action may declare: the ones the ADP datasets use plus common others.
LANGUAGES = (
    "bash", "sh", "shell", "python", "ipython", "javascript", "typescript", "java", "c", "cpp",
    "csharp", "go", "rust", "ruby", "php", "sql", "r", "julia", "kotlin", "swift", "scala",
    "perl", "lua", "haskell", "html", "css", "markdown", "yaml", "json",
)
Language = Literal[LANGUAGES]  # type: ignore[valid-type]
Source = Literal["user", "agent", "environment"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    # Later ADP versions: accepted and kept when present, absent from 1.0 data.
    reasoning_content: StrictStr | None = None
    reward: StrictFloat | StrictInt | None = None
    tool_call_id: StrictStr | None = None


class ApiAction(_Event):
    class_: Literal["api_action"]
    function: StrictStr
    kwargs: dict[StrictStr, Any]
    description: StrictStr | None = None


class CodeAction(_Event):
    class_: Literal["code_action"]
    language: Language
    content: StrictStr
    description: StrictStr | None  # required key, may be null


class MessageAction(_Event):
    class_: Literal["message_action"]
    content: StrictStr
    description: StrictStr | None = None


class TextObservation(_Event):
    class_: Literal["text_observation"]
    content: StrictStr
    name: StrictStr | None = None
    source: Source


class BoundingBox(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    x: StrictFloat | StrictInt
    y: StrictFloat | StrictInt
    width: StrictFloat | StrictInt
    height: StrictFloat | StrictInt


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: StrictStr
    element_type: StrictStr
    bounding_box: BoundingBox


class ImageObservation(_Event):
    class_: Literal["image_observation"]
    content: StrictStr  # path to the image (or its base64 text in some releases)
    annotations: list[Annotation] | None = None
    source: Source


class WebObservation(_Event):
    class_: Literal["web_observation"]
    html: StrictStr | None
    axtree: StrictStr | None = None
    url: StrictStr | None
    image_observation: ImageObservation | None
    viewport_size: Annotated[list[StrictInt], Field(min_length=2, max_length=2)] | None  # [width, height]


Event = Annotated[
    Union[ApiAction, CodeAction, MessageAction, TextObservation, ImageObservation, WebObservation],
    Field(discriminator="class_"),
]
EVENT_CLASSES = ("api_action", "code_action", "message_action", "text_observation",
                 "image_observation", "web_observation")


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: StrictStr
    content: list[Event]
    details: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    schema_version: StrictStr | None = None


class TrajectoryError(CurateError):
    """A trajectory that does not follow ADP; the message names id, event index and field."""

    def __init__(self, traj_id: str, message: str, event: int | None = None, field: str | None = None):
        self.traj_id, self.event, self.field = traj_id, event, field
        super().__init__(message)


_ADAPTER = TypeAdapter(Trajectory)


def _describe(doc: Any, err: dict) -> tuple[int | None, str, str]:
    """(event index, dotted field, message) for one pydantic error on a trajectory document."""
    loc = list(err["loc"])
    event = None
    if len(loc) >= 2 and loc[0] == "content" and isinstance(loc[1], int):
        event = loc[1]
        loc = loc[2:]
        # The discriminated union puts the class tag in the path; it is not a field.
        if loc and loc[0] in EVENT_CLASSES:
            loc = loc[1:]
    field = ".".join(str(p) for p in loc) or ("class_" if err["type"].startswith("union_tag") else "")
    msg = err["msg"]
    if err["type"] == "union_tag_invalid":
        got = err.get("input", {}).get("class_") if isinstance(err.get("input"), dict) else None
        msg = f"unknown class_ {got!r} (expected one of {', '.join(EVENT_CLASSES)})"
    elif err["type"] == "union_tag_not_found":
        msg = "missing class_"
        field = "class_"
    elif err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "literal_error" and "input" in err:
        msg += f" (got {err['input']!r})"
    elif err["type"] not in ("missing",) and "input" in err and not isinstance(err["input"], (dict, list)):
        msg += f" (got {type(err['input']).__name__})"
    return event, field, msg


def validate_trajectory(doc: Any) -> Trajectory:
    """Parse one trajectory document; raise TrajectoryError naming id, event and field."""
    traj_id = str(doc.get("id", "?")) if isinstance(doc, dict) else "?"
    if not isinstance(doc, dict):
        raise TrajectoryError(traj_id, f"trajectory is a {type(doc).__name__}, not a JSON object")
    try:
        return _ADAPTER.validate_python(doc)
    except ValidationError as e:
        errors = e.errors()
        event, field, msg = _describe(doc, errors[0])
        where = f"trajectory {traj_id!r}"
        if event is not None:
            cls = None
            content = doc.get("content")
            if isinstance(content, list) and event < len(content) and isinstance(content[event], dict):
                cls = content[event].get("class_")
            where += f", event {event}" + (f" ({cls})" if isinstance(cls, str) else "")
        if field:
            where += f", field {field!r}"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise TrajectoryError(traj_id, f"{where}: {msg}{more}", event, field) from None
