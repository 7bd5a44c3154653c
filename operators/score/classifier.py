"""classifier_score: a quality score from any sequence-classification model (e.g. FineWeb-Edu's).

A one-output (regression) head writes its output as is (FineWeb-Edu's classifier gives an
educational value of about 0..5); a head with several labels writes the probability of
`label` (a name from the model's config, or an index; default: the last label). A text the
tokenizer makes no tokens of has a null score.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put, text_values, with_nulls
from curate.ops import Map, Resources, loaded, reads_column, writes_column
from curate_operators.score.model_params import ModelScoreParams, scorer


class ClassifierParams(ModelScoreParams):
    column: str | None = reads_column(None, "The text to classify; default: the recipe's text column.",
                                      instead_of_text=True)
    label: str | int | None = Field(None, description="Several-label heads: the label whose probability is the "
                                                      "score (name or index); default: the last.")
    output_column: str = writes_column("quality_classifier", "Where the score goes.", min_length=1)


class ClassifierScore(Map):
    """A sequence-classification model's score (regression output, or one label's probability)."""

    name = "classifier_score"
    Params = ClassifierParams
    resources = Resources(cpus=1.0, pool="model")

    model = scorer("Classifier")

    @loaded
    def index(self) -> int:
        """The scored label's position among the model's outputs."""
        from curate.errors import CurateError

        p = self.params
        names = {str(v): int(k) for k, v in (self.model.model.config.id2label or {}).items()}
        if p.label is None:
            index = self.model.labels - 1
        elif isinstance(p.label, int) or str(p.label).isdigit():
            index = int(p.label)
        elif p.label in names:
            index = names[p.label]
        else:
            raise CurateError(f"{self.name}: label '{p.label}' is not one of the model's labels "
                              f"({', '.join(names) or 'none named'})")
        if not 0 <= index < self.model.labels:
            raise CurateError(f"{self.name}: label index {index} is out of range (the model has "
                              f"{self.model.labels} labels)")
        return index

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        texts = text_values(batch, self.params.column or self.text_column, self.name)
        logits = self.model.logits(texts).astype(np.float64)
        if self.model.labels == 1:
            score = logits[:, 0]
        else:
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            score = (p / p.sum(axis=1, keepdims=True))[:, self.index]
        return put(batch, self.params.output_column, with_nulls(np.nan_to_num(score), np.isfinite(score)))
