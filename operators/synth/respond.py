"""respond: `n` sampled answers to each instruction by an LLM, one row per usable answer, for
best-of-n (rejection sampling): score each answer with `llm_judge` or `classifier_score` (a
reward model), then `best_of_n` keeps the best per instruction (../shared/specs/synth.md,
section 6; UltraFeedback: Cui et al., arXiv 2310.01377, samples and rates 4 completions per
prompt; UltraRM best-of-16).

The prompt is the instruction itself as the user message, as WizardLM's `Evol_Instruct/main.py`
has ChatGPT answer each evolved instruction and distilabel's `TextGeneration` sends its
`instruction`; `template` ({instruction}; '@path' reads a file) and `system` change that. Sample
k of each instruction is sent with seed `seed + k` (llm.seed, else the recipe's), so the n
requests differ, are each cached, and a rerun or `--resume` sends none already answered;
n > 1 needs llm.temperature > 0 (n answers at temperature 0 are one answer n times).

Rows out, per input row: one per usable answer, with the answer in `output_column` (`response`),
`response_index` (k), `synth_model` and `_parent_id` (the instruction row's `_id`: what
`best_of_n` groups by); `pair_column`, when named, gets the instruction and answer rendered by
`pair_template` (the text a reward model given to `classifier_score` reads). An answer that
failed, was cut at max_tokens, is empty or refuses is no row: the manifest counts each reason
(`sample_<reason>`, and `samples_ok`); an instruction none of whose answers is usable goes to
the trace as `no_response` (detail: each sample's reason), one without text as `no_text`. So the
manifest reads rows_in = `expanded` + `removed` (1 -> up to n), and `best_of_n` after it
traces every answer it does not keep.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from curate.llm import LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import Map, Params, Result, Verdict, reads_column, writes_column
from curate_operators.synth.cleaning import clean
from curate_operators.synth.instruct import load_prompt
from curate_operators.synth.rephrase import llm_field


class RespondParams(Params):
    n: int = Field(4, ge=1, description="Answers sampled per instruction (seeds seed, seed+1, ...).")
    instruction_column: str | None = reads_column(None, "The instructions; default: the text column.",
                                                  instead_of_text=True)
    template: str | None = Field(None, description="The user message around {instruction}; default: the "
                                                   "instruction alone. '@path' reads it from a file.")
    system: str | None = Field(None, description="A system message; default: none.")
    output_column: str = writes_column("response", "Where each answer goes.", min_length=1)
    pair_column: str | None = writes_column(None, "Also write the instruction and answer rendered by pair_template "
                                                  "here (for a reward model under classifier_score).")
    pair_template: str = Field("{instruction}\n\n{response}",
                               description="pair_column's text, from {instruction} and {response}.")
    llm: LLMConfig = llm_field()

    @field_validator("template")
    @classmethod
    def _has_instruction(cls, v: str | None) -> str | None:
        if v is not None:
            load_prompt(v, ("instruction",))
        return v

    @model_validator(mode="after")
    def _sampled(self):
        if self.n > 1 and self.llm.temperature == 0:
            raise ValueError(f"n: {self.n} answers at llm.temperature 0 are one answer {self.n} times; set "
                             f"llm.temperature > 0 (e.g. 0.7) to sample, or n: 1")
        for slot in ("instruction", "response"):
            if "{" + slot + "}" not in self.pair_template:
                raise ValueError(f"pair_template has no {{{slot}}}")
        return self


class Respond(LLMBacked, Map):
    """Sampled answers to instructions (n each), one row per answer, for best-of-n selection (best_of_n)."""

    name = "respond"
    Params = RespondParams
    changes_rows = True
    provides = ("response_index", "synth_model")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        p = self.params
        self.template = load_prompt(p.template) if p.template is not None else "{instruction}"
        self.counts: dict[str, int] = {}

    @property
    def column(self) -> str:
        return self.params.instruction_column or self.text_column

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """Its rows name their instruction's row in `_parent_id` (what best_of_n groups by)."""
        schema = super().output_schema(schema)
        return schema if "_parent_id" in schema.names else schema.append(pa.field("_parent_id", pa.string()))

    def request(self, instruction: str, k: int) -> Request:
        llm = self.params.llm
        messages = ({"role": "system", "content": self.params.system},) if self.params.system else ()
        messages += ({"role": "user", "content": self.template.replace("{instruction}", instruction)},)
        base = self.seed if llm.seed is None else llm.seed
        return Request(messages, llm.max_tokens, llm.temperature, llm.top_p, base + k)

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    async def process(self, batch: pa.RecordBatch):
        p = self.params
        ids = batch.column("_id").cast(pa.string()).to_pylist()
        texts = batch.column(self.column).to_pylist()
        asked = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        answers = await self.backend.generate([self.request(texts[i], k) for i in asked for k in range(p.n)])
        keep = np.zeros(len(texts), dtype=bool)
        reasons: list[str | None] = ["no_text"] * len(texts)
        details: list[str | None] = ["the row has no instruction to answer"] * len(texts)
        parents, index, responses = [], [], []
        for j, i in enumerate(asked):
            why = []
            for k, answer in enumerate(answers[j * p.n:(j + 1) * p.n]):
                text, reason, detail = clean(answer)
                if reason is not None:
                    self._count(f"sample_{reason}")
                    why.append(f"sample {k}: {reason}" + (f" ({detail[:200]})" if detail else ""))
                    continue
                self._count("samples_ok")
                parents.append(i), index.append(k), responses.append(text)
                keep[i] = True
            if not keep[i]:
                reasons[i], details[i] = "no_response", "; ".join(why)
        rows = batch.take(pa.array(parents, pa.int64()))
        out = [c for c in (p.output_column, p.pair_column) if c]
        columns = {n: rows.column(n) for n in rows.schema.names if n not in ("_id", "_parent_id", *out, *self.provides)}
        columns[p.output_column] = pa.array(responses, pa.string())
        if p.pair_column:
            columns[p.pair_column] = pa.array(
                [p.pair_template.replace("{instruction}", texts[i]).replace("{response}", r)
                 for i, r in zip(parents, responses)], pa.string())
        columns["response_index"] = pa.array(index, pa.int32())
        columns["synth_model"] = pa.array([p.llm.model] * len(parents), pa.string())
        columns["_parent_id"] = pc.take(pa.array(ids, pa.string()), pa.array(parents, pa.int64()))
        return Result(pa.RecordBatch.from_pydict(columns), Verdict(keep, reasons, details))

    def take_counts(self) -> dict[str, int]:
        counts = super().take_counts()
        counts.update(self.counts)
        self.counts = {}
        return counts
