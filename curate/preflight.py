"""Checks made before any worker starts, so a run does not fail on them halfway.

Loading a recipe already checked its operators and parameter values. `check` adds what needs
the file system and the input: the models, tokenizers and other local files the steps name
exist (curate/paths.py); the output path can be a directory and is not inside a directory
the input is read from; the input files are found (a glob matching nothing names itself), the
schema of every input file is read (a Parquet footer; a JSONL, CSV or WebDataset file whole) and
merged into the input's schema (curate/io/input_schema.py), which every task reads in: the
columns the steps read must have the same kind of type in every file, a file with a header
(Parquet, Arrow, CSV) must have them, a damaged footer, a truncated archive or a CSV quote left
open is found here, each failure naming its file. Then the first batch is read in that schema
and the steps are walked in order: each step's `requires` must be among the columns the input
and the steps before it give, and each operator checks its parameters against those columns
and their types (`sql_filter` binds its SQL with duckdb). The CLI calls this for `validate`,
`run --dry-run` and `run`; an engine called from Python can call it too.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from curate.engine.tasks.steps import check_columns
from curate.errors import CurateError, InputError, RecipeError, running_as
from curate.io import input_schema, output_formats
from curate.io.readers import EMPTY_FAILS, is_empty_file, read_source, scan_schema
from curate.io.sources import Source, discover, searched_directories
from curate.io.store import is_uri, map_objects
from curate.paths import missing_paths
from curate.recipe import Recipe


@dataclass(frozen=True)
class Preflight:
    sources: list[Source]
    schema: pa.Schema | None  # of the input's first batch (with `_id`); None when the input has no rows
    first: Source | None  # where that batch came from
    # the rows of the input files whose footers the checks read (Parquet), for the progress bars
    rows: dict[Source, int] = field(default_factory=dict)
    # the input's schema, decided from every file (curate/io/input_schema.py); None for raw_column
    decided: pa.Schema | None = None


def inputs(recipe: Recipe) -> list[Source]:
    """The input files in run order; InputError when nothing matches."""
    spec = recipe.input
    return discover(spec.path, spec.format, spec.split, spec.storage_options)


SCANS_AT_ONCE = 4


def scan(recipe: Recipe, sources: list[Source]) -> list[tuple[pa.Schema | None, int | None]]:
    """Every input file's whole schema (readers.scan_schema), in order: a JSONL, CSV or
    WebDataset file read whole, several at once (threads: the parsers release the GIL)."""
    spec = recipe.input
    empty = [s for s in sources if not s.is_uri and is_empty_file(s)]  # a store's objects: at their read
    if empty and (spec.on_bad_row == "fail" or len(empty) == len(sources)):
        others = f" (and so are the other {len(empty) - 1} input files)" if len(empty) == len(sources) > 1 else ""
        why = f" ({EMPTY_FAILS})" if len(empty) < len(sources) else ""
        raise InputError(f"{empty[0].path}: the file is empty{others}{why}")
    fn = functools.partial(scan_schema, raw_column=spec.raw_column, on_truncated=spec.on_truncated)
    if len(sources) < 2:
        return [fn(s) for s in sources]
    if all(s.format in ("parquet", "arrow_stream") for s in sources) and any(s.is_uri for s in sources):
        return list(map_objects(fn, sources, True))  # footers: a request each, many at once
    # whole files: a few at once (each holds a block of its text and its parse)
    with ThreadPoolExecutor(min(SCANS_AT_ONCE, len(sources))) as pool:
        return list(pool.map(fn, sources))


def decide(recipe: Recipe, sources: list[Source], scanned: list[tuple[pa.Schema | None, int | None]]) -> pa.Schema:
    """The input's schema from every file's (input_schema.py). A column a step reads keeps the
    type of the first file that gives it (the steps are checked against it); a file that gives
    it another kind of type, in all its rows, is an InputError naming both files."""
    merged = input_schema.merge(schema for schema, _ in scanned)
    read = input_columns_read(recipe, merged)
    pinned: dict[str, tuple[pa.DataType, Source]] = {}
    for source, (schema, _) in zip(sources, scanned):
        for column in read:
            if schema is None:
                continue
            if column not in schema.names:  # in none of its rows (the file was read whole, or has a header)
                raise InputError(
                    f"{source.path}: no column '{column}', which {read[column]} reads (other input files have it)"
                )
            f = schema.field(column)
            if input_schema.mixed(f):  # values of several kinds: the first kind, each value checked as read
                if column not in pinned and (first_type := input_schema.first_type(f)) is not None:
                    pinned[column] = (first_type, source)
                continue
            if type_kind(f.type) is None:
                continue
            if column not in pinned:
                pinned[column] = (f.type, source)
                continue
            want, first = pinned[column]
            if type_kind(want) != type_kind(f.type):
                raise InputError(
                    f"{source.path}: column '{column}' is {f.type}, but {want} in the first input "
                    f"file ({first.path}), and {read[column]} reads it; every input file must give "
                    f"it the same type"
                )
    return input_schema.pin(merged, {column: type_ for column, (type_, _) in pinned.items()})


def first_schema(
    sources: list[Source], recipe: Recipe, decided: pa.Schema | None = None
) -> tuple[Source | None, pa.Schema | None]:
    """The schema of the input's first batch, as the workers will see it (`_id` and hive
    partition columns added), and its source. Reads one batch, or more only past empty files."""
    spec = recipe.input
    for source in sources:
        with closing(
            read_source(
                source,
                id_column=spec.id_column,
                batch_rows=spec.batch_rows,
                on_bad_row=spec.on_bad_row,
                raw_column=spec.raw_column,
                peek=True,
                schema=decided,
                on_truncated=spec.on_truncated,
                mime_types=spec.mime_types,
            )
        ) as chunks:
            for batch, _ in chunks:
                if batch is not None and batch.num_rows:
                    return source, batch.schema
    return None, None


def check_steps(recipe: Recipe, schema: pa.Schema, where: str) -> None:
    """Walk the steps over `schema` (from `where`): columns each needs, and each one's own check;
    then what the output format needs of the columns they leave (token ids for megatron, pack),
    and that the report's breakdowns name a column some row will have."""
    place = where
    seen = dict.fromkeys(schema.names)  # every column of the input or of a step's output, in order
    for step in recipe.steps:
        op = step.build(recipe)
        check_columns(schema.names, op, step, recipe.input.text_column, place)
        check_text_type(op, step, schema, place)
        try:
            op.check_schema(schema)
        except RecipeError as e:
            at = f"steps[{step.index - 1}].{step.name}"
            raise RecipeError(f"{at}.{e.where}" if e.where else at, e.message) from None
        after = op.output_schema(schema)
        if after.names != schema.names:  # say which step left the columns a later step lacks
            place = f"{where}, after steps[{step.index - 1}].{step.name}"
        schema = after
        seen.update(dict.fromkeys(schema.names))
    output_formats.check_tokens(recipe.output, schema)
    for setting, column in recipe.report.columns():
        if column not in seen:
            raise RecipeError(
                setting, f"no column {column!r} in {where} nor made by a step; columns are: {', '.join(seen)}"
            )


