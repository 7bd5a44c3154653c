"""The dataset card of a run: README.md with the Hugging Face Hub's YAML front matter, written from
the run directory's manifest.json (and its data files' schema), for any finished run.

Front matter: pretty_name, license and language (the recipe's output.hub, else flags, else a
language_id step's `languages`), size_categories (from the rows written), task_categories,
tags, and `configs` (the config and split the shards are, with `data_files` globs matching
them: the Hub's names when published, the run directory's own otherwise, so that
`datasets.load_dataset(RUN_DIR)` reads data/ alone). Body: what the data is (rows, files,
columns), the per-step funnel with each step's reasons, token counts where the run counted them,
the QDC dataset metrics where it measured them, the recipe as run (as the manifest holds it:
`${VAR}` references never expanded, storage credentials withheld), the lineage (inputs, curate
and library versions, dates) and how to reproduce it.

`curate card RUN_DIR [-o FILE]` writes it; publishing to the Hub (curate/io/hub.py) commits it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import yaml

from curate.errors import CurateError
from curate.manifest import Manifest, read

SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
)
SECRET_KEYS = re.compile(r"(^|_)(key|secret|token|password|passwd|credentials?|auth|authorization)$", re.I)
FUNNEL_HEADER = "| step | operator | kind | rows in | rows out | removed | reasons |"


def size_category(rows: int) -> str:
    for bound, name in SIZE_CATEGORIES:
        if rows < bound:
            return name
    return "n>1T"


def _manifest(run_dir: Path) -> Manifest:
    path = Path(run_dir) / "manifest.json"
    try:
        return read(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise CurateError(f"{run_dir} is no finished run: it has no manifest.json") from None


def _withheld(value, key: str = ""):
    """The recipe as shown: a value under a key named like a credential (key, secret, token,
    password...) that is not a ${VAR} reference becomes <withheld>."""
    if isinstance(value, dict):
        return {k: _withheld(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_withheld(v, key) for v in value]
    if isinstance(value, str) and SECRET_KEYS.search(key) and not _reference(value):
        return "<withheld>"
    return value


def _reference(value) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", value))


def _hub_settings(manifest: Manifest) -> dict:
    output = manifest.recipe.get("output") or {}
    hub = output.get("hub") if isinstance(output, dict) else None
    return hub if isinstance(hub, dict) else {}


def _languages(manifest: Manifest) -> list[str]:
    """The languages a language_id step keeps (its `languages`), if any."""
    found: list[str] = []
    for item in manifest.recipe.get("steps") or []:
        if isinstance(item, dict) and "language_id" in item and isinstance(item["language_id"], dict):
            for code in item["language_id"].get("languages") or []:
                if isinstance(code, str) and code not in found:
                    found.append(code)
    return found


def _columns(run_dir: Path, manifest: Manifest) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    for entry in manifest.outputs:
        path = Path(run_dir) / entry.path
        if path.suffix == ".parquet" and path.is_file():
            return [(f.name, str(f.type)) for f in pq.read_schema(path)]
    return []


def _tokens(run_dir: Path, manifest: Manifest) -> tuple[list[tuple[str, int]], dict]:
    """Token counts the run has: each step's that counted them (tokens of the rows that step
    saw), and the output's totals (the token outputs' _tokens.json)."""
    per_step = [(s.step, int(s.counts["tokens"])) for s in manifest.steps if s.counts and s.counts.get("tokens")]
    totals = {}
    path = Path(run_dir) / "data" / "_tokens.json"
    if path.is_file():
        try:
            about = json.loads(path.read_text())
            totals = {k: v for k, v in about.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        except ValueError:
            pass
    return per_step, totals


def front_matter(
    manifest: Manifest,
    data_files: list[str],
    *,
    license: str | None = None,
    language: list[str] | None = None,
    task_categories: list[str] | None = None,
    pretty_name: str | None = None,
    tags: list[str] | None = None,
    settings: dict | None = None,
) -> dict:
    hub = settings if settings is not None else _hub_settings(manifest)
    meta: dict = {"pretty_name": pretty_name or hub.get("pretty_name") or manifest.name or "curate run"}
    license = license or hub.get("license")
    if license:
        meta["license"] = license
    langs = language or hub.get("language") or _languages(manifest)
    if isinstance(langs, str):
        langs = [langs]
    if langs:
        meta["language"] = list(langs)
    meta["size_categories"] = [size_category(manifest.rows_out)]
    tasks = task_categories if task_categories is not None else hub.get("task_categories")
    meta["task_categories"] = list(tasks) if tasks is not None else ["text-generation"]
    if not meta["task_categories"]:
        del meta["task_categories"]
    meta["tags"] = ["curate"] + [t for t in (tags or hub.get("tags") or []) if t != "curate"]
    if data_files:
        meta["configs"] = [
            {
                "config_name": hub.get("config_name") or "default",
                "default": True,
                "data_files": [{"split": hub.get("split") or "train", "path": data_files}],
            }
        ]
    return meta


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _funnel(manifest: Manifest) -> list[str]:
    lines = [FUNNEL_HEADER, "|---|---|---|---:|---:|---:|---|"]
    for s in manifest.steps:
        reasons = ", ".join(f"{_cell(r)} ({n})" for r, n in sorted(s.reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        extra = f"; {s.added} added by expansion" if s.added else ""
        lines.append(
            f"| {_cell(s.step)} | {_cell(s.op)} | {_cell(s.kind)} | "
            f"{s.rows_in} | {s.rows_out} | {s.removed} | {reasons or '-'}{extra} |"
        )
    return lines


def read_funnel(text: str) -> list[dict]:
    """The funnel table of a card read back: per step, its rows in/out, removed and reasons."""
    lines = text.splitlines()
    start = lines.index(FUNNEL_HEADER) + 2
    steps = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        reasons = {}
        text_reasons = cells[6].split(";")[0]
        for part in re.findall(r"(.+?) \((\d+)\)(?:, |$)", text_reasons if text_reasons != "-" else ""):
            reasons[part[0].replace("\\|", "|")] = int(part[1])
        steps.append(
            {
                "step": cells[0],
                "op": cells[1],
                "kind": cells[2],
                "rows_in": int(cells[3]),
                "rows_out": int(cells[4]),
                "removed": int(cells[5]),
                "reasons": reasons,
            }
        )
    return steps


def _metrics(manifest: Manifest) -> list[str]:
    metrics = manifest.entry("dataset_metrics")  # the dataset_metrics observer's (operators/score)
    if not isinstance(metrics, dict):
        return []
    sides = [side for side in ("input", "output") if isinstance(metrics.get(side), dict)]
    names = [
        k
        for k in dict.fromkeys(
            k
            for side in sides
            for k, v in metrics[side].items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        )
    ]
    if not names:
        return []
    lines = [
        "## Quality, diversity and complexity metrics",
        "",
        "Measured by the run on its input and its output (`metrics:` in the recipe; samples as its settings say).",
        "",
        "| metric | " + " | ".join(sides) + " |",
        "|---|" + "---:|" * len(sides),
    ]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(_cell(metrics[side].get(name, "-")) for side in sides) + " |")
    return lines + [""]


def _env_references(value) -> list[str]:
    found = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", json.dumps(value))
    return sorted(set(found))


def card_text(
    run_dir,
    *,
    hub_paths: list[str] | None = None,
    repo_id: str | None = None,
    license: str | None = None,
    language: list[str] | None = None,
    task_categories: list[str] | None = None,
    pretty_name: str | None = None,
    settings: dict | None = None,
    manifest: Manifest | None = None,
) -> str:
    """README.md of the finished run in `run_dir`. `hub_paths`: the files as published to the Hub
    (repository paths; their data files are the config's data_files), else the run directory's
    own data/ files are. `settings`: output.hub as published (default: as the manifest's recipe
    has it). `manifest`: the run's manifest as it will be written (publishing writes the card
    before the manifest); default: RUN_DIR/manifest.json."""
    run_dir = Path(run_dir)
    manifest = manifest if manifest is not None else _manifest(run_dir)
    published = hub_paths is not None
    hub = settings if settings is not None else _hub_settings(manifest)
    split = hub.get("split") or "train"
    if hub_paths is not None:  # published
        data = [p for p in hub_paths if p.startswith("data/") and p.endswith(".parquet")]
        globs = [f"data/{split}-*.parquet"] if data else []
    else:
        data = [e.path for e in manifest.outputs if e.path.endswith(".parquet")]
        globs = ["data/*.parquet"] if data and manifest.format == "parquet" else []
    meta = front_matter(
        manifest,
        globs,
        license=license,
        language=language,
        task_categories=task_categories,
        pretty_name=pretty_name,
        settings=hub,
    )
    # a run directory's own card: its trace (one schema for every file) as a second config
    traced = not published and globs and any(s.removed for s in manifest.steps)
    if traced and meta["configs"][0]["config_name"] != "trace":
        meta["configs"].append(
            {"config_name": "trace", "data_files": [{"split": "train", "path": ["trace/*.parquet"]}]}
        )
    rows_in, rows_out, versions, run = manifest.rows_in, manifest.rows_out, manifest.versions, manifest.run
    body: list[str] = [f"# {meta['pretty_name']}", ""]
    kept = f" ({rows_out / rows_in:.1%} kept)" if rows_in else ""
    body += [
        f"{rows_out:,} rows curated from {rows_in:,} input rows{kept} by the "
        f"[curate](https://pypi.org/project/curate/) recipe `{manifest.name}` "
        f"(recipe fingerprint `{manifest.recipe_fingerprint}`, seed {manifest.seed}"
        + (f", first {manifest.limit:,} input rows only" if manifest.limit else "")
        + ").",
        "",
    ]
    body += ["## The data", ""]
    files = manifest.outputs
    size = sum(e.bytes for e in files)
    where = f"the `{meta['configs'][0]['config_name']}` config, split `{split}`" if globs else "no config"
    body += [
        f"{len(files)} {manifest.format} file{'s' if len(files) != 1 else ''} "
        f"({size / 1e6:,.1f} MB) in {where}" + (f": `{globs[0]}`." if globs else "."),
        "",
    ]
    if published and repo_id and globs:
        body += [
            "```python",
            "from datasets import load_dataset",
            "",
            f"ds = load_dataset({repo_id!r}"
            + (f", {meta['configs'][0]['config_name']!r}" if meta["configs"][0]["config_name"] != "default" else "")
            + f", split={split!r})",
            "```",
            "",
        ]
    columns = _columns(run_dir, manifest)
    if columns:
        body += ["| column | type |", "|---|---|"] + [f"| {_cell(n)} | {_cell(t)} |" for n, t in columns] + [""]
    if hub_paths is not None and any(p.startswith("trace/") for p in hub_paths):
        body += [
            "`trace/<step>.parquet` holds every removed row with its step, reason and detail "
            "(not part of the dataset's config).",
            "",
        ]
    elif traced:
        body += [
            "`trace/<step>.parquet` holds every removed row with its step, reason and detail: the "
            '`trace` config (`load_dataset(RUN_DIR, "trace")`).',
            "",
        ]
    body += (
        [
            "## How it was made",
            "",
            "Each step of the recipe in order: rows it received and passed on, rows it removed and why "
            "(rows in = rows out + removed, for every step).",
            "",
        ]
        + _funnel(manifest)
        + [""]
    )
    per_step, totals = _tokens(run_dir, manifest)
    if per_step or totals:
        body += ["## Tokens", ""]
        if totals.get("tokens"):
            body += [
                f"The output holds {int(totals['tokens']):,} tokens"
                + (f" in {int(totals['documents']):,} documents" if totals.get("documents") else "")
                + ".",
                "",
            ]
        if per_step:
            body += (
                [
                    "Tokens counted by steps of the recipe (in the rows each step saw):",
                    "",
                    "| step | tokens |",
                    "|---|---:|",
                ]
                + [f"| {_cell(s)} | {n:,} |" for s, n in per_step]
                + [""]
            )
    body += _metrics(manifest)
    recipe = _withheld(manifest.recipe)
    body += [
        "## Recipe",
        "",
        "As run (`${VAR}` references are the environment's, never expanded here):",
        "",
        "```yaml",
        yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True).rstrip(),
        "```",
        "",
    ]
    body += ["## Lineage", ""]
    inputs = [i.model_dump(mode="json", exclude_unset=True) for i in manifest.inputs]  # a column per field given
    if inputs:
        keys = [k for k in dict.fromkeys(k for i in inputs for k in i) if k != "path"]
        body += [
            f"{len(inputs)} input file{'s' if len(inputs) != 1 else ''}:",
            "",
            "| input | " + " | ".join(keys) + " |",
            "|---|" + "---|" * len(keys),
        ]
        body += [
            f"| {_cell(i.get('path'))} | " + " | ".join(_cell(i.get(k, "")) for k in keys) + " |" for i in inputs[:50]
        ]
        if len(inputs) > 50:
            body.append(f"| ... {len(inputs) - 50} more (manifest.json lists them all) |" + " |" * len(keys))
        body.append("")
    body += [
        f"- curate {versions.get('curate', '?')}, Python {versions.get('python', '?')}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items() if k not in ("curate", "python")),
        f"- run from {run.started_at} to {run.ended_at or '?'} ({manifest.seconds} s)",
        "- `manifest.json` beside the data holds all of this as JSON, with each step's seconds.",
        "",
    ]
    env = _env_references(manifest.recipe)
    body += [
        "## Reproduce",
        "",
        "With the same inputs (their sizes and dates above), save the recipe above as `recipe.yaml` and run:",
        "",
        "```bash",
        f"pip install 'curate=={versions.get('curate', '')}'",
    ]
    body += [f"export {name}=...  # the recipe reads it" for name in env]
    body += [
        "curate run recipe.yaml" + (f" --limit {manifest.limit}" if manifest.limit else ""),
        "```",
        "",
        f"Same inputs, recipe and seed give byte-identical data files; the run's fingerprint is "
        f"`{manifest.recipe_fingerprint}`.",
        "",
    ]
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{head}---\n\n" + "\n".join(body)


def check(text: str, paths: list[str]) -> None:
    """The card's front matter as the Hub wants it (offline): a mapping, a known size category,
    every config named, every data_files glob matching a published file. A CurateError else."""
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    meta = yaml.safe_load(m.group(1)) if m else None
    if not isinstance(meta, dict):
        raise CurateError("the dataset card's front matter is not a YAML mapping")
    known = {name for _, name in SIZE_CATEGORIES} | {"n>1T", "other"}
    if any(c not in known for c in meta.get("size_categories") or []):
        raise CurateError(f"the dataset card's size_categories {meta['size_categories']} are not the Hub's")
    for config in meta.get("configs") or []:
        if not config.get("config_name"):
            raise CurateError("a config of the dataset card has no config_name")
        for entry in config.get("data_files") or []:
            globs = entry["path"] if isinstance(entry["path"], list) else [entry["path"]]
            for glob in globs:
                if not any(fnmatch.fnmatchcase(p, glob) for p in paths):
                    raise CurateError(f"the dataset card's data_files {glob} match no published file")


def write_card(run_dir, target: Path | None = None, **flags) -> Path:
    """The card of the run in `run_dir` written to `target` (default RUN_DIR/README.md)."""
    run_dir = Path(run_dir)
    text = card_text(run_dir, **flags)
    target = Path(target) if target is not None else run_dir / "README.md"
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(target)
    return target
