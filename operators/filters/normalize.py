"""normalize_text: Unicode normalization, whitespace cleanup, lowercasing, control-character removal.

Every step is one pyarrow.compute kernel over the whole column (no per-row Python), applied
in this order: control characters, Unicode form, whitespace, case. Nulls stay null.
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curate.columns import text_array
from curate.ops import TEXT, Map, Params

# Category Cc except tab, line feed and carriage return (those are whitespace, handled below).
_CONTROL = r"[\x{00}-\x{08}\x{0B}\x{0C}\x{0E}-\x{1F}\x{7F}-\x{9F}]"
# Horizontal whitespace: tab, vertical tab, form feed and every Unicode space separator (Zs).
# A run of two or more, or a single one that is not a plain space, becomes one space; matching
# every lone space too would rewrite every word boundary and be ten times slower.
_HSPACE_RUN = (r"[\t\x{0B}\x{0C}\p{Zs}]{2,}"
               r"|[\t\x{0B}\x{0C}\x{A0}\x{1680}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]")


class NormalizeTextParams(Params):
    unicode_form: Literal["NFC", "NFKC", "NFD", "NFKD"] | None = Field(
        "NFC", description="Unicode normalization form; NFKC also folds compatibility characters "
                           "(full-width letters, ligatures, no-break spaces); null: leave as is.")
    whitespace: bool = Field(
        True, description="Normalize whitespace but keep line structure: CRLF and CR become LF, runs of spaces, "
                          "tabs and other horizontal spaces become one space, spaces at line ends are removed, "
                          "3 or more newlines become 2, and the text is trimmed at both ends.")
    lowercase: bool = Field(False, description="Lowercase the text (Unicode-aware).")
    remove_control: bool = Field(
        False, description="Remove control characters (Unicode category Cc) other than tab, newline and CR.")


class NormalizeText(Map):
    """Unicode normalization and whitespace cleanup of the text column (in place; nothing else changes)."""

    name = "normalize_text"
    Params = NormalizeTextParams
    requires = provides = (TEXT,)

    def normalize(self, text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        p = self.params
        if p.remove_control:
            text = pc.replace_substring_regex(text, _CONTROL, "")
        if p.unicode_form:
            text = pc.utf8_normalize(text, p.unicode_form)
        if p.whitespace:
            text = pc.replace_substring_regex(text, r"\r\n?", "\n")
            text = pc.replace_substring_regex(text, _HSPACE_RUN, " ")
            text = pc.replace_substring_regex(text, r" \n", "\n")  # one space left per line end
            text = pc.replace_substring_regex(text, r"\n{3,}", "\n\n")
            text = pc.utf8_trim_whitespace(text)
        if p.lowercase:
            text = pc.utf8_lower(text)
        return text

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        normalized = self.normalize(text_array(batch, self.text_column, self.name))
        at = batch.schema.get_field_index(self.text_column)
        # The field keeps its nullability and metadata: only the values change.
        return batch.set_column(at, batch.schema.field(at).with_type(normalized.type), normalized)
