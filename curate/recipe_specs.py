"""The sections of a recipe as pydantic models: `input`, `output` (with `output.pack` and
`output.hub`), `metrics`, `report` and `slurm`. Each checks its own values; curate/recipe.py
reads a recipe into them, and errors name the key (`input.mime_types`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


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
