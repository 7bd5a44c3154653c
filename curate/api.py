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

This module runs recipes and looks up operators; a recipe as an editable document (curate.Recipe)
is api_recipe.py's, a finished run's results (curate.Run) api_run.py's.

Nothing heavy is imported at module level: `import curate` and `curate --help` stay fast, and
pyarrow, polars and the engine load when a run or a read needs them.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from curate.api_recipe import Recipe, RecipeLike, as_overrides
from curate.api_run import Run
from curate.errors import CurateError

if TYPE_CHECKING:  # for annotations only: importing them here would make `import curate` slow
    from curate import recipe as recipe_module
    from curate.engine.run.runner import RunOptions
    from curate.manifest import Manifest


class CurateWarning(UserWarning):
    """Something about a finished run worth knowing (repeated ids, every row removed, no report)."""


# ---------------------------------------------------------------------------------------------
# Running


def load_recipe(
    recipe: RecipeLike,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002
    input: str | None = None,
    output: str | None = None,
) -> "recipe_module.Recipe":  # noqa: A002
    """The validated recipe `curate run` would run: `recipe` loaded, `set` applied, then `input` and
    `output` replacing the recipe's. A path is read as the command reads it (its errors name the file)."""
    from curate.recipe import load

    overrides = as_overrides(set)
    if isinstance(recipe, (str, Path)) and not (isinstance(recipe, str) and "\n" in recipe):
        return load(Path(recipe), overrides=overrides, input_path=input, output_path=output)
    return load(text=Recipe.of(recipe).to_yaml(), overrides=overrides, input_path=input, output_path=output)


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
