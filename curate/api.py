"""curate's Python API: run a recipe, edit a recipe, look up operators.

    import curate
    run = curate.run("recipes/quickstart.yaml", output="out/nb", set={"steps[1].gopher_quality.min_words": 30},
                     overwrite=True)
    run.funnel()          # the per-step funnel, as in the terminal
    run.to_polars()       # the curated rows
    curate.ops.names()    # the operator catalog; curate.ops.describe("exact_dedup")

`curate.run` takes the options of `curate run` as keywords, and the command calls the same
function (`execute`) for the run itself, so a recipe run from Python writes the bytes the command
writes. Errors in the recipe or the data raise `curate.errors.CurateError` (RecipeError,
InputError): the messages `curate run` prints before exiting 2.

Nothing heavy is imported at module level: `import curate` and `curate --help` stay fast, and
pyarrow, polars and the engine load when a run or a read needs them.
"""

from __future__ import annotations

import copy
import math
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

import yaml

from curate.errors import CurateError, RecipeError

if TYPE_CHECKING:  # for annotations only: importing them here would make `import curate` slow
    import polars
    import pyarrow

    from curate import recipe as recipe_module
    from curate.engine.run.runner import RunOptions
    from curate.manifest import Manifest


class CurateWarning(UserWarning):
    """Something about a finished run worth knowing (repeated ids, every row removed, no report)."""


# ---------------------------------------------------------------------------------------------
# Recipes


class Recipe:
    """A recipe as an editable document: load it, change it, check it, save it.

    The document is the YAML as a dict (`recipe.doc`), so anything a recipe file can say can be
    set here. `validate()` is the check `curate run` makes when it loads a recipe (operators,
    parameters and their ranges; with `data=True` also the input, as `curate validate` does).
    Relative paths in a recipe are relative to the working directory, as for the command.
    """

    def __init__(self, doc: Mapping[str, Any] | None = None, *, source: str | Path | None = None):
        doc = {} if doc is None else doc
        if not isinstance(doc, Mapping):
            raise RecipeError("", "a recipe is a YAML mapping with input, output and steps")
        self.doc: dict[str, Any] = copy.deepcopy(dict(doc))
        self.source = None if source is None else str(source)  # the file it came from, for messages

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> "Recipe":
        """A recipe file."""
        p = Path(path)
        if not p.is_file():
            raise RecipeError("", f"recipe file not found: {p}")
        return cls._from_text(p.read_text(encoding="utf-8"), source=p)

    @classmethod
    def from_yaml(cls, text: str) -> "Recipe":
        """A recipe written as YAML text."""
        return cls._from_text(text, source=None)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "Recipe":
        """A recipe given as the dict its YAML would load to (copied: later edits to `doc` do not leak in)."""
        return cls(doc)

    @classmethod
    def of(cls, recipe: "RecipeLike") -> "Recipe":
        """Whatever `curate.run` accepts as a recipe: a Recipe (copied), a dict, a path, or YAML
        text (a str with a line break in it; any other str is a path)."""
        if isinstance(recipe, Recipe):
            return recipe.copy()
        if isinstance(recipe, Mapping):
            return cls.from_dict(recipe)
        if isinstance(recipe, str) and "\n" in recipe:
            return cls.from_yaml(recipe)
        if isinstance(recipe, (str, Path)):
            return cls.load(recipe)
        raise TypeError(f"a recipe is a path, YAML text, a dict or a curate.Recipe, not {type(recipe).__name__}")

    @classmethod
    def _from_text(cls, text: str, source: str | Path | None) -> "Recipe":
        from curate.yaml_errors import yaml_error

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise yaml_error(source, text, e) from None
        return cls(doc or {}, source=source)

    # -- editing -------------------------------------------------------------------------------

    def copy(self) -> "Recipe":
        return Recipe(self.doc, source=self.source)

    def set(self, key: str, value: Any) -> "Recipe":
        """Set one value by its place, as `--set` does: `output.path`, `steps[1].gopher_quality.min_words`.
        `value` is a Python value (a dict, a list, a number, ...), not YAML text. Returns the recipe."""
        from curate.recipe import apply_override

        apply_override(self.doc, f"{key}={_as_yaml(value)}")
        return self

    @property
    def name(self) -> str:
        return str(self.doc.get("name", "run"))

    @property
    def steps(self) -> list:
        """The steps as written: a list of `{operator: {params}}` (edit it in place)."""
        return self.doc.setdefault("steps", [])

    def add_step(self, operator: str, index: int | None = None, /, **params: Any) -> "Recipe":
        """Append a step (or insert it before `index`): `recipe.add_step("sample", fraction=0.1)`.
        The operator and its parameters are checked by `validate()` and by a run."""
        step = {operator: dict(params)}
        if index is None:
            self.steps.append(step)
        else:
            self.steps.insert(index, step)
        return self

    def remove_step(self, operator_or_index: str | int) -> "Recipe":
        """Remove a step by its index in `steps` or by its operator's name (the first such step)."""
        steps = self.steps
        if isinstance(operator_or_index, int):
            del steps[operator_or_index]
            return self
        for i, step in enumerate(steps):
            name = step if isinstance(step, str) else next(iter(step), None) if isinstance(step, dict) else None
            if name == operator_or_index:
                del steps[i]
                return self
        raise KeyError(f"no step runs {operator_or_index!r} (steps: {', '.join(map(str, _step_names(steps)))})")

    # -- checking and saving -------------------------------------------------------------------

    def validate(
        self,
        *,
        input: str | None = None,
        output: str | None = None,  # noqa: A002 - `curate run`'s names
        set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002
        data: bool = False,
    ) -> "recipe_module.Recipe":
        """Check the recipe as `curate validate --no-data` does (and with `data=True` as `curate
        validate` does: the output path, the input files and each step's columns against them).
        Returns the validated model the engine runs; raises RecipeError / CurateError naming the place."""
        from curate import preflight
        from curate.recipe import load

        overrides = _overrides(set)
        text = self.to_yaml()
        model = load(text=text, overrides=overrides, input_path=input, output_path=output)
        preflight.check_paths(model)
        if data:
            preflight.check(model, preflight.inputs(model))
        return model

    def to_yaml(self) -> str:
        """The recipe as YAML (keys in the order they were written; comments of a loaded file are not kept)."""
        return yaml.safe_dump(self.doc, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.to_yaml(), encoding="utf-8")
        return p

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recipe) and self.doc == other.doc

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"curate.Recipe({self.name!r}{where}: {' -> '.join(map(str, _step_names(self.steps))) or 'no steps'})"