def check_text_type(op, step, schema: pa.Schema, where: str) -> None:
    """An operator that reads the text column as text (its class requires TEXT) gets a column of
    strings: its workers would refuse any other type ("must be text") once the run started."""
    from curate.ops import TEXT

    column = op.text_column
    if not any(c is TEXT for c in type(op).requires) or column not in schema.names:
        return
    f = schema.field(column)
    if input_schema.mixed(f) or type_kind(f.type) in (None, "text"):
        return
    raise InputError(
        f"{where}: steps[{step.index - 1}].{step.name}: column '{column}' must be text, it is "
        f"{f.type} (input.text_column names the column of text)"
    )


def check_paths(recipe: Recipe) -> None:
    """Every local file a step's parameters name (a model, tokenizer, checkpoint, list) exists,
    and every optional package a step imports in its workers is installed: else the workers
    would fail on it only once they load it."""
    from curate.extras import require

    for step in recipe.steps:
        for where, message in missing_paths(step.params):
            raise RecipeError(f"steps[{step.index - 1}].{step.name}.{where}", message)
        require(step.build(recipe).packages(), f"steps[{step.index - 1}].{step.name}")


def check_output(recipe: Recipe) -> None:
    """The output path can be a run directory (no file is in the way), and it is not inside a
    directory the input is read from, where it would be mixed with the data it came from. A URI
    must name a filesystem curate can open (its package installed); the store itself is first
    asked when the run takes its lock. The Hugging Face Hub (hf://datasets/ORG/NAME, its form
    checked with the recipe) is asked before the run starts (io/hub.py check)."""
    if recipe.output.path.startswith("hf://"):
        return
    if is_uri(recipe.output.path):
        try:
            output_formats.remote_fs(recipe.output.path, "output.path", recipe.output.storage_options)
        except CurateError as e:
            raise RecipeError("", str(e)) from None
        return
    out = Path(recipe.output.path)
    for place in (out, *out.parents):
        if place.exists() and not place.is_dir():
            raise RecipeError(
                "output.path",
                f"{out} is an existing file; the output is a directory (data/, "
                f"trace/, manifest.json): choose another path"
                if place == out
                else f"{out}: {place} is a file, so no directory can be made there",
            )
    unwritable(out)
    for spec, directory in searched_directories(recipe.input.path):
        if out.resolve().is_relative_to(directory.resolve()):
            raise RecipeError(
                "output.path",
                f"{out} is inside {directory}, which the input ({spec}) is read from: write the output outside it",
            )


