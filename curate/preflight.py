"""Checks made before any worker starts, so a run does not fail on them halfway.

Loading a recipe already checked its operators and parameter values. `check` adds what needs
the input: the input files are found (a glob matching nothing names itself), the first batch
of the input is read for its schema, and the steps are walked in order: each step's `requires`
must be among the columns the input and the steps before it give, and each operator checks its
parameters against those columns and their types (`sql_filter` binds its SQL with duckdb).

Later input files may have other columns (JSONL schemas are per file); the workers still check
each task's first batch. The CLI calls this for `validate`, `run --dry-run` and `run`; an engine
called from Python can call it too.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass

import pyarrow as pa

from curate.engine.steps import check_columns
from curate.errors import RecipeError
from curate.io.readers import read_source
from curate.io.sources import Source, discover
from curate.recipe import Recipe


@dataclass(frozen=True)
class Preflight:
    sources: list[Source]
    schema: pa.Schema | None  # of the input's first batch (with `_id`); None when the input has no rows
    first: Source | None  # where that batch came from


def inputs(recipe: Recipe) -> list[Source]:
    """The input files in run order; InputError when nothing matches."""
    spec = recipe.input
    return discover(spec.path, spec.format, spec.split)


def first_schema(sources: list[Source], recipe: Recipe) -> tuple[Source | None, pa.Schema | None]:
    """The schema of the input's first batch, as the workers will see it (`_id` and hive
    partition columns added), and its source. Reads one batch, or more only past empty files."""
    spec = recipe.input
    for source in sources:
        with closing(read_source(source, id_column=spec.id_column, batch_rows=spec.batch_rows,
                                 on_bad_row=spec.on_bad_row)) as chunks:
            for batch, _ in chunks:
                if batch is not None and batch.num_rows:
                    return source, batch.schema
    return None, None


def check_steps(recipe: Recipe, schema: pa.Schema, where: str) -> None:
    """Walk the steps over `schema` (from `where`): columns each needs, and each one's own check."""
    place = where
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


def check(recipe: Recipe, sources: list[Source] | None = None) -> Preflight:
    """Everything a run can know to refuse before it starts; raises CurateError naming the place."""
    sources = inputs(recipe) if sources is None else sources
    first, schema = first_schema(sources, recipe)
    if schema is not None:
        check_steps(recipe, schema, first.path)
        for step in recipe.steps:  # endpoints, keys: after the cheap checks, before any row
            step.build(recipe).preflight()
    return Preflight(sources, schema, first)
