"""language_id: the language of each text and the classifier's confidence, optionally a filter on them.

Backends: `langid` (py3langid, whose model ships in the package: nothing to download) and
`fasttext` with a model file the user supplies (e.g. lid.176.bin, as FineWeb and datatrove use;
`pip install fasttext-numpy2-wheel`). Both give the top language and its probability.

With `languages` set, rows in other languages go to the trace (reason `language_not_allowed`);
with `min_score`, rows whose top language scores below its bound go (`language_low_score`). A
bound per language is a map, with `default` for the others: `{en: 0.65, default: 0.5}`.
Without either the step only annotates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field, ValidationInfo, field_validator, model_validator

from curate.columns import put, text_values
from curate.errors import CurateError, RecipeError
from curate.ops import TEXT, Map, Params, Result, Verdict, loaded, writes_column
from curate.paths import local_path
from curate_operators.filters.language_codes import unknown_code_message


class LanguageIdParams(Params):
    backend: Literal["langid", "fasttext"] = Field("langid", description="py3langid (model shipped) or fastText.")
    model_path: str | None = local_path(None, hub=False, description="fastText: the model file (e.g. lid.176.bin).")
    languages: list[str] | None = Field(None, description="Keep only rows in these languages (ISO 639 codes as the "
                                                          "model names them: en, de, zh, yue); null: keep every "
                                                          "language. A code the model never gives is an error.")
    min_score: float | dict[str, float] = Field(
        0.0, description="Smallest confidence of the top language to keep a row: one bound, or a map language -> "
                         "bound with `default` for the rest.")
    candidates: list[str] | None = Field(None, description="langid: restrict the classifier to these languages.")
    max_chars: int | None = Field(None, ge=1, description="Classify only this many leading characters (faster).")
    language_column: str = writes_column("language", "Column for the language code.")
    score_column: str = writes_column("language_score", "Column for its confidence (0..1).")

    @field_validator("languages", "candidates", "min_score")
    @classmethod
    def _codes_the_model_gives(cls, value, info: ValidationInfo):
        """A code the backend's model never gives would remove every row (or apply no bound)."""
        codes = value if isinstance(value, list) else []  # languages, candidates
        if isinstance(value, dict):  # min_score per language (a single bound names none)
            codes = [c for c in value if c != "default"]
        for code in codes:
            problem = unknown_code_message(code, info.data.get("backend", "langid"))
            if problem:
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _model_for_fasttext(self) -> "LanguageIdParams":
        if self.backend == "fasttext" and not self.model_path:
            raise ValueError("backend fasttext needs model_path (a fastText language-ID model such as lid.176.bin)")
        if self.candidates and self.backend != "langid":
            raise ValueError("candidates restricts the langid backend only")
        bounds = self.min_score.values() if isinstance(self.min_score, dict) else [self.min_score]
        if any(not 0 <= b <= 1 for b in bounds):
            raise ValueError("min_score bounds must be between 0 and 1")
        return self


class LanguageId(Map):
    """Adds the language and its confidence; drops rows outside `languages` or under `min_score`."""

    name = "language_id"
    Params = LanguageIdParams
    requires = (TEXT,)
    def packages(self) -> tuple[str, ...]:
        return ("py3langid",) if self.params.backend == "langid" else ("fasttext",)

    @loaded
    def classify(self) -> Callable[[list[str]], list[tuple[str, float]]]:
        """texts -> [(language, score)]."""
        p = self.params
        if p.backend == "langid":
            try:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier
            except ImportError:
                raise CurateError("language_id: backend langid needs py3langid (pip install 'curate[web]')") from None
            model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            if p.candidates:
                unknown = sorted(set(p.candidates) - set(model.nb_classes))
                if unknown:
                    raise RecipeError("candidates", f"language_id: py3langid does not know {unknown}")
                model.set_languages(p.candidates)
            return lambda texts: [model.classify(t) for t in texts]
        return _fasttext(Path(p.model_path))

    def process(self, batch: pa.RecordBatch):
        p = self.params
        texts = text_values(batch, self.text_column, self.name)
        if p.max_chars:
            texts = [t[:p.max_chars] for t in texts]
        found = self.classify(texts)
        languages = [lang for lang, _ in found]
        scores = np.array([score for _, score in found], np.float64)
        batch = put(put(batch, p.language_column, languages, pa.string()), p.score_column, scores)
        if p.languages is None and p.min_score in (0, 0.0, {}):
            return batch
        allowed = np.array([p.languages is None or lang in p.languages for lang in languages], bool)
        bound = p.min_score
        bounds = np.array([bound.get(lang, bound.get("default", 0.0)) if isinstance(bound, dict) else bound
                           for lang in languages], np.float64)
        confident = scores >= bounds
        reasons = np.where(~allowed, "language_not_allowed", np.where(~confident, "language_low_score", None))
        details = [None if a and c else f"language={lang} score={s:.3f}" + ("" if c else f" < {b:g}")
                   for lang, s, b, a, c in zip(languages, scores, bounds, allowed, confident)]
        return Result(batch, Verdict(allowed & confident, pa.array(reasons.tolist(), pa.string()),
                                     pa.array(details, pa.string())))


def _fasttext(path: Path):
    """A batch classifier over a fastText model: its labels without `__label__`, and probabilities."""
    try:
        import fasttext
    except ImportError:
        raise CurateError("language_id: backend fasttext needs the fasttext package "
                          "(pip install fasttext-numpy2-wheel)") from None
    if not path.is_file():
        raise RecipeError("model_path", f"language_id: fastText model {path} does not exist")
    model = fasttext.load_model(str(path))

    def classify(texts: list[str]) -> list[tuple[str, float]]:
        # fastText predicts one line per text: newlines would split it.
        labels, probs = model.predict([t.replace("\n", " ") for t in texts], k=1)
        return [(lab[0].removeprefix("__label__") if lab else "", float(min(1.0, pr[0])) if len(pr) else 0.0)
                for lab, pr in zip(labels, probs)]

    return classify
