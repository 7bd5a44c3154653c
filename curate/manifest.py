"""The manifest: a finished run's record (manifest.json), as a typed model.

The runner writes it last, as the run's commit marker (curate/engine/run/publish.py); everything that
reads a run (`curate report`, `curate inspect`, `curate card`, the Python API, `--resume` of a
finished run) reads it through `read`, which checks its `format_version`: a manifest of an
older curate (before the field existed) is read as version 1, one of a newer format is refused
with a message saying so. Operators and observers add entries of their own (token counts, a
fit's figures, dataset metrics): the model keeps such extra fields as they are.

Its JSON Schema (`Manifest.model_json_schema()`) is in the docs' reference.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from curate.errors import CurateError

FORMAT_VERSION: Final = "curate-run/1"  # how curate recognises its own runs; a new format gets a new number


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class StepEntry(_Open):
    """One step's line of the funnel (reading the input is the first, `00_read`)."""

    step: str = Field(description="The step's label: its position and name (`01_gopher_quality`).")
    op: str = Field(description="The operator's name (`read` for the input).")
    kind: str = Field(description="map, filter, global or read.")
    rows_in: int
    rows_out: int
    removed: int = Field(description="Rows the step sent to the trace (an expanding step can add rows too).")
    seconds: float = Field(description="The step's time summed over workers, its fit included.")
    reasons: dict[str, int] = Field(default_factory=dict, description="Removed rows per reason.")
    counts: dict[str, int] | None = Field(None, description="What the step counted (`tokens`, `empty_files`).")
    summary: Any = Field(None, description="A Global step's fit, summarised (its state's summary()).")
    fit_seconds: float | None = Field(None, description="A Global step's fit time, within `seconds`.")
    work_bytes: dict[str, int] | None = Field(None, description="What the fit held on disk, by structure.")
    expanded: int | None = Field(None, description="A 1 -> n step: the input rows that produced its rows_out.")
    added: int | None = Field(None, description="A 1 -> n step: rows_out less `expanded`.")


class RunInfo(_Open):
    host: str
    started_at: str = Field(description="ISO 8601, UTC.")
    ended_at: str | None = None


class InputEntry(_Open):
    """An input file or object, with what identifies its content (nothing is hashed)."""

    path: str
    bytes: int | None = None
    modified_ns: int | None = Field(None, description="A local file's modification time (ns since the epoch).")
    version: str | None = Field(
        None, description="An object's version as its store's listing gave it (ETag, VersionId, generation, blob id)."
    )


class OutputEntry(_Open):
    path: str = Field(description="Relative to the run directory (`data/part-00000.parquet`).")
    bytes: int
    rows: int | None = None


class DuplicateIdsEntry(_Open):
    """input.on_duplicate_id: warn found ids given to more than one row."""

    ids: int = Field(description="The ids given to more than one row.")
    rows: int = Field(description="The rows that carry them.")
    message: str = Field(description="What `curate run` warned.")


class SlurmJobEntry(_Open):
    """One submission of `--engine slurm`: a job array (sbatch), or an srun step inside an allocation."""

    job: str = Field(description="Slurm's job id: the array's, or the allocation's for an srun step.")
    batch: str = Field(description="What it ran: a stage's tasks (`stage0`) or a fit's pieces (`map1-...`).")
    array: str | None = Field(None, description="Its --array indices and %throttle (`0-999%16`); none for a step.")
    offset: int = Field(0, description="The batch's item number of the array's index 0.")
    items: list[int] = Field(description="The batch's items it ran.")
    attempt: int = Field(1, description="1, or how many times these items had been submitted, this one included.")
    run_attempt: int = Field(1, description="The run's attempt (a --resume is the next).")


class SlurmTaskEntry(_Open):
    """Where one item of a batch (a stage's task, a share of a fit's pieces) ran to its result."""

    batch: str
    item: int
    task: str | None = Field(None, description="The stage's task (`part-00000`); none for a fit's pieces.")
    job: str = Field(description="The Slurm job that gave the result: array task `ARRAY_INDEX` or step `JOB.STEP`.")
    node: str = Field(description="The node it ran on.")
    runs: int = Field(1, description="Times it was submitted in its run attempt (more than 1: retried).")
    run_attempt: int = Field(1, description="The run's attempt that ran it.")


class SlurmEntry(_Open):
    """`--engine slurm`: what Slurm ran for the run, every attempt of it (`--resume`) included."""

    driver_job: str | None = Field(
        None, description="The job the driver itself ran in (`--submit`, or inside an allocation), if any."
    )
    allocation: str | None = Field(None, description="The allocation whose srun steps ran the tasks, if any.")
    jobs: list[SlurmJobEntry] = Field(default_factory=list, description="Every array or step submitted, in order.")
    tasks: list[SlurmTaskEntry] = Field(
        default_factory=list, description="Per item: the job and node that gave its result."
    )


