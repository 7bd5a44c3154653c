"""YAML recipe -> validated Recipe. Everything is checked here, before any data is read: `load`
applies the `--set` overrides, expands `${VAR}` (recipe_env.py), and validates the sections
(recipe_specs.py) and the steps.

Places in error messages follow the YAML: `steps[2].exact_dedup.columns`, `input.path`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Sequence

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from curate import registry
from curate.errors import RecipeError
from curate.ops import Operator
from curate.recipe_env import expand_env, without_secrets
from curate.recipe_specs import InputSpec, MetricsSpec, OutputSpec, ReportSpec, SlurmSpec
from curate.yaml_errors import yaml_error


class Step(BaseModel):
    """One validated step: the operator class, its params and its place in the recipe."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: int
    name: str
    op_class: type[Operator]
    params: Any
    batch_rows: int | None = None  # the recipe's `batch_rows:` for this step, beside its params

    @property
    def label(self) -> str:
        return f"{self.index:02d}_{self.name}"

    def rows_per_batch(self) -> int | None:
        """Rows per batch this step gets: its operator's `batch_rows_param`, else the recipe's, else
        the operator's, else None (as read)."""
        if self.op_class.batch_rows_param:
            return getattr(self.params, self.op_class.batch_rows_param)
        return self.batch_rows or self.op_class.batch_rows

    def build(self, recipe: "Recipe") -> Operator:
        return self.op_class(self.params, seed=recipe.seed, text_column=recipe.input.text_column)


