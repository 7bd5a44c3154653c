"""YAML recipe -> validated Recipe. Everything is checked here, before any data is read.

Places in error messages follow the YAML: `steps[2].exact_dedup.columns`, `input.path`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal, Sequence

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from curate import registry
from curate.errors import RecipeError
from curate.ops import Operator
from curate.yaml_errors import yaml_error


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSpec(_Strict):
    path: str | list[str] = Field(
        description="File, glob, directory, list of them, or a Hugging Face dataset name (hf:NAME)."
    )
    format: Literal["parquet", "jsonl", "csv", "webdataset", "warc", "hf_disk", "hf"] | None = Field(
        None,
        description="Default: from the extension (.tar, .tar.gz, .tgz, .tar.zst: webdataset; .warc, .arc, "
        ".wet, also .gz: warc).",
    )
    text_column: str = "text"
    id_column: str | None = Field(None, description="Column to use as _id; default: a stable hash of file + row.")
    split: str | None = Field(None, description="Split of a Hugging Face dataset (dict).")
    on_bad_row: Literal["trace", "fail"] = Field(
        "trace",
        description="Unparseable rows: trace them, or stop the "
        "run. An input file with no rows (empty) is skipped and counted "
        "(the read step's counts.empty_files), or, with fail, stops the "
        "run too.",
    )
    on_duplicate_id: Literal["warn", "fail"] = Field(
        "warn",
        description="Rows repeating an id_column value with "
        "different content: count them in the manifest and warn, or "
        "fail the run.",
    )
    on_truncated: Literal["fail", "keep"] = Field(
        "fail",
        description="A compressed file cut short (a truncated "
        ".gz or .zst): refuse the run before it starts, or keep the rows "
        "before the cut (the cut itself goes to the trace).",
    )
    batch_rows: int = Field(8192, gt=0, description="Rows per batch.")
    mime_types: list[str] | None = Field(
        None,
        description="WARC input only: the identified payload types whose response records are read "
        "(WARC-Identified-Payload-Type, else the server's Content-Type, else an HTML sniff; "
        "compared exactly, lower case). Default: text/html and application/xhtml+xml "
        "(datatrove's WarcReader rule). A WET conversion record may also be text/plain.",
    )
    raw_column: str | None = Field(
        None,
        description="JSON input only: each record whole, as its JSON text, in this "
        "one string column instead of a column per field (for nested "
        "records whose shape varies, e.g. raw agent trajectories); a "
        "file may then also be one JSON array of records. Empty: off.",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Options for the filesystem of each input URI (s3://, gs://, hf://, ...), "
        "e.g. {endpoint_url: ..., anon: true}; credentials as ${VAR}.",
    )

    @field_validator("raw_column")
    @classmethod
    def _empty_is_off(cls, v: str | None) -> str | None:
        # Empty turns it off, so a recipe can default it through ${VAR:-raw} and a user clear it.
        return v or None

    @field_validator("mime_types")
    @classmethod
    def _mime_types(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return None
        if not v:
            raise ValueError("mime_types needs at least one type (leave it out for HTML and XHTML)")
        bad = [t for t in v if "/" not in t or t.strip() != t or ";" in t]
        if bad:
            raise ValueError(f"mime_types: {bad} are not media types (type/subtype, no parameters)")
        return [t.lower() for t in v]

    @model_validator(mode="after")
    def _mime_types_for_warc(self) -> "InputSpec":
        if self.mime_types is not None and self.format is not None and self.format != "warc":
            raise ValueError(f"mime_types applies to format: warc only (this input's format is {self.format})")
        return self


class PackSpec(_Strict):
    """`output.pack`: the token ids cut into rows of exactly seq_len (curate/io/packing.py)."""

    seq_len: int = Field(gt=0, description="Token ids per row.")
    last: Literal["pad", "drop"] = Field(
        description="The last, partial row of each output file: pad it with pad_id, or drop its ids."
    )
    pad_id: int | None = Field(None, ge=0, description="The id padding the last row (last: pad).")

    @model_validator(mode="after")
    def _pad_id_with_pad(self) -> "PackSpec":
        if (self.last == "pad") != (self.pad_id is not None):
            raise ValueError("last: pad needs a pad_id, and pad_id applies to last: pad only")
        return self


class HubSpec(_Strict):
    """`output.hub`: how a run whose output.path is hf://datasets/ORG/NAME is published to the
    Hugging Face Hub (curate/io/hub.py) and what its dataset card says (curate/card.py)."""

    revision: str | None = Field(
        None,
        description="Branch to commit to (default main; also hf://...@REVISION). "
        "A branch that does not exist is made from main.",
    )
    private: bool | None = Field(None, description="Make a new repository private (ignored if it exists).")
    create_pr: bool = Field(False, description="Open a pull request with the commit instead of writing the branch.")
    config_name: str = Field(
        "default", pattern=r"^[\w.-]+$", description="The config the shards are, as the card's configs name it."
    )
    split: str = Field("train", pattern=r"^\w+(\.\w+)*$", description="The split the shards are.")
    trace: bool = Field(False, description="Publish trace/ (the removed rows and why) beside the data.")
    license: str | None = Field(
        None, description="The card's license (a Hub licence id: odc-by, apache-2.0, cc-by-4.0, other...)."
    )
    language: list[str] = Field(
        default_factory=list,
        description="The card's languages (ISO 639 codes); default: those a language_id step keeps.",
    )
    task_categories: list[str] | None = Field(
        None, description="The card's task categories (default: text-generation)."
    )
    pretty_name: str | None = Field(None, description="The card's title (default: the recipe's name).")
    tags: list[str] = Field(default_factory=list, description="More tags for the card (curate is always one).")
    commit_message: str | None = Field(None, description="The commit's message (default: curate: NAME, N rows).")

    @field_validator("language", mode="before")
    @classmethod
    def _one_language(cls, value):
        return [value] if isinstance(value, str) else value


class OutputSpec(_Strict):
    path: str
    shard_mb: int = Field(256, gt=0, description="Target size of one data shard on disk (MB).")
    merge_shards: bool = Field(
        False,
        description="Merge runs of small per-task shards into files of up to shard_mb "
        "(costs one more read and write of the output).",
    )
    format: Literal["parquet", "jsonl", "hf", "webdataset", "megatron"] = Field(
        "parquet",
        description="parquet; jsonl (JSON lines); hf (Hugging Face save_to_disk layout, for "
        "load_from_disk); "
        "webdataset (tar shards of KEY.jpg/txt/json, with their rows' metadata as Parquet "
        "beside each; the sample key is `_key`, kept in the output); megatron (Megatron-LM "
        ".bin/.idx of the input_ids column).",
    )
    compression: Literal["zstd", "snappy", "gzip", "none"] | None = Field(
        None,
        description="parquet: zstd (default), snappy, gzip, none; jsonl: none (default), gzip (.jsonl.gz), "
        "zstd (.jsonl.zst); hf, megatron: none.",
    )
    pack: PackSpec | None = Field(
        None,
        description="Parquet of input_ids packed into rows of seq_len ids, with "
        "the documents' boundaries: {seq_len: N, last: pad|drop}.",
    )
    upload: str | None = Field(
        None,
        description="Copy the finished run (data/, trace/, manifest.json last) to this "
        "fsspec URI: s3://bucket/prefix, gs://..., file:///...",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Options for the filesystem of output.path when it is a URI (or of "
        "output.upload), as input.storage_options: {endpoint_url: ..., key: "
        "${VAR}, retries: {attempts: N}}; credentials as ${VAR}.",
    )
    keep_columns: list[str] = Field(default_factory=list, description="Internal `_` columns to keep (besides _id).")
    trace_rows: bool = Field(True, description="Store each removed row in the trace beside its reason.")
    hub: HubSpec | None = Field(
        None,
        description="With output.path hf://datasets/ORG/NAME[@REVISION]: {revision, "
        "private, create_pr, config_name, split, trace, license, "
        "language, task_categories, pretty_name, tags}.",
    )

    @model_validator(mode="after")
    def _hub_output(self) -> "OutputSpec":
        from curate.io import hub

        if not hub.is_hub(self.path):
            if self.hub is not None:
                raise ValueError("output.hub applies to an output.path of hf://datasets/ORG/NAME")
            return self
        hub.parse(self.path)  # ValueError with the form expected
        unknown = sorted(set(self.storage_options) - {"endpoint", "token"})
        if unknown:
            raise ValueError(
                f"output.storage_options of an hf:// output takes endpoint and token (${{VAR}}), not "
                f"{', '.join(unknown)}"
            )
        if self.format != "parquet":
            raise ValueError(
                f"an hf:// output is published as Parquet shards: format {self.format} does not "
                f"apply (leave output.format out)"
            )
        if self.upload:
            raise ValueError(
                "output.upload copies a local run elsewhere; an hf:// output.path is published to "
                "the Hub already: leave output.upload out"
            )
        if self.hub is None:
            self.hub = HubSpec()
        return self

    @model_validator(mode="after")
    def _compression_fits_format(self) -> "OutputSpec":
        allowed = {
            "parquet": ("zstd", "snappy", "gzip", "none"),
            "jsonl": ("none", "gzip", "zstd"),
            "hf": ("none",),
            "webdataset": ("none",),
            "megatron": ("none",),
        }
        if self.compression is not None and self.compression not in allowed[self.format]:
            raise ValueError(
                f"compression {self.compression} does not apply to format {self.format} "
                f"(choose from {', '.join(allowed[self.format])})"
            )
        if self.pack is not None and self.format != "parquet":
            raise ValueError(f"pack writes Parquet rows, it does not apply to format {self.format}")
        if self.format == "webdataset" and "_key" not in self.keep_columns:
            self.keep_columns.append("_key")  # the tar members' names
        return self

    @property
    def tokens(self) -> bool:
        """The output is written from the input_ids column (megatron, packed Parquet)."""
        return self.format == "megatron" or self.pack is not None

    @property
    def parquet_compression(self) -> str:
        """The codec of the Parquet shards the run writes (the final output's, when it is Parquet)."""
        return self.compression if self.format == "parquet" and self.compression else "zstd"


class MetricsSpec(_Strict):
    """`metrics:` dataset metrics of the run's input and output, measured by the tasks as they run."""

    sample: int = Field(
        2000,
        ge=2,
        description="Rows of each side's seeded sample (bottom-k by hash of _id) for "
        "compression ratio, self-BLEU and the embedding metrics.",
    )
    bleu_sample: int = Field(200, ge=2, description="Rows of that sample self-BLEU uses (cost grows as its square).")
    clusters: int = Field(20, ge=1, description="k of the k-means behind cluster entropy.")
    sketch: int = Field(
        4096,
        ge=16,
        description="KMV sketch size k behind distinct-n over all rows: exact up to k "
        "distinct n-grams, else relative standard error 1/sqrt(k - 2).",
    )
    embedding_column: str = Field(
        "_embedding", description="Embeddings for the embedding metrics, where the rows have them (e.g. after embed)."
    )


class ReportSpec(_Strict):
    """`report:` breakdowns report.html shows beside its own (`curate report --by / --by-domain`
    add to or replace them)."""

    by: str | None = Field(None, description="Also break rows kept and removed down by this column's values.")
    by_domain: str | None = Field(None, description="Also break them down by the domain of the URL in this column.")

    def columns(self) -> list[tuple[str, str]]:
        """(setting, column) of each breakdown asked for."""
        return [(f"report.{key}", column) for key, column in (("by", self.by), ("by_domain", self.by_domain)) if column]


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


class SlurmSpec(_Strict):
    """`slurm:` how `--engine slurm` submits the run's tasks (curate/engine/slurm/): sbatch options
    of every job array, and the shell lines that ready a node for curate. How a run is executed,
    never what it computes: not in the recipe's fingerprint."""

    partition: str | None = Field(None, description="--partition (default: the cluster's default partition).")
    account: str | None = Field(None, description="--account.")
    qos: str | None = Field(None, description="--qos (none by default: the site's default QOS).")
    time: str | None = Field(None, description="--time of each array task, e.g. 4:00:00 (default: the partition's).")
    cpus_per_task: int | None = Field(None, gt=0, description="--cpus-per-task (default: the stage's policy).")
    mem: str | None = Field(
        None,
        pattern=r"^[0-9]+[KMGT]?$",
        description="--mem of each array task, e.g. 8G (default: the stage's policy, if any).",
    )
    gres: str | None = Field(None, description="--gres of model stages' tasks, e.g. gpu:1.")
    constraint: str | None = Field(None, description="--constraint.")
    extra_sbatch: list[str] = Field(
        default_factory=list, description="More sbatch options, each as on the command line: [--exclusive, --nodes=1]."
    )
    env_setup: str | None = Field(
        None, description="Shell lines run before each task (module load, source a venv, a container wrapper's setup)."
    )
    python: str | None = Field(None, description="The Python that runs curate on the nodes (default: this one).")
    retries: int = Field(
        2,
        ge=0,
        description="Resubmissions of an array task that Slurm ended without a result "
        "(cancelled, preempted, node lost, out of time); one ended OUT_OF_MEMORY stops the run at once.",
    )
    poll_seconds: float = Field(2.0, gt=0, description="How often the driver looks at squeue and the done markers.")
    driver_cpus: int = Field(
        1,
        gt=0,
        description="--submit: --cpus-per-task of the driver's own job (it waits on "
        "the tasks; a Global fit's serial part runs in it).",
    )
    driver_mem: str | None = Field(
        None, pattern=r"^[0-9]+[KMGT]?$", description="--submit: --mem of the driver's job (default: the partition's)."
    )
    driver_time: str | None = Field(
        None, description="--submit: --time of the driver's job, which lasts the whole run (default: the partition's)."
    )

    @field_validator("time", "driver_time", mode="before")
    @classmethod
    def _time_text(cls, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # YAML reads 4:00:00 as 14400
            raise ValueError(
                f'write the time quoted, as Slurm takes it ("4:00:00", "2-00:00:00", "30" for '
                f"minutes): unquoted, YAML reads 4:00:00 as the number {value!r}"
            )
        return value

    @field_validator("extra_sbatch")
    @classmethod
    def _options(cls, value: list[str]) -> list[str]:
        for option in value:
            if not option.startswith("-") or "\n" in option:
                raise ValueError(f"{option!r}: each extra_sbatch entry is one sbatch option, such as --exclusive")
        return value


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


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_env(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {k: _expand_env(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def sub(m: re.Match) -> str:
        var, default = m.group(1), m.group(2)
        if var in os.environ:
            return os.environ[var]
        if default is not None:
            return default
        raise RecipeError(where, f"environment variable {var} is not set")

    return _ENV.sub(sub, value)


# A storage option whose value is a credential, by its name (key, secret, token, password, SAS,
# credentials, ...): written in the recipe, it is shown in the manifest as SECRET_SHOWN.
_SECRET_KEY = re.compile(r"key|secret|token|passw|credential|sas|signature|session|auth", re.IGNORECASE)
SECRET_SHOWN = "***"


def _without_secrets(display: dict) -> dict:
    """The recipe as the manifest shows it: `input.storage_options` and `output.storage_options`
    credentials written in the recipe itself are masked; a `${VAR}` reference stays (it names the
    variable, not the value)."""
    for side in ("input", "output"):
        options = display[side].get("storage_options") if isinstance(display.get(side), dict) else None
        if isinstance(options, dict):
            display[side]["storage_options"] = _mask(options)
    return display


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, str(k) if _SECRET_KEY.search(str(k)) else key) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if key and not (isinstance(value, str) and _ENV.fullmatch(value.strip())) and value not in (None, ""):
        return SECRET_SHOWN
    return value


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
    display = _without_secrets(json.loads(json.dumps(doc, default=str)))
    doc = _expand_env(doc, "")
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