class ReportSettings(_Open):
    """The recipe's `report:` breakdowns (`${VAR}`s expanded), which `curate report` shows unless told otherwise."""

    by: str | None = Field(None, description="Rows kept and removed broken down by this column's values.")
    by_domain: str | None = Field(
        None, description="Rows kept and removed broken down by the domain of the URL in this column."
    )


class Manifest(_Open):
    """manifest.json: what was run on what, what came out, and where each removed row went."""

    format_version: Literal["curate-run/1"] = FORMAT_VERSION
    name: str = Field(description="The recipe's name.")
    recipe: dict[str, Any] = Field(description="The recipe as run (`${VAR}` references unexpanded).")
    recipe_fingerprint: str = Field(description="What --resume compares: the recipe's hash.")
    seed: int
    limit: int | None = Field(None, description="`--limit`: the rows read at most, where given.")
    rows_in: int
    rows_out: int
    steps: list[StepEntry] = Field(description="The funnel: one entry per step, in order.")
    run: RunInfo
    inputs: list[InputEntry]
    versions: dict[str, str] = Field(
        description="curate's, Python's and the versions of the packages that shape the bytes."
    )
    format: str = Field(description="The output format (parquet, jsonl, hf, webdataset, megatron).")
    data_files: int
    outputs: list[OutputEntry]
    seconds: float = Field(description="The run's wall time.")
    slurm: SlurmEntry | None = Field(None, description="`--engine slurm`: its job ids and each task's node.")
    duplicate_ids: DuplicateIdsEntry | None = Field(None, description="Ids given to more than one input row.")
    report: ReportSettings | None = Field(None, description="The recipe's report: settings, `${VAR}`s expanded.")
    store: dict[str, Any] | None = Field(None, description="An output or inputs on a store: its requests retried.")

    # Where the run went, for whoever ran it (runner.run returns the manifest with them): not part of
    # manifest.json, so never written nor compared; a manifest read from a file has none of them.
    _run_dir: str | None = PrivateAttr(None)
    _hub: dict[str, Any] | None = PrivateAttr(None)
    _already_finished: bool = PrivateAttr(False)

    @property
    def run_dir(self) -> str | None:
        """The directory (or store URI) the run wrote; for an output on the Hub, its local staging directory."""
        return self._run_dir

    @property
    def hub(self) -> dict[str, Any] | None:
        """An output on the Hub: its publication (hub.publish: url, commit, already, files, retries)."""
        return self._hub

    @property
    def already_finished(self) -> bool:
        """The run had finished before (a --resume of a finished run): nothing was run."""
        return self._already_finished

    def of_run(self, run_dir: str, *, already_finished: bool = False, hub: dict[str, Any] | None = None) -> Manifest:
        """This manifest as the runner returns it, saying where its run went (a copy)."""
        copy = self.model_copy()
        copy._run_dir, copy._already_finished, copy._hub = run_dir, already_finished, hub
        return copy

    def __eq__(self, other: object) -> bool:
        # What a manifest says is what is written: where its run went is no part of it
        return isinstance(other, Manifest) and self.to_dict() == other.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """The manifest as JSON values: the fields it was given, in their order (extra entries last)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_bytes(self) -> bytes:
        """The manifest's JSON, as written."""
        return json.dumps(self.to_dict(), indent=2, default=str).encode()

    def entry(self, key: str) -> Any:
        """An entry an operator or observer added under its own name (`dataset_metrics`), or None."""
        return (self.model_extra or {}).get(key)


def build(content: dict) -> Manifest:
    """A manifest from what the runner assembled; a missing or mistyped field is a bug of curate's."""
    return Manifest.model_validate({"format_version": FORMAT_VERSION, **content})


def read(data: bytes | str, where: str) -> Manifest:
    """The manifest in `data` (read from `where`, named in errors): CurateError when it is not one
    curate can read, saying why."""
    try:
        content = json.loads(data)
    except ValueError as e:
        raise CurateError(f"{where}: not a curate manifest: not valid JSON ({e})") from None
    if not isinstance(content, dict):
        raise CurateError(f"{where}: not a curate manifest: a JSON {type(content).__name__}, not an object")
    version = content.get("format_version")
    if version is None and "recipe_fingerprint" in content:  # written before the field existed: version 1
        content = {**content, "format_version": FORMAT_VERSION}
    elif version != FORMAT_VERSION:
        raise CurateError(
            f"{where}: a manifest of format {version!r}, which this curate ({FORMAT_VERSION}) cannot "
            f"read: use the curate that wrote it, or a newer one"
            if version
            else f"{where}: not a curate manifest (no format_version)"
        )
    try:
        return Manifest.model_validate(content)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CurateError(f"{where}: a damaged manifest: {field}: {first['msg']}") from None
