"""Checks made before any worker starts, so a run does not fail on them halfway.

Loading a recipe already checked its operators and parameter values. `check` adds what needs
the file system and the input: the models, tokenizers and other local files the steps name
exist (curate/paths.py); the output path can be a directory and is not inside a directory
the input is read from; the input files are found (a glob matching nothing names itself), the
first batch of the input is read for its schema, and the steps are walked in order: each step's
`requires` must be among the columns the input and the steps before it give, and each operator
checks its parameters against those columns and their types (`sql_filter` binds its SQL with
duckdb). Then every other input file's schema is read cheaply (readers.file_schema): the
columns the steps read from the input must be there with the same kind of type as in the first
file, and every Parquet footer must be readable, each failure naming its file.

Later input files may have other columns besides (JSONL schemas are per file); the workers still
check each task's first batch. The CLI calls this for `validate`, `run --dry-run` and `run`; an
engine called from Python can call it too.
"""

from __future__ import annotations

import functools
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from curate.engine.steps import check_columns
from curate.errors import CurateError, InputError, RecipeError
from curate.io import output_formats
from curate.io.readers import file_schema, read_source
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


def inputs(recipe: Recipe) -> list[Source]:
    """The input files in run order; InputError when nothing matches."""
    spec = recipe.input
    return discover(spec.path, spec.format, spec.split, spec.storage_options)


def first_schema(sources: list[Source], recipe: Recipe) -> tuple[Source | None, pa.Schema | None]:
    """The schema of the input's first batch, as the workers will see it (`_id` and hive
    partition columns added), and its source. Reads one batch, or more only past empty files."""
    spec = recipe.input
    for source in sources:
        with closing(read_source(source, id_column=spec.id_column, batch_rows=spec.batch_rows,
                                 on_bad_row=spec.on_bad_row, raw_column=spec.raw_column, peek=True)) as chunks:
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
            raise RecipeError(setting, f"no column {column!r} in {where} nor made by a step; columns are: "
                                       f"{', '.join(seen)}")


def check_paths(recipe: Recipe) -> None:
    """Every local file a step's parameters name (a model, tokenizer, checkpoint, list) exists:
    else the workers would fail on it only once they load it."""
    for step in recipe.steps:
        for where, message in missing_paths(step.params):
            raise RecipeError(f"steps[{step.index - 1}].{step.name}.{where}", message)


def check_output(recipe: Recipe) -> None:
    """The output path can be a run directory (no file is in the way), and it is not inside a
    directory the input is read from, where it would be mixed with the data it came from. A URI
    must name a filesystem curate can open (its package installed); the store itself is first
    asked when the run takes its lock."""
    if is_uri(recipe.output.path):
        try:
            output_formats.remote_fs(recipe.output.path, "output.path", recipe.output.storage_options)
        except CurateError as e:
            raise RecipeError("", str(e)) from None
        return
    out = Path(recipe.output.path)
    for place in (out, *out.parents):
        if place.exists() and not place.is_dir():
            raise RecipeError("output.path", f"{out} is an existing file; the output is a directory (data/, "
                                             f"trace/, manifest.json): choose another path" if place == out else
                                             f"{out}: {place} is a file, so no directory can be made there")
    for spec, directory in searched_directories(recipe.input.path):
        if out.resolve().is_relative_to(directory.resolve()):
            raise RecipeError("output.path", f"{out} is inside {directory}, which the input ({spec}) is read "
                                             f"from: write the output outside it")


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
    kinds = (("text", (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)),
             ("binary", (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary,
                         pa.types.is_binary_view)),
             ("number", (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)),
             ("boolean", (pa.types.is_boolean,)),
             ("time", (pa.types.is_temporal,)),
             ("struct", (pa.types.is_struct,)))
    return next((kind for kind, tests in kinds if any(test(t) for test in tests)), str(t))


def check_input_files(recipe: Recipe, sources: list[Source], first: Source, schema: pa.Schema) -> dict[Source, int]:
    """Every input file besides `first` gives the columns the steps read from the input (a file
    whose schema is its own: Parquet, Arrow, CSV), with the kind of type `first` gives them;
    else a task would stop mid-run on an operator's message that cannot name the file. Parquet
    footers (and Arrow stream headers) are read even when no column is compared: a damaged one
    is found here, not in the middle of the run. Returns the rows the footers read told."""
    read = input_columns_read(recipe, schema)
    others = [s for s in sources if s.path != first.path and (read or s.format in ("parquet", "arrow_stream"))]
    told: dict[Source, int] = {}
    headers = map_objects(functools.partial(file_schema, raw_column=recipe.input.raw_column), others,
                          any(s.is_uri for s in others))
    for source, (other, rows) in zip(others, headers):
        if rows is not None:
            told[source] = rows
        for column, step in read.items() if other is not None else ():
            if column not in other.names:
                if source.format != "jsonl":  # a JSONL peek sees the fields of the file's first rows only
                    raise InputError(f"{source.path}: no column '{column}', which {step} reads (the first "
                                     f"input file, {first.path}, has it)")
                continue
            want, got = schema.field(column).type, other.field(column).type
            if None not in (type_kind(want), type_kind(got)) and type_kind(want) != type_kind(got):
                raise InputError(f"{source.path}: column '{column}' is {got}, but {want} in the first input "
                                 f"file ({first.path}), and {step} reads it; every input file must give it "
                                 f"the same type")
    # What the reads freed goes back to the system: Arrow's allocator would keep it for the whole
    # run (36 of the 74 MB that peeking 69 objects of S3, 32 at once, added to the run process)
    pa.default_memory_pool().release_unused()
    return told


def check(recipe: Recipe, sources: list[Source] | None = None) -> Preflight:
    """Everything a run can know to refuse before it starts; raises CurateError naming the place."""
    check_paths(recipe)
    check_output(recipe)
    sources = inputs(recipe) if sources is None else sources
    first, schema = first_schema(sources, recipe)
    rows = {}
    if schema is not None:
        check_steps(recipe, schema, first.path)
        rows = check_input_files(recipe, sources, first, schema)
        for step in recipe.steps:  # endpoints, keys: after the cheap checks, before any row
            step.build(recipe).preflight()
    return Preflight(sources, schema, first, rows)