class Recipe(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str = "run"
    seed: int = 0
    input: InputSpec
    output: OutputSpec
    steps: list[Step]
    metrics: MetricsSpec | None = None  # None: no run-level dataset metrics
    allow_empty: bool = False  # a run whose steps remove every row publishes an empty output (else exit 2)
    memory_gb: float | None = None  # what the Global fits may hold at once (None: curate.memory's default)
    report: ReportSpec = Field(default_factory=ReportSpec)  # what report.html breaks rows down by
    slurm: SlurmSpec | None = None  # how --engine slurm submits the tasks (never what they compute)
    raw: dict = Field(repr=False)  # after overrides and ${VAR} expansion: what the run does
    display: dict = Field(repr=False)  # before ${VAR} expansion: what the manifest shows (no secrets)

    def fingerprint(self) -> str:
        """Hash of everything that decides the output (not of comments or key order, nor of
        operator parameters marked `operational`: where an endpoint is, how hard to push it, nor
        of `allow_empty`, which only accepts an empty result: a run stopped for removing every row
        is published by --resume once it is set, nor of `memory_gb`: a fit spills past it to the
        same decisions, nor of `report`)."""
        doc = json.loads(json.dumps(self.raw, default=str))
        doc.pop("allow_empty", None)
        doc.pop("memory_gb", None)  # how the fits hold their state, never what they decide
        doc.pop("report", None)  # what the report shows of the run, written after it
        doc.pop("slurm", None)  # where and how the tasks are submitted
        # How to reach the input or the output (endpoint, credentials) is not what they are: the
        # inputs' own fingerprints (size, ETag) say that, and a rotated key must not stop --resume.
        for side in ("input", "output"):
            if isinstance(doc.get(side), dict):
                doc[side].pop("storage_options", None)
        if isinstance(doc.get("output"), dict):  # how an hf:// output is published and described, not what it is
            doc["output"].pop("hub", None)
        for step, item in zip(self.steps, doc.get("steps") or []):
            params = next(iter(item.values()), None) if isinstance(item, dict) else None
            if isinstance(params, dict):
                _drop_operational(step.op_class.Params, params)
        canon = json.dumps(doc, sort_keys=True, default=str)
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


def _drop_operational(model: type[BaseModel], params: dict) -> None:
    """Remove from `params` (as written in the recipe) the fields `model` marks operational,
    looking into nested parameter models too."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in params:
            continue
        if isinstance(field.json_schema_extra, dict) and field.json_schema_extra.get("operational"):
            del params[key]
        elif (
            isinstance(field.annotation, type)
            and issubclass(field.annotation, BaseModel)
            and isinstance(params[key], dict)
        ):
            _drop_operational(field.annotation, params[key])


_SET_KEY = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def apply_override(doc: dict, assignment: str) -> None:
    """Apply `--set a.b[2].c=value` (or `a.b.2.c=value`); the value is parsed as YAML."""
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        raise RecipeError("--set", f"expected key=value, got {assignment!r}")
    parts: list[str | int] = []
    for name, idx in _SET_KEY.findall(key):
        parts.append(int(idx) if idx else (int(name) if name.isdigit() else name))
    value = yaml.safe_load(text) if text else ""
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if i == 2 and parts[0] == "steps" and not last:  # steps[i].<op>.<param>: <op> must be the step's operator
            present = node if isinstance(node, str) else next(iter(node), None) if isinstance(node, dict) else None
            if present is not None and present != part:
                raise RecipeError(f"--set {key}", f"steps[{parts[1]}] is {present}, not {part}")
            if isinstance(node, str):  # the short form `- name` of a step without parameters
                node = doc["steps"][parts[1]] = {node: {}}
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise RecipeError(f"--set {key}", f"no list item {part} here")
            if last:
                node[part] = value
            else:
                node = node[part]
        else:
            if not isinstance(node, dict):
                raise RecipeError(f"--set {key}", f"'{part}' is not a mapping key here")
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})


def _loc(prefix: str, loc: tuple) -> str:
    out = prefix
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f". Did you mean {close[0]}?" if close else ""


def _pydantic_error(prefix: str, err: ValidationError, model: type[BaseModel]) -> RecipeError:
    errors = err.errors()
    # A misspelt key also makes the key it was meant to be missing: name the misspelling.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    where = _loc(prefix, first["loc"])
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown parameter" + (
            _did_you_mean(str(first["loc"][0]), model.model_fields) if len(first["loc"]) == 1 else ""
        )
    elif first["type"] == "value_error":  # a validator's own message, which names the values
        msg = str(first["ctx"]["error"])
    elif "input" in first and first["type"] not in ("missing",):
        msg += f" (got {first['input']!r})"
    more = len(err.errors()) - 1
    return RecipeError(where, msg + (f" (+{more} more problems)" if more else ""))


def _parse_steps(raw_steps: Any) -> list[Step]:
    if raw_steps is None:
        raw_steps = []
    if not isinstance(raw_steps, list):
        raise RecipeError("steps", "must be a list of `- operator_name: {params}` items")
    steps = []
    for i, item in enumerate(raw_steps):
        where = f"steps[{i}]"
        if isinstance(item, str):
            item = {item: {}}
        if isinstance(item, dict) and len(item) > 1:
            _stray_keys(item, where)
        if not isinstance(item, dict) or len(item) != 1:
            raise RecipeError(where, "each step is a mapping with one key, the operator name")
        ((name, params),) = item.items()
        op_class = registry.get(str(name), where)
        params = dict(params or {}) if isinstance(params, dict) else params
        batch_rows = None
        if isinstance(params, dict) and "batch_rows" in params and "batch_rows" not in op_class.Params.model_fields:
            batch_rows = params.pop("batch_rows")  # every step may set it: the engine re-sizes its batches
            if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
                raise RecipeError(f"{where}.{name}.batch_rows", f"must be a whole number >= 1, not {batch_rows!r}")
            if op_class.batch_rows_param:
                raise RecipeError(
                    f"{where}.{name}.batch_rows",
                    f"{name} works on batches of "
                    f"`{op_class.batch_rows_param}` rows; set {op_class.batch_rows_param} instead",
                )
        try:
            parsed = op_class.Params.model_validate(params or {})
        except ValidationError as e:
            raise _pydantic_error(f"{where}.{name}", e, op_class.Params) from None
        steps.append(Step(index=i + 1, name=name, op_class=op_class, params=parsed, batch_rows=batch_rows))
    return steps


def _stray_keys(item: dict, where: str) -> None:
    """A step of several keys is an operator with its parameters written beside it instead of
    indented under it (`- minhash_dedup:` then `  threshold: 0.8`), or two operators in one item:
    say which. Nothing is said when no key names an operator (the caller's message then stands)."""
    ops = [key for key in item if str(key) in registry.catalog()]
    if len(ops) > 1:
        raise RecipeError(where, f"two operators in one step ({ops[0]}, {ops[1]}): start each with its own `- `")
    if not ops:
        return
    name, stray = ops[0], next(key for key in item if key not in ops)
    value = json.dumps(item[stray], default=str)
    raise RecipeError(
        f"{where}.{stray}",
        f"written beside the operator {name}, not under it: indent it under "
        f"`{name}:` (`- {name}:` then `    {stray}: {value}` on the next line"
        + (f", with no {{}} after `{name}:`)" if item[name] == {} else ")"),
    )


_TOP_LEVEL = ("name", "seed", "input", "output", "metrics", "allow_empty", "memory_gb", "report", "slurm", "steps")


def _section(key: str, value: Any, model: type[BaseModel], shape: str):
    """The recipe's `key:` mapping as `model`; errors name the place (`shape` says what fits)."""
    if not isinstance(value, dict):
        raise RecipeError(key, f"must be {shape} (got {value!r})")
    try:
        return model.model_validate(value)
    except ValidationError as e:
        raise _pydantic_error(key, e, model) from None


def _metrics(value: Any) -> MetricsSpec | None:
    """`metrics: true` (the defaults), `false` or absent (none), or a mapping of settings."""
    if value is None or value is False:
        return None
    if value is True:
        return MetricsSpec()
    return _section("metrics", value, MetricsSpec, "true, false or a mapping of settings")


def load(
    path: str | Path | None = None,
    *,
    text: str | None = None,
    overrides: Sequence[str] = (),
    input_path: str | None = None,
    output_path: str | None = None,
) -> Recipe:
    """Read, override, expand and validate a recipe. Raises RecipeError with the place."""
    if text is None:
        if path is None:
            raise TypeError("recipe.load needs a path or text")
        p = Path(path)
        if not p.is_file():
            raise RecipeError("", f"recipe file not found: {p}")
        text = p.read_text(encoding="utf-8")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise yaml_error(path, text, e) from None
    doc = doc or {}
    if not isinstance(doc, dict):
        raise RecipeError("", "a recipe is a YAML mapping with input, output and steps")
    for assignment in overrides:
        apply_override(doc, assignment)
    if input_path:
        doc.setdefault("input", {})
        doc["input"] = {**(doc["input"] or {}), "path": input_path}
    if output_path:
        doc["output"] = {**(doc.get("output") or {}), "path": output_path}
    display = without_secrets(json.loads(json.dumps(doc, default=str)))
    doc = expand_env(doc, "")
    unknown = sorted(set(doc) - set(_TOP_LEVEL), key=str)
    if unknown:
        raise RecipeError(
            str(unknown[0]),
            f"unknown top-level key (expected {', '.join(_TOP_LEVEL)})" + _did_you_mean(unknown[0], _TOP_LEVEL),
        )
    for key in ("input", "output"):
        if not doc.get(key):
            raise RecipeError(key, f"missing (give it in the recipe or with --{key})")
    try:
        inp = InputSpec.model_validate(doc["input"])
    except ValidationError as e:
        raise _pydantic_error("input", e, InputSpec) from None
    try:
        out = OutputSpec.model_validate(doc["output"])
    except ValidationError as e:
        raise _pydantic_error("output", e, OutputSpec) from None
    seed = doc.get("seed", 0)
    if not isinstance(seed, int):
        raise RecipeError("seed", f"must be an integer (got {seed!r})")
    allow_empty = doc.get("allow_empty", False)
    if not isinstance(allow_empty, bool):
        raise RecipeError("allow_empty", f"must be true or false (got {allow_empty!r})")
    memory_gb = doc.get("memory_gb")
    if memory_gb is not None and (
        isinstance(memory_gb, bool) or not isinstance(memory_gb, (int, float)) or not memory_gb > 0
    ):
        raise RecipeError("memory_gb", f"must be a number of GB > 0 (got {memory_gb!r})")
    report = (
        ReportSpec()
        if doc.get("report") is None
        else _section("report", doc["report"], ReportSpec, "a mapping such as {by: COLUMN}")
    )
    steps = _parse_steps(doc.get("steps"))
    return Recipe(
        name=str(doc.get("name", "run")),
        seed=seed,
        input=inp,
        output=out,
        steps=steps,
        metrics=_metrics(doc.get("metrics")),
        allow_empty=allow_empty,
        memory_gb=memory_gb,
        report=report,
        raw=doc,
        display=display,
        slurm=None
        if doc.get("slurm") is None
        else _section("slurm", doc["slurm"], SlurmSpec, "a mapping such as {partition: NAME}"),
    )
