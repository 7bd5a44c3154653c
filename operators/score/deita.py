"""deita_complexity: Deita-style complexity (Liu et al. 2024) of instructions, from a causal LM.

The model reads the scorer prompt with the instruction in it and the score is the expected
value of its next token over "1".."6": sum_i i * softmax(logits of "1".."6")_i, in [1, 6].
Deita's own scorer is a LLaMA fine-tuned for this prompt; any causal LM (a local path or
cached hub id) can be given, and the prompt changed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import Field, field_validator

from curate.columns import put, text_values
from curate.ops import Map, Resources, loaded, reads_column, writes_column
from curate_operators.score.model_params import ModelScoreParams, scorer

PROMPT = ("You are a helpful assistant. Please identify the complexity score of the following user query. \n"
          "##Query: {instruction}  \n##Complexity: ")


class DeitaParams(ModelScoreParams):
    instruction_column: str | None = reads_column(None, "The instruction column; default: the text column.",
                                                  instead_of_text=True)
    prompt: str = Field(PROMPT, description="The scorer prompt; {instruction} is replaced by the row's instruction.")
    output_column: str = writes_column("complexity_deita", "Where the score goes.", min_length=1)

    @field_validator("prompt")
    @classmethod
    def _has_slot(cls, prompt: str) -> str:
        if "{instruction}" not in prompt:
            raise ValueError("the prompt needs an {instruction} slot")
        return prompt


class DeitaComplexity(Map):
    """Deita complexity: expected score 1..6 of a scorer LM's next token after a rating prompt."""

    name = "deita_complexity"
    Params = DeitaParams
    resources = Resources(cpus=1.0, pool="model")

    lm = scorer("CausalLM", "The scorer.")

    @loaded
    def digits(self) -> np.ndarray:
        """The token ids of "1".."6"."""
        from curate.errors import CurateError

        digits = []
        for d in "123456":
            ids = self.lm.tokenizer(d, add_special_tokens=False)["input_ids"]
            if len(ids) != 1:
                raise CurateError(f"{self.name}: the tokenizer of '{self.params.model}' does not encode '{d}' as "
                                  f"one token; Deita's score needs single-token digits")
            digits.append(ids[0])
        return np.array(digits)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        instructions = text_values(batch, self.params.instruction_column or self.text_column, self.name)
        prompts = [self.params.prompt.replace("{instruction}", s) for s in instructions]
        logits = self.lm.next_token_logits(prompts)[:, self.digits].astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        return put(batch, self.params.output_column, p @ np.arange(1, 7, dtype=np.float64))
