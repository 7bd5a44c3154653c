"""sql_filter: keep the rows for which a duckdb SQL predicate is true (NULL counts as false)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from pydantic import Field, field_validator

from curate.errors import RecipeError
from curate.ops import Filter, Params, Verdict, loaded


class SqlFilterParams(Params):
    where: str = Field(description="A SQL boolean expression over the batch's columns, e.g. `quality_gopher_words > 100`.")
    reason: str = Field("sql_filter", description="Reason recorded in the trace for removed rows.")

    @field_validator("where")
    @classmethod
    def one_expression(cls, v: str) -> str:
        if ";" in v:
            raise ValueError("must be a single expression (no ';')")
        import duckdb

        try:  # syntax only: columns are not known before the data is read
            # A connection of its own: a result left on duckdb's shared default connection makes
            # the next user of it (the lake's reader, say) fail with "unfinished result".
            with duckdb.connect() as con:
                con.execute("SELECT 1 FROM (SELECT 1) t WHERE false AND (" + v + ")").fetchall()
        except duckdb.ParserException as e:
            raise ValueError(f"not a valid SQL expression: {e}") from None
        except duckdb.Error:
            pass  # unknown columns etc.: checked against the data
        return v


class SqlFilter(Filter):
    """Keep rows where a duckdb SQL predicate is true (NULL counts as false)."""

    name = "sql_filter"
    Params = SqlFilterParams

    @loaded
    def con(self):
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads=1")
        return con

    def check_schema(self, schema: pa.Schema) -> None:
        """Bind the predicate to the columns it will see, on an empty table of their types: a
        misspelt column or function, or a comparison of the wrong types, fails here, not in a worker."""
        import duckdb

        con = duckdb.connect()
        con.register("batch", schema.empty_table())
        try:
            con.sql(f"SELECT * FROM batch WHERE ({self.params.where})").fetchall()
        except duckdb.Error as e:
            raise RecipeError("where", " ".join(str(e).split())) from None
        finally:
            con.close()

    def columns_read(self) -> tuple[str, ...]:
        """The names the predicate refers to, from duckdb's parse tree (each part of a qualified
        name `a.b`: a column, or a struct column and its field)."""
        import duckdb

        with duckdb.connect() as con:  # not the shared default connection (see one_expression)
            tree = json.loads(con.execute("SELECT json_serialize_sql(?)",
                                          [f"SELECT * FROM batch WHERE ({self.params.where})"]).fetchone()[0])
        names: list[str] = []

        def walk(node) -> None:
            if isinstance(node, dict):
                if node.get("class") == "COLUMN_REF":
                    names.extend(n for n in node["column_names"] if n not in names)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(tree)
        return tuple(names)

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        from curate.errors import CurateError

        import duckdb

        # Select the positions of kept rows: correct whatever order duckdb returns them in.
        numbered = batch.append_column("__row", pa.array(np.arange(batch.num_rows, dtype=np.int64)))
        self.con.register("batch", numbered)
        try:
            rows = self.con.sql(f"SELECT __row FROM batch WHERE ({self.params.where})").to_arrow_table()
        except duckdb.Error as e:
            raise CurateError(f"sql_filter where={self.params.where!r}: {e}") from None
        finally:
            self.con.unregister("batch")
        keep = np.zeros(batch.num_rows, dtype=bool)
        keep[rows.column(0).to_numpy()] = True
        return Verdict(keep, self.params.reason, f"not ({self.params.where})")
