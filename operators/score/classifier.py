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
from curate.ops import Map, Resources, reads_column, writes_column
from curate_operators.score.model_params import ModelScoreParams


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
    resource_class = "model"
    resources = Resources(cpus=1.0)
    model = None  # from setup
    index = None  # of the label scored, from setup

    def setup(self) -> None:
        if self.model is not None:
            return
        from curate.errors import CurateError
        from curate_operators.score.lm import Classifier

        p = self.params
        self.model = Classifier(p.model, self.name, batch_size=p.batch_size, max_tokens=p.max_batch_tokens,
                                max_length=p.max_length, device=p.device, precision=p.precision)
        names = {str(v): int(k) for k, v in (self.model.model.config.id2label or {}).items()}
        if p.label is None:
            self.index = self.model.labels - 1
        elif isinstance(p.label, int) or str(p.label).isdigit():
            self.index = int(p.label)
        elif p.label in names:
            self.index = names[p.label]
        else:
            raise CurateError(f"{self.name}: label '{p.label}' is not one of the model's labels "
                              f"({', '.join(names) or 'none named'})")
        if not 0 <= self.index < self.model.labels:
            raise CurateError(f"{self.name}: label index {self.index} is out of range (the model has "
                              f"{self.model.labels} labels)")

    def teardown(self) -> None:
        if self.model is not None:
            self.model.close()
            self.model = None

    def __getstate__(self):
        return {**self.__dict__, "model": None}

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self.setup()
        texts = text_values(batch, self.params.column or self.text_column, self.name)
        logits = self.model.logits(texts).astype(np.float64)
        if self.model.labels == 1:
            score = logits[:, 0]
        else:
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            score = (p / p.sum(axis=1, keepdims=True))[:, self.index]
        return put(batch, self.params.output_column, with_nulls(np.nan_to_num(score), np.isfinite(score)))
