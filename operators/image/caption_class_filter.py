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
from pydantic import Field

from curate.errors import CurateError
from curate.ops import Filter, Params, Verdict, loaded, reads_column
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
    # Python's own split and lower, as the reference: Arrow's whitespace split takes an ASCII fast
    # path on ASCII-only batches that does not split where str.split() does (\x1c-\x1f), so its
    # answer for a caption could depend on the other captions of the batch. Captions are short.
    names = set(classes.to_pylist())
    return np.array([c is not None and any(w.lower() in names for w in c.split()) for c in captions.to_pylist()],
                    dtype=bool)


class CaptionClassFilter(Filter):
    """DataComp's text-based filter: English captions naming a class of a user-given list."""

    name = "caption_class_filter"
    Params = CaptionClassFilterParams
    @loaded
    def _classes(self) -> pa.Array:
        return load_classes(self.params.classes, self.name)

    def keep(self, batch: pa.RecordBatch) -> Verdict:
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