RecipeLike = Union[Recipe, Mapping[str, Any], str, Path]


def _step_names(steps: list) -> list:
    return [s if isinstance(s, str) else next(iter(s), "?") if isinstance(s, dict) else "?" for s in steps]


def _as_yaml(value: Any) -> str:
    """`value` as YAML text that loads back to it (what `--set key=TEXT` parses). One line, in
    flow style: a float keeps its exponent's dot (PyYAML reads `1e-05` as a string, `1.0e-05`
    as a float), a string that looks like a number stays quoted."""
    return (
        yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=math.inf)
        .strip()
        .removesuffix("...")
        .strip()
    )


def _overrides(set_: Mapping[str, Any] | Iterable[str] | None) -> list[str]:
    """`set=` as `--set` assignments: a mapping of key -> Python value, or `key=YAML` strings as
    on the command line."""
    if set_ is None:
        return []
    if isinstance(set_, Mapping):
        return [f"{key}={_as_yaml(value)}" for key, value in set_.items()]
    if isinstance(set_, str):
        return [set_]
    return [str(item) for item in set_]


def load_recipe(
    recipe: RecipeLike,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002
    input: str | None = None,
    output: str | None = None,
) -> "recipe_module.Recipe":  # noqa: A002
    """The validated recipe `curate run` would run: `recipe` loaded, `set` applied, then `input` and
    `output` replacing the recipe's. A path is read as the command reads it (its errors name the file)."""
    from curate.recipe import load

    overrides = _overrides(set)
    if isinstance(recipe, (str, Path)) and not (isinstance(recipe, str) and "\n" in recipe):
        return load(Path(recipe), overrides=overrides, input_path=input, output_path=output)
    return load(text=Recipe.of(recipe).to_yaml(), overrides=overrides, input_path=input, output_path=output)


# ---------------------------------------------------------------------------------------------
# Running


