"""perplexity: quality_perplexity under any causal LM, and IFD for instruction data.

Runs in the model worker pool (`Resources(pool="model")`), where its `loaded` model loads once per
worker. quality_perplexity = exp(mean negative log-likelihood per token) of the text column,
or of the response given the instruction when both columns are set. With both columns it also
writes complexity_ifd, the Instruction-Following Difficulty of Li et al. (2024):
PPL(response | instruction) / PPL(response): near or above 1 when the instruction does not help
predict the response. Rows with no scored token (empty text) get null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import model_validator

from curate.columns import put, text_values, with_nulls
from curate.ops import Map, Resources, reads_column, writes_column
from curate_operators.score.model_params import ModelScoreParams, scorer


class PerplexityParams(ModelScoreParams):
    instruction_column: str | None = reads_column(None, "With response_column: score the response given the "
                                                        "instruction, and write complexity_ifd.", instead_of_text=True)
    response_column: str | None = reads_column(None, "See instruction_column.", instead_of_text=True)
    output_column: str = writes_column("quality_perplexity", "Where the perplexity goes.", min_length=1)

    @model_validator(mode="after")
    def _pair(self) -> "PerplexityParams":
        if (self.instruction_column is None) != (self.response_column is None):
            raise ValueError("instruction_column and response_column go together")
        return self


class Perplexity(Map):
    """Perplexity of each row under a causal LM (and IFD of instruction/response pairs)."""

    name = "perplexity"
    Params = PerplexityParams
    resources = Resources(cpus=1.0, pool="model")

    def computed_provides(self) -> tuple[str, ...]:
        return ("complexity_ifd",) if self.params.instruction_column else ()

    lm = scorer("CausalLM")

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        p = self.params
        if not p.instruction_column:
            nll = self.lm.mean_nll(text_values(batch, self.text_column, self.name))
            return put(batch, p.output_column, _ppl(nll))
        instructions = text_values(batch, p.instruction_column, self.name)
        responses = text_values(batch, p.response_column, self.name)
        given = self.lm.mean_nll(responses, contexts=instructions)
        alone = self.lm.mean_nll(responses)
        batch = put(batch, p.output_column, _ppl(given))
        ifd = np.exp(given - alone)  # PPL(r|i) / PPL(r)
        return put(batch, "complexity_ifd", with_nulls(np.nan_to_num(ifd), np.isfinite(ifd)))


def _ppl(nll: np.ndarray) -> pa.Array:
    values = np.exp(nll.astype(np.float64))
    return with_nulls(np.nan_to_num(values), np.isfinite(values))
