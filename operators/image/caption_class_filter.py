"""caption_class_filter: DataComp's text-based filter (mlfoundations/datacomp apply_filter.py):
keep an English caption with at least one whitespace-separated word (`text.split()`) that names
a class of the user's list (the paper: ImageNet-21k's synsets).

The reference looks each word up in WordNet (`wordnet.synsets(word)[0]`, which lower-cases it and
reduces inflections: "dogs" finds dog) and keeps the caption when that first synset is in the
set. WordNet's database cannot be fetched here, so the classes are given by name, one per line
(a line may list synonyms separated by commas, as ImageNet's class lists do), and a word matches
a name when they are equal lower-cased: inflected forms match only when listed. Names of several
words are ignored, since a single caption word never equals them (nor, in the reference, does a
single word's first synset name such a class). English by `language_column` (a language_id
step with no `languages` writes it; DataComp: fastText lid.176). Trace reasons:
`caption_language`, `caption_no_class`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curate.errors import CurateError
from curate.ops import Filter, Params, Verdict, reads_column
from curate.paths import local_path


class CaptionClassFilterParams(Params):
    classes: str = local_path(hub=False, description="Class names, one per line (commas separate synonyms); "
                              "DataComp: the ImageNet-21k classes.")
    caption_column: str | None = reads_column(None, "The caption; default: the recipe's input.text_column.",
                                              instead_of_text=True)
    language_column: str | None = reads_column(None, "Keep only rows whose language here is `language` "
                                               "(a language_id step writes it).")
    language: str = Field("en", description="The language language_column must hold.")


def load_classes(path: str, step: str) -> pa.Array:
    """The distinct lower-cased one-word names of the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CurateError(f"{step}: classes {path}: cannot read it ({e})") from None
    names = {name.strip().lower() for line in text.splitlines() for name in line.split(",")}
    single = sorted(n for n in names if n and len(n.split()) == 1)
    if not single:
        raise CurateError(f"{step}: classes {path}: no one-word class name in it (one name per line)")
    return pa.array(single, pa.string())


def names_a_class(captions: pa.Array, classes: pa.Array) -> np.ndarray:
    """Per caption: does any word of `caption.split()`, lower-cased, equal a class name."""
    # Arrow's whitespace split splits where str.split() does (\x1c-\x1f included: the test's examples)
    words = pc.utf8_split_whitespace(pc.utf8_lower(captions.cast(pa.string())))
    flat = pc.list_flatten(words)
    hits = pc.is_in(flat, value_set=classes).to_numpy(zero_copy_only=False)
    owners = pc.list_parent_indices(words).to_numpy(zero_copy_only=False)
    return np.bincount(owners[hits], minlength=len(captions)) > 0


class CaptionClassFilter(Filter):
    """DataComp's text-based filter: English captions naming a class of a user-given list."""

    name = "caption_class_filter"
    Params = CaptionClassFilterParams
    _classes: pa.Array | None = None

    def setup(self) -> None:
        if self._classes is None:
            self._classes = load_classes(self.params.classes, self.name)

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        self.setup()
        p = self.params
        captions = batch.column(p.caption_column or self.text_column)
        keep = names_a_class(captions, self._classes)
        reasons = np.where(keep, None, "caption_no_class").astype(object)
        details = np.where(keep, None, "no word of the caption names a class").astype(object)
        if p.language_column:
            found = batch.column(p.language_column).cast(pa.string()).to_pylist()
            other = np.array([code != p.language for code in found], dtype=bool)
            reasons[other] = "caption_language"
            details[other] = [f"language {found[i]} is not {p.language}" for i in np.flatnonzero(other)]
            keep &= ~other
        return Verdict(keep, list(reasons), list(details))
