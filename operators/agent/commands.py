"""The recipes behind `curate adp convert | validate | export`: each command writes the recipe of
its one step (with adp_join before it for per-step sources, adp_validate after a conversion) and
runs it as `curate run` would: same readers, runner, trace and manifest, so the command and
`curate run` on the recipe it shows (`--show-recipe`) give the same bytes.

JSON input (lines, or one array of records as the ADP releases ship samples) is read whole per
record (input.raw_column: RAW), since raw agent records vary in shape; Parquet rows are records
as they are. ADP input (validate, export) goes through the `adp` source, which passes
trajectories as they are to adp_validate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from curate.errors import InputError
from curate_operators.agent import converters

if TYPE_CHECKING:
    from curate.manifest import Manifest

RAW = "raw"


def _input(path: Path, batch_rows: int) -> tuple[dict, str | None]:
    """The recipe's input, and the raw column its steps read (None: the rows are the records)."""
    from curate.io.sources import discover

    sources = discover(str(path))
    raw = RAW if sources[0].format == "jsonl" else None
    return {"path": str(path), "batch_rows": batch_rows, **({"raw_column": raw} if raw else {})}, raw


def _reading(source: str, raw: str | None) -> list[dict]:
    """adp_join (per-step sources only) and adp_convert for `source`."""
    params = {"source": source, **({"raw_column": raw} if raw else {})}
    join = [{"adp_join": dict(params)}] if converters.get(source).group_by else []
    return join + [{"adp_convert": params}]


def convert_recipe(source: str, input: Path, output: Path, fmt: str, batch_rows: int) -> dict:
    converters.get(source)  # an unknown name fails before any file is looked at
    inp, raw = _input(input, batch_rows)
    return {"name": f"adp-convert-{source}", "input": inp, "output": {"path": str(output), "format": fmt},
            "steps": _reading(source, raw) + [{"adp_validate": {}}]}


def validate_recipe(input: Path, output: Path, batch_rows: int) -> dict:
    inp, raw = _input(input, batch_rows)
    # Invalid trajectories are what this run looks for: it publishes (with its trace) even when all are.
    return {"name": "adp-validate", "allow_empty": True, "input": inp,
            "output": {"path": str(output), "format": "jsonl"}, "steps": _reading("adp", raw) + [{"adp_validate": {}}]}


def export_recipe(input: Path, output: Path, fmt: str, batch_rows: int, style: str, system_prompt: str | None,
                  environment: str | None, web: bool | None) -> dict:
    inp, raw = _input(input, batch_rows)
    params = {"style": style, "system_prompt": system_prompt, "environment": environment, "web": web}
    export = {"adp_export": {k: v for k, v in params.items() if v is not None}}
    # A style that renders none of the trajectories is an answer (each skipped one traced), not a failure.
    return {"name": f"adp-export-{style}", "allow_empty": True, "input": inp,
            "output": {"path": str(output), "format": fmt},
            "steps": _reading("adp", raw) + [{"adp_validate": {}}, export]}


def as_yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def check_output(output: Path) -> None:
    """`-o` names the run directory; a file name there is the old usage, said plainly."""
    if output.suffix.lower() in (".jsonl", ".json", ".parquet", ".ndjson"):
        raise InputError(f"{output}: -o names the run directory (data/, trace/, manifest.json), not a file; "
                         f"e.g. -o {output.with_suffix('')} (--format jsonl or parquet picks the data files)")


def run(doc: dict, workers: int | None, overwrite: bool) -> Manifest:
    """Run the recipe `doc` through the path `curate run` takes (loaded from its YAML text)."""
    from curate import preflight
    from curate import recipe as recipe_module
    from curate.engine.run.runner import RunOptions
    from curate.progress import run_with_progress
    from curate.cli_errors import err

    r = recipe_module.load(text=as_yaml(doc))
    checked = preflight.check(r)
    return run_with_progress(r, RunOptions(workers=workers or 0, overwrite=overwrite), err, checked)


def removed(manifest: Manifest) -> tuple[int, dict[str, int]]:
    """Rows the run removed (read failures included) and how many for each reason."""
    reasons: dict[str, int] = {}
    for step in manifest.steps:
        for reason, n in step.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + n
    return sum(step.removed for step in manifest.steps), reasons


def first_removed(run_dir: Path, n: int) -> list[str]:
    """The first `n` removed rows of a published run, `step: detail` each, from its trace."""
    import pyarrow.parquet as pq

    from curate.engine.rundir.layout import RunLayout

    out: list[str] = []
    for part in sorted(Path(RunLayout.at(str(run_dir)).trace).glob("*.parquet")):
        table = pq.read_table(part, columns=["_id", "detail"])
        for row_id, detail in zip(table.column("_id").to_pylist(), table.column("detail").to_pylist()):
            out.append(f"row {row_id}: {detail}")
            if len(out) >= n:
                return out
    return out