def input_is_local(r: "recipe_module.Recipe") -> bool:
    """Whether every input path is on this machine (not a URI, not a Hugging Face dataset name)."""
    from curate.io.sources import on_this_machine

    paths = [r.input.path] if isinstance(r.input.path, str) else r.input.path
    return r.input.format != "hf" and all(on_this_machine(p) for p in paths)


def output_to_hub(r: "recipe_module.Recipe") -> bool:
    """Whether the output is published to the Hugging Face Hub (hf://datasets/ORG/NAME): the run
    itself is staged in a local directory, named in the manifest's `run_dir`."""
    return r.output.path.startswith("hf://")


def output_on_store(r: "recipe_module.Recipe") -> bool:
    from curate.io.store import is_uri

    return is_uri(r.output.path)


def _start_workers(opts: "RunOptions", r: "recipe_module.Recipe", sources) -> None:
    """Start the local workers the run's first stage will keep busy now, before the input is
    checked (and, on a store, listed): each spends about a second importing modules, on cores the
    run process leaves idle while it lists and checks the input, instead of after it. `sources`:
    the input files where already listed; on a store, with fewer objects than workers, the others
    wait idle until a later stage or fit uses them, or the run ends."""
    from curate.engine.local import engine as local
    from curate.engine.tasks import plan

    processes = opts.workers or plan.available_cores()
    busy = plan.first_stage_workers(r.steps, opts.limit, processes, files=None if sources is None else len(sources))
    if opts.engine == "local" and busy:
        local.start_workers_ahead(processes, busy)


def execute(r: "recipe_module.Recipe", opts: "RunOptions", console, progress_seconds: float = 30.0) -> "Manifest":
    """Run the validated recipe `r` with `opts`, progress on `console` (a rich Console); returns
    the manifest (runner.run's, saying where the run went: Manifest.run_dir, .hub). This is the
    run of both `curate run` and `curate.run`: the input listed and checked before any row is
    processed, the local workers started while that happens."""
    from curate import preflight
    from curate.engine.local.engine import stop_workers_ahead
    from curate.progress import run_with_progress

    # Local input files are listed first (a glob): they tell how many workers are worth starting
    sources = preflight.inputs(r) if input_is_local(r) else None
    _start_workers(opts, r, sources)
    try:
        checked = preflight.check(r, sources)
        return run_with_progress(r, opts, console, checked, progress_seconds, checked.rows)
    finally:
        stop_workers_ahead()  # the run stopped before it took them


def finished_run(r: "recipe_module.Recipe") -> "Manifest | None":
    """The manifest of the finished run of `r` in its output directory (what --resume finds
    there), or None; a finished run of another recipe is a CurateError."""
    from curate.engine.rundir.run_dir import finished_manifest

    return finished_manifest(r.output.path, r.fingerprint(), r.output.storage_options)


def run(
    recipe: RecipeLike,
    *,
    input: str | None = None,
    output: str | None = None,  # noqa: A002
    set: Mapping[str, Any] | Iterable[str] | None = None,
    workers: int | None = None,  # noqa: A002
    resume: bool = False,
    overwrite: bool = False,
    limit: int | None = None,
    keep_work: bool = False,
    engine: str = "local",
    address: str | None = None,
    work_store: str | None = None,
    report: bool = True,
    progress: bool = True,
    progress_seconds: float = 30.0,
) -> "Run":
    """Run a recipe, as `curate run RECIPE` does, and return the finished Run.

    recipe: a path, YAML text, a dict or a curate.Recipe. The keywords are `curate run`'s options:
    input / output replace the recipe's paths; set: overrides, {"steps[1].gopher_quality.min_words":
    30} (Python values) or ["key=yaml", ...] (as --set); workers (default: one per core), resume,
    overwrite, limit, keep_work, engine (a name in curate.engine.work.engines: "local", "ray" or "slurm"), address,
    work_store; report=False is
    --no-report. progress=False prints nothing while it runs (else bars on a terminal, or a line
    every progress_seconds elsewhere, on stderr). Raises CurateError for a problem with the recipe
    or the data, before any worker starts where a look at the input shows it.
    """
    from curate.engine.run.runner import RunOptions
    from curate.engine.work import engines

    engines.check(engine, address)
    if workers is not None and workers < 1:
        raise CurateError(f"workers must be >= 1 (got {workers})")
    if limit is not None and limit < 1:
        raise CurateError(f"limit must be >= 1 (got {limit})")
    r = load_recipe(recipe, set, input, output)
    if resume and not output_to_hub(r):  # a Hub output's finished run is published by the runner
        manifest = finished_run(r)
        if manifest is not None:  # nothing to do, as `curate run --resume` says
            done = Run(r.output.path, manifest, r)
            if report and done.local and not done.report_path.is_file():
                _write_report(done.path)  # the run was interrupted while it was written
            return done
    opts = RunOptions(
        workers=workers or 0,
        resume=resume,
        overwrite=overwrite,
        limit=limit,
        keep_work=keep_work,
        engine=engine,
        address=address,
        work_store=work_store,
        report=report,
    )
    with _workers_skip_main():
        written = execute(r, opts, _console(progress), progress_seconds)
    # A Hub output is read back from the run's local staging directory, which holds what was published
    done = Run(written.run_dir if output_to_hub(r) else r.output.path, written, r)
    for message in done.warnings():
        warnings.warn(message, CurateWarning, stacklevel=2)
    if report and done.local and not (output_to_hub(r) and done.report_path.is_file()):
        _write_report(done.path)  # a store's report was uploaded before its manifest (the runner's)
    return done