def unwritable(out: Path) -> None:
    """The run directory `out`, or the nearest directory above it that exists (where the run
    makes it), must be writable by this user: a mode, an owner, an immutable directory or a
    read-only mount would otherwise stop the run at its first write."""
    import os

    place = next((p for p in (out, *out.parents) if p.exists()), None)
    if place is None or os.access(place, os.W_OK | os.X_OK):
        return
    try:
        read_only = bool(os.statvfs(place).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    why = "it is on a read-only file system" if read_only else "this user may not write in it"
    raise RecipeError(
        "output.path",
        f"{place} is not writable ({why}; running as {running_as()}), so the run "
        f"cannot {'write in' if place == out else 'make'} {out}: choose another "
        f"output (--output) or change its permissions",
    )


def input_columns_read(recipe: Recipe, schema: pa.Schema) -> dict[str, str]:
    """Columns of the input (`schema`, the first batch's) that the steps read, each with the
    first step reading it (`steps[i].name`); a column a step made or replaced before is not the
    input's any more. `_id` is the reader's own, a string in every file."""
    read: dict[str, str] = {}
    made: set[str] = set()
    for step in recipe.steps:
        op = step.build(recipe)
        for column in op.columns_read():
            if column in schema.names and column != "_id" and column not in made:
                read.setdefault(column, f"steps[{step.index - 1}].{step.name}")
        made.update(op.provides)
    return read


def type_kind(t: pa.DataType) -> str | None:
    """What a step may rely on of a column's type, the same whatever the file's width or
    encoding (int32 or double, string or large_string, dictionary-encoded or not); None for the
    null type, which says nothing (a column with no value in the rows looked at)."""
    if pa.types.is_dictionary(t):
        return type_kind(t.value_type)
    if pa.types.is_null(t):
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        inner = type_kind(t.value_type)
        size = f"[{t.list_size}]" if pa.types.is_fixed_size_list(t) else ""
        return None if inner is None else f"list{size} of {inner}"
    kinds = (
        ("text", (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)),
        (
            "binary",
            (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary, pa.types.is_binary_view),
        ),
        ("number", (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)),
        ("boolean", (pa.types.is_boolean,)),
        ("time", (pa.types.is_temporal,)),
        ("struct", (pa.types.is_struct,)),
    )
    return next((kind for kind, tests in kinds if any(test(t) for test in tests)), str(t))


def check(recipe: Recipe, sources: list[Source] | None = None) -> Preflight:
    """Everything a run can know to refuse before it starts; raises CurateError naming the place."""
    check_paths(recipe)
    check_output(recipe)
    sources = inputs(recipe) if sources is None else sources
    scanned = scan(recipe, sources)
    # What the reads freed goes back to the system: Arrow's allocator would keep it for the whole
    # run (36 of the 74 MB that peeking 69 objects of S3, 32 at once, added to the run process)
    pa.default_memory_pool().release_unused()
    rows = {source: n for source, (_, n) in zip(sources, scanned) if n is not None}
    decided = decide(recipe, sources, scanned) if recipe.input.raw_column is None else None
    first, schema = first_schema(sources, recipe, decided)
    if schema is not None:
        assert first is not None  # the schema is a source's
        check_steps(recipe, schema, first.path)
        for step in recipe.steps:  # endpoints, keys: after the cheap checks, before any row
            step.build(recipe).preflight()
    return Preflight(sources, schema, first, rows, decided)
