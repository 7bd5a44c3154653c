"""What an arm is: a run directory (its data/), a data path or glob in any format curate reads, or
a recipe (run first, its output is the arm). `name=PATH` names it; otherwise its name comes from
the path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from curate.errors import CurateError

RECIPE_SUFFIXES = (".yaml", ".yml")


@dataclass
class Arm:
    name: str
    spec: str  # what the user wrote (without the name)
    kind: str  # "run", "data" or "recipe"
    paths: list[str] = field(default_factory=list)  # what is read (after a recipe ran: its data/)
    format: str | None = None
    text_column: str = "text"


def parse(specs: list[str]) -> list[tuple[str | None, str]]:
    """`name=PATH` or `PATH`, in order."""
    out = []
    for spec in specs:
        m = re.match(r"^([A-Za-z_][\w.-]*)=(.+)$", spec)
        if m and not Path(spec).exists():
            out.append((m.group(1), m.group(2)))
        else:
            out.append((None, spec))
    return out


def _default_name(spec: str, taken: set[str]) -> str:
    p = Path(spec.rstrip("/"))
    while p.name and any(c in str(p) for c in "*?["):  # a glob: named by the folder it starts from
        p = p.parent
    base = p.name
    if p.name == "data" and p.parent.name:
        base = p.parent.name
    for suffix in RECIPE_SUFFIXES:
        base = base.removesuffix(suffix)
    base = re.sub(r"[*?\[\]]", "", base).strip(".-_") or "arm"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}-{i}", i + 1
    return name


def classify(name: str | None, spec: str, taken: set[str], text_column: str | None) -> Arm:
    """The arm `spec` stands for; nothing is read or run yet."""
    from curate.io.sources import is_run_directory

    name = name or _default_name(spec, taken)
    if name in taken:
        raise CurateError(f"two arms are named {name!r}; name them apart with NAME=PATH")
    p = Path(spec)
    if p.suffix in RECIPE_SUFFIXES and p.is_file():
        return Arm(name, spec, "recipe", text_column=text_column or "text")
    if p.is_dir() and is_run_directory(p):
        if not (p / "data").is_dir():
            raise CurateError(f"arm {name}: {spec} is a run directory without data/ (an unfinished run?)")
        return Arm(name, spec, "run", [str(p / "data")], text_column=text_column or _run_text_column(p))
    return Arm(name, spec, "data", [spec], text_column=text_column or "text")


def _run_text_column(run_dir: Path) -> str:
    """The text column the run's recipe named (manifest.json's recipe), else `text`."""
    from curate.errors import CurateError
    from curate.manifest import read

    try:
        manifest = read((run_dir / "manifest.json").read_bytes(), str(run_dir / "manifest.json"))
    except (OSError, CurateError):
        return "text"
    return (manifest.recipe.get("input") or {}).get("text_column") or "text"


def run_recipe(arm: Arm, out_dir: Path, workers: int | None, resume: bool) -> None:
    """Run the arm's recipe with its output in `out_dir` (or take a finished run there on resume);
    the arm then reads out_dir/data."""
    from curate import recipe as recipe_module
    from curate.engine.run.runner import RunOptions, run
    from curate.engine.rundir.run_dir import finished_manifest

    r = recipe_module.load(arm.spec, output_path=str(out_dir))
    arm.text_column = r.input.text_column if arm.text_column == "text" else arm.text_column
    if not (resume and finished_manifest(str(out_dir), r.fingerprint(), r.output.storage_options)):
        run(r, RunOptions(workers=workers or 0, overwrite=True, report=False))
    arm.paths = [str(out_dir / "data")]
    arm.kind = "recipe"


def recipe_arms(recipe_path: str, names: tuple[str, str] = ("input", "output")) -> list[Arm]:
    """`--recipe R.yaml`: R's input (as R reads it) vs R's output (R run first)."""
    from curate import recipe as recipe_module

    r = recipe_module.load(recipe_path)
    paths = [r.input.path] if isinstance(r.input.path, str) else list(r.input.path)
    fmt = r.input.format if r.input.format not in ("hf", "hf_disk") else None
    return [
        Arm(names[0], recipe_path, "data", paths, fmt, r.input.text_column),
        Arm(names[1], recipe_path, "recipe", [], None, r.input.text_column),
    ]