@contextmanager
def _workers_skip_main():
    """Hide the caller's script from the worker processes while they start. curate's workers are
    spawned, and a spawned process first imports the parent's __main__ (as __mp_main__): a script
    that calls curate.run() at top level, without `if __name__ == "__main__":`, would run again in
    every worker and break the pool. The workers need nothing from it (tasks, operators and recipes
    all come from installed modules), so multiprocessing is shown a __main__ without the
    __file__ and __spec__ it would import from, for the length of the run."""
    main = sys.modules.get("__main__")
    saved = {name: vars(main)[name] for name in ("__file__", "__spec__") if main is not None and name in vars(main)}
    try:
        for name in saved:
            if name == "__spec__":
                main.__spec__ = None
            else:
                delattr(main, name)
        yield
    finally:
        for name, value in saved.items():
            setattr(main, name, value)


def _console(progress: bool):
    from rich.console import Console

    return Console(stderr=True, quiet=not progress)


def _write_report(run_dir: Path) -> Path | None:
    """The run succeeded: a report that cannot be written is a warning, never a failed run."""
    try:
        from curate.report.report import write_report

        return write_report(run_dir)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, the run's data stands
        warnings.warn(
            f"report.html not written ({type(e).__name__}: {e}); `curate report {run_dir}` tries again",
            CurateWarning,
            stacklevel=3,
        )
        return None


def open_run(path: str | Path) -> "Run":
    """A finished run directory (local), as `curate.run` returns it."""
    root = Path(path)
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        hint = " (an unfinished run: continue it with resume=True)" if (root / "_work").is_dir() else ""
        raise CurateError(f"{root}: not a finished curate run, no manifest.json{hint}")
    from curate.manifest import read

    return Run(root, read(manifest_path.read_bytes(), str(manifest_path)), None)


# The files of each output format that hold its rows as a table (webdataset: the metadata Parquet
# written beside each tar; megatron holds token ids only, no table).
_TABLE_FILES = {
    "parquet": (".parquet",),
    "jsonl": (".jsonl", ".jsonl.gz", ".jsonl.zst"),
    "hf": (".arrow",),
    "webdataset": (".parquet",),
}


