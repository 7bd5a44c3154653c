"""Text columns: comparing a CSV column with a typed column, or with another CSV column.

A CSV file declares no types, and what a reader infers from its text differs from what the
table it was extracted from declares (a timestamp column pandas wrote as bare dates, a
string column of digits, an integer column with NULLs written as 12.0). So the lake keeps
CSV columns as text (type family TEXT) and gives them a type per column pair: the text is
read as the typed column's type, or, for two text columns, as the most specific type both
parse as. The canonical values compared are then:

- a value of the type, parsed only from its strict text forms: no leading zeros or
  padding for numbers (a zip code "01234" is not the integer 1234), true/false in any case
  for booleans (0/1 is a number), ISO-8601 dates and times, with an offset exactly when the
  column holds instants, and no more fractional digits than the column's unit holds unless
  they are zeros (so nothing is rounded or cut to make two values equal);
- NULL for an empty field, and on the other side of such a pair for NaN and for the empty
  string: a CSV field cannot tell them apart (pandas writes all three as nothing).

Text that does not parse is compared as itself (a second, "unparsed" value next to the
parsed one), so it can only ever equal the same text: containment never rests on a cast
that failed, whatever the statistics said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .reader import quote_str

if TYPE_CHECKING:
    from .stats import ColumnStats

TEXT = "text"  # the type family of every CSV column
TZ = "timestamp_tz"  # text with an offset: an instant, comparable with timestamps of any time zone

_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"


def _clock(digits: int) -> str:
    # Digits past the unit are allowed only as zeros: "10:00:00.500000000" is exact in us.
    return rf"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{{1,{digits}}}0*)?)?"


def _form(family: str, digits: int) -> str:
    """The strict text forms of a family, as an RE2 pattern for a full match."""
    if family == "bool":
        return "(?i:true|false)"
    if family == "int":
        return r"[+-]?(0|[1-9][0-9]*)(\.0+)?"  # 12.0: pandas writes integers with NULLs as floats
    if family == "float":
        return r"[+-]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|(?i:nan)|[+-]?(?i:inf|infinity)"
    if family == "date":
        return _DATE
    if family == "time":
        return _clock(digits)
    if family == "timestamp":
        return rf"{_DATE}([T ]{_clock(digits)})?"  # pandas writes a column of midnights as dates
    if family == TZ:
        return rf"{_DATE}[T ]{_clock(digits)}(Z|[+-][0-9]{{2}}(:?[0-9]{{2}})?)"
    raise ValueError(family)


# The families a text column may be read as, most specific first (the order two text
# columns pick their common one in). Every text column can be read as a string.
TEXT_FAMILIES = ("bool", "int", "float", "date", "time", "timestamp", TZ)
_SQL_TYPE = {
    "bool": "BOOLEAN",
    "int": "BIGINT",
    "float": "DOUBLE",
    "date": "DATE",
    "time": "TIME",
    "timestamp": "TIMESTAMP",
    TZ: "TIMESTAMPTZ",
}
# Statistics accept nanosecond text for every timestamp column; a pair that reads it as
# microseconds then leaves such values unparsed (so unequal), never rounded.
STATS_DIGITS = 9


@dataclass(frozen=True)
class Comparison:
    """How one column pair is compared: in `family` (a TEXT_FAMILIES member or "string"
    when a side is text); text read as `sql_type`, with at most `digits` fractional-second
    digits (trailing zeros aside)."""

    family: str
    sql_type: str = ""
    digits: int = 0
    b_text: bool = False
    a_text: bool = False

    @property
    def reconciled(self) -> bool:
        """Whether a side is text: then both sides are compared on canonical values."""
        return self.b_text or self.a_text


def parsed_sql(col: str, family: str, sql_type: str | None = None, digits: int = STATS_DIGITS) -> str:
    """SQL: the text column `col` read as `family` (NULL where it does not parse; NaN kept)."""
    pattern = quote_str(f"(?:{_form(family, digits)})")
    return f"TRY_CAST(CASE WHEN regexp_full_match({col}, {pattern}) THEN {col} END AS {sql_type or _SQL_TYPE[family]})"


def canonical_sql(value: str, family: str) -> str:
    """SQL: NaN and the empty string become NULL, as an empty CSV field is."""
    if family == "float":
        return f"CASE WHEN isnan({value}) THEN NULL ELSE {value} END"
    if family == "string":
        return f"NULLIF({value}, '')"
    return value


def side_sql(col: str, c: Comparison | None, text: bool) -> list[str]:
    """SQL expressions one side of a column pair is compared on, as many on both sides:
    [the column] for two typed columns (c None), else [canonical value, unparsed text or NULL]."""
    if c is None:
        return [col]
    if not text or c.family == "string":
        return [canonical_sql(col, c.family), "NULL::VARCHAR"]
    parsed = parsed_sql(col, c.family, c.sql_type, c.digits)
    return [canonical_sql(parsed, c.family), f"CASE WHEN {col} <> '' AND {parsed} IS NULL THEN {col} END"]


def pair_sql(b_col: str, a_col: str, how: Comparison | None) -> list[tuple[str, str]]:
    """(B's expression, A's expression) pairs that must all be equal for a column pair to match."""
    return list(zip(side_sql(b_col, how, how is not None and how.b_text), side_sql(a_col, how, how is not None and how.a_text)))


def read_as(family: str, arrow_type: str, b_text: bool = False, a_text: bool = False) -> Comparison | None:
    """Text read as a typed column of `family` (its Arrow type as text); None when no text
    form is read as that family (binary, decimal, nested)."""
    if family == "string":
        return Comparison("string", "VARCHAR", 0, b_text, a_text)
    text_family = TZ if family.startswith("timestamp[") else family
    if text_family not in TEXT_FAMILIES:
        return None
    ns = "[ns" in arrow_type and text_family in ("timestamp", TZ)
    sql_type = _SQL_TYPE[text_family] + ("_NS" if ns else "")
    if arrow_type in ("float", "halffloat"):
        sql_type = "FLOAT"  # read at the column's own precision, as a reader given its type would
    return Comparison(text_family, sql_type, 9 if ns else 6, b_text, a_text)


def readable_as(parses: dict, family: str) -> bool:
    """Whether a text column whose text parses as `parses` can be read as a typed `family`."""
    return family == "string" or (TZ if family.startswith("timestamp[") else family) in parses


def comparison(b: ColumnStats, a: ColumnStats) -> Comparison | None:
    """How B's column compares with A's of the same name; None when it cannot."""
    b_text, a_text = b.family == TEXT, a.family == TEXT
    if not b_text and not a_text:
        return Comparison(b.family) if b.family == a.family else None
    if b_text and a_text:
        common = [f for f in TEXT_FAMILIES if f in b.parses and f in a.parses]
        family = common[0] if common else "string"
        return Comparison(family, _SQL_TYPE.get(family, "VARCHAR"), 6, True, True)
    typed, text = (a, b) if b_text else (b, a)
    if not readable_as(text.parses, typed.family):
        return None  # some of the text is not of the typed column's family
    return read_as(typed.family, typed.type, b_text, a_text)
