"""perplexity: quality_perplexity under any causal LM, and IFD for instruction data.

Runs in the model worker pool (`resource_class = "model"`): `setup()` loads the model once per
worker. quality_perplexity = exp(mean negative log-likelihood per token) of the text column,
or of the response given the instruction when both columns are set. With both columns it also
writes complexity_ifd, the Instruction-Following Difficulty of Li et al. (2024):
PPL(response | instruction) / PPL(response): near or above 1 when the instruction does not help
predict the response. Rows with no scored token (empty text) get null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import Field, model_validator

from curate.ops import Map, Resources
from operators.score.columns import put, text, with_nulls
from operators.score.model_params import ModelScoreParams


class PerplexityParams(ModelScoreParams):
    instruction_column: str | None = Field(None, description="With response_column: score the response given "
                                                             "the instruction, and write complexity_ifd.")
    response_column: str | None = Field(None, description="See instruction_column.")
    output_column: str = Field("quality_perplexity", min_length=1, description="Where the perplexity goes.")

    @model_validator(mode="after")
    def _pair(self) -> "PerplexityParams":
        if (self.instruction_column is None) != (self.response_column is None):
            raise ValueError("instruction_column and response_column go together")
        return self


class Perplexity(Map):
    """Perplexity of each row under a causal LM (and IFD of instruction/response pairs)."""

    name = "perplexity"
    Params = PerplexityParams
    resource_class = "model"
    resources = Resources(cpus=1.0)

    def __init__(self, params=None, *, seed: int = 0, text_column: str = "text"):
        super().__init__(params, seed=seed, text_column=text_column)
        p = self.params
        self.pair = p.instruction_column is not None
        self.requires = (p.instruction_column, p.response_column) if self.pair else (text_column,)
        self.provides = (p.output_column,) + (("complexity_ifd",) if self.pair else ())
        self.lm = None

    def setup(self) -> None:
        if self.lm is None:
            from operators.score.lm import CausalLM

            p = self.params
            self.lm = CausalLM(p.model, self.name, batch_size=p.batch_size, max_tokens=p.max_batch_tokens,
                               max_length=p.max_length, device=p.device, precision=p.precision)

    def teardown(self) -> None:
        if self.lm is not None:
            self.lm.close()
            self.lm = None

    def __getstate__(self):  # a loaded model never travels between processes
        return {**self.__dict__, "lm": None}

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self.setup()
        p = self.params
        if not self.pair:
            nll = self.lm.mean_nll(text(batch, self.text_column, self.name).fill_null("").to_pylist())
            return put(batch, p.output_column, _ppl(nll))
        instructions = text(batch, p.instruction_column, self.name).fill_null("").to_pylist()
        responses = text(batch, p.response_column, self.name).fill_null("").to_pylist()
        given = self.lm.mean_nll(responses, contexts=instructions)
        alone = self.lm.mean_nll(responses)
        batch = put(batch, p.output_column, _ppl(given))
        ifd = np.exp(given - alone)  # PPL(r|i) / PPL(r)
        return put(batch, "complexity_ifd", with_nulls(np.nan_to_num(ifd), np.isfinite(ifd)))


def _ppl(nll: np.ndarray) -> pa.Array:
    values = np.exp(nll.astype(np.float64))
    return with_nulls(np.nan_to_num(values), np.isfinite(values))