@dataclass
class Run:
    """A finished run: where it is, its manifest, and its output and trace as tables."""

    path: Any  # the run directory: a Path, or the URI of an output on a store
    manifest: Manifest = field(repr=False)  # typed: .to_dict() gives it as written
    recipe: "recipe_module.Recipe | None" = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = self.path if _is_uri(str(self.path)) else Path(self.path)

    @property
    def local(self) -> bool:
        return isinstance(self.path, Path)

    @property
    def rows_in(self) -> int:
        return self.manifest.rows_in

    @property
    def rows_out(self) -> int:
        return self.manifest.rows_out

    @property
    def report_path(self) -> Path:
        return self._local_path() / "report.html"

    def data_files(self) -> list[str]:
        """The output files holding the rows as a table, in the manifest's order (paths, or URIs)."""
        fmt = self.manifest.format
        if fmt not in _TABLE_FILES:
            raise CurateError(
                f"{self.path}: a {fmt} output holds token ids, not a table; read its "
                f"data/part-NNNNN.bin/.idx with megatron-core's IndexedDataset"
            )
        names = [o.path for o in self.manifest.outputs]
        return [self._join(n) for n in names if n.endswith(_TABLE_FILES[fmt])]

    def to_arrow(self) -> "pyarrow.Table":
        """The output rows as one Arrow table (read whole into memory: for a large run, read
        `data_files()` in pieces, or `scan()` lazily)."""
        import pyarrow as pa

        tables = [self._read(f) for f in self.data_files()]
        if not tables:
            return pa.table({})
        return pa.concat_tables(tables, promote_options="permissive")

    def to_dataset(self) -> "pyarrow.dataset.Dataset":
        """The output as a pyarrow dataset over its files, read lazily (filter and project before
        reading: `run.to_dataset().to_table(columns=[...], filter=...)`)."""
        import pyarrow.dataset as ds

        if self.manifest.format in ("parquet", "webdataset"):
            return ds.dataset(self.data_files(), format="parquet", filesystem=self._fs())
        return ds.dataset(self.to_arrow())  # JSON lines, Arrow streams: read once, held in memory

    def to_polars(self) -> "polars.DataFrame":
        import polars as pl

        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)  # what a Table gives
        return frame

    def scan(self) -> "polars.LazyFrame":
        """The output as a lazy polars frame (Parquet outputs: read only what a query needs)."""
        import polars as pl

        if self.manifest.format in ("parquet", "webdataset"):
            return pl.scan_parquet(self.data_files(), storage_options=self._storage_options() or None)
        return self.to_polars().lazy()

    def trace(self, step: str | None = None) -> "pyarrow.Table":
        """The removed rows (trace/), of every step or of one (`"02_gopher_quality"`, or the
        operator's name): _id, step, reason, detail, and the row as it was."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = [s.step for s in self.manifest.steps]
        if step is not None:
            chosen = [n for n in names if n == step or n.partition("_")[2] == step]
            if not chosen:
                raise KeyError(f"no step {step!r} in this run (steps: {', '.join(names)})")
            names = chosen
        tables = []
        for name in names:
            path = self._join(f"trace/{name}.parquet")
            if self._exists(path):
                tables.append(pq.read_table(path, filesystem=self._fs()))
        if not tables:
            return pa.table(
                {
                    "_id": pa.array([], pa.string()),
                    "step": pa.array([], pa.string()),
                    "reason": pa.array([], pa.string()),
                    "detail": pa.array([], pa.string()),
                }
            )
        # Each step's rows carry the row's columns as that step saw them: unify what differs
        return pa.concat_tables(tables, promote_options="permissive")

    def funnel(self) -> list[dict]:
        """Per step: rows in and out, removed, seconds and the reasons (the manifest's `steps`)."""
        keys = ("step", "kind", "rows_in", "rows_out", "removed", "seconds", "reasons")
        return [{key: getattr(s, key) for key in keys} for s in self.manifest.steps]

    def warnings(self) -> list[str]:
        """What `curate run` warns about after this run (repeated ids, every row removed)."""
        from curate.trace import emptied_by

        said = []
        if self.manifest.duplicate_ids is not None:
            said.append(
                f"{self.manifest.duplicate_ids.message} (manifest.json duplicate_ids; "
                f"input.on_duplicate_id: fail refuses them)"
            )
        emptied = emptied_by([s.model_dump() for s in self.manifest.steps])
        if emptied:
            said.append(f"every row was removed: {emptied}")
        return said

    def _repr_markdown_(self) -> str:  # a notebook shows the funnel
        def top(reasons: dict | None) -> str:
            return ", ".join(f"{k} ({v:,})" for k, v in sorted((reasons or {}).items(), key=lambda kv: -kv[1])[:3])

        rows = "\n".join(
            f"| {s['step']} | {s['rows_in']:,} | {s['rows_out']:,} | {s['removed']:,} | {top(s['reasons'])} |"
            for s in self.funnel()
        )
        return (
            f"**{self.manifest.name}** in `{self.path}`: {self.rows_in:,} rows in, "
            f"{self.rows_out:,} out\n\n| step | in | out | removed | top reasons |\n"
            f"|---|---:|---:|---:|---|\n{rows}"
        )

    # -- paths on disk or on a store -----------------------------------------------------------

    def _local_path(self) -> Path:
        if not self.local:
            raise CurateError(f"{self.path} is on a store: its report.html is there, beside data/")
        return self.path

    def _join(self, name: str) -> str:
        return f"{str(self.path).rstrip('/')}/{name}" if not self.local else str(self.path / name)

    def _storage_options(self) -> dict:
        return dict(self.recipe.output.storage_options) if self.recipe is not None else {}

    def _fs(self):
        """None locally (pyarrow's own files); for a URI the output store's fsspec filesystem, made
        as the run made it (output.storage_options, its retry policy)."""
        if self.local:
            return None
        from curate.io.store import filesystem

        return filesystem(str(self.path), self._storage_options(), side="output")[0]

    def _exists(self, path: str) -> bool:
        return Path(path).is_file() if self.local else self._fs().exists(path)

    def _read(self, path: str) -> "pyarrow.Table":
        import pyarrow as pa
        import pyarrow.parquet as pq

        if path.endswith(".parquet"):
            return pq.read_table(path, filesystem=self._fs())
        opened = open(path, "rb") if self.local else self._fs().open(path, "rb")
        with opened as raw:
            if path.endswith(".arrow"):  # datasets' save_to_disk shards are Arrow streams
                return pa.ipc.open_stream(raw).read_all()
            import pyarrow.json as pj

            codec = "gzip" if path.endswith(".gz") else "zstd" if path.endswith(".zst") else None
            stream = pa.CompressedInputStream(raw, codec) if codec else raw
            return pj.read_json(stream)


def _is_uri(path: str) -> bool:
    return "://" in path


# ---------------------------------------------------------------------------------------------
# The operator catalog (curate.ops.names() / curate.ops.describe(name))


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # as `curate ops NAME` shows it, with its range: "float | None, >= 0"
    default: Any  # the default value; None for a required parameter (see `required`)
    required: bool
    description: str
    column: str | None  # "reads" / "writes" for a parameter naming input / output columns


@dataclass(frozen=True)
class OperatorInfo:
    """One operator of the catalog, as `curate ops NAME` shows it."""

    name: str
    kind: str  # map, filter or global
    summary: str  # the first line of its docstring
    doc: str  # the whole docstring
    module: str  # where it is registered: "package.module:Class"
    parameters: tuple[Parameter, ...]
    resources: dict
    params_schema: dict = field(repr=False)  # the Params model's JSON Schema

    def __str__(self) -> str:
        lines = [f"{self.name} ({self.kind}): {self.summary}"]
        for p in self.parameters:
            default = "(required)" if p.required else repr(p.default)
            lines.append(f"  {p.name}: {p.type} = {default}" + (f"  # {p.description}" if p.description else ""))
        return "\n".join(lines)


def operator_names() -> list[str]:
    """Every registered operator's name, sorted (what `curate ops` lists)."""
    from curate import registry

    return registry.names()


def describe_operator(name: str) -> OperatorInfo:
    """One operator: its kind, docs and parameters (an unknown name is a RecipeError suggesting close ones)."""
    import inspect

    from curate import registry
    from curate.describe import _type_and_range as type_and_range, summary
    from curate.ops import column_role

    cls = registry.get(name, "curate.ops.describe")
    parameters = []
    for field_name, info in cls.Params.model_fields.items():
        required = info.is_required()
        parameters.append(
            Parameter(
                name=field_name,
                type=type_and_range(info),
                default=None if required else info.get_default(call_default_factory=True),
                required=required,
                description=info.description or "",
                column=column_role(info),
            )
        )
    doc = inspect.cleandoc(cls.__doc__ or sys.modules[cls.__module__].__doc__ or "")
    return OperatorInfo(
        name=name,
        kind=cls.kind,
        summary=summary(cls),
        doc=doc,
        module=registry.catalog()[name],
        parameters=tuple(parameters),
        resources=cls.resources.model_dump(),
        params_schema=cls.Params.model_json_schema(),
    )
