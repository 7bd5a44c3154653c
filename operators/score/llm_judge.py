"""llm_judge: a quality score from an LLM (LLM-as-judge, QDC spec): a rating prompt per row,
the answer parsed to a number on the recipe's scale, the raw answer kept for audit.

Scores are attributes, never removals: a row whose request failed, or whose answer holds no
number on the scale, gets a null score (its raw answer, or the error, stays beside it) and is
counted in the manifest (`judge_failed`, `judge_unparsed`); `sql_filter` or `qdc_select` decide
what to keep. The template names columns in braces (`{text}` is the recipe's text column), so an
instruction/response pair is judged with `{instruction}` and `{response}`. Requests go through
the shared LLM backends and request cache (curate/llm), so a repeated run pays for nothing twice.
"""

from __future__ import annotations

import re
import string
from functools import cached_property

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from curate.llm import LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import Map, Params, writes_column

TEMPLATE = ("Rate the quality of the following text as training data for a language model, on a scale from "
            "{low} to {high} ({low}: useless or harmful, {high}: excellent: accurate, coherent, informative and "
            "well written). Answer with the number only.\n\nText:\n{text}")
# "Score: 7", "rating = 7/10", else the first number on the scale anywhere in the answer, once
# denominators ("/10", "out of 10") are taken out.
LABELLED = re.compile(r"(?:score|rating)\s*(?:is|of)?\s*[:=]?\s*(-?\d+(?:\.\d+)?)", re.I)
DENOMINATOR = re.compile(r"(?:/|\bout of)\s*\d+(?:\.\d+)?", re.I)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class LLMJudgeParams(Params):
    llm: LLMConfig = Field(description="The judge: backend (openai, transformers, vllm), model, base_url, ... "
                                       "(README: Synthetic rephrasing).")
    template: str = Field(TEMPLATE, description="The rating prompt; {column} is a row's value, {low}/{high} the scale.")
    scale: tuple[float, float] = Field((1, 10), description="Lowest and highest score the prompt asks for.")
    output_column: str = writes_column("quality_llm_judge", "Where the score goes (the raw answer goes to "
                                                            "<output_column>_raw).", min_length=1)

    @field_validator("scale")
    @classmethod
    def _ordered(cls, v):
        if v[0] >= v[1]:
            raise ValueError("scale is [lowest, highest], lowest first")
        return v

    @model_validator(mode="after")
    def _fields(self):
        names = {f for _, f, _, _ in string.Formatter().parse(self.template) if f} - {"low", "high"}
        if not names:
            raise ValueError("template names no column: put {text} (or {instruction}, {response}, ...) in it")
        return self

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(sorted({f for _, f, _, _ in string.Formatter().parse(self.template) if f} - {"low", "high"}))


def parse_score(answer: str | None, low: float, high: float) -> float | None:
    """The judge's number on [low, high], or None."""
    if not answer:
        return None
    labelled = LABELLED.search(answer)
    candidates = [labelled.group(1)] if labelled else NUMBER.findall(DENOMINATOR.sub(" ", answer))
    for text in candidates:
        value = float(text)
        if low <= value <= high:
            return value
    return None


class LLMJudge(LLMBacked, Map):
    name = "llm_judge"
    Params = LLMJudgeParams

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self.counts: dict[str, int] = {}

    @cached_property
    def fields(self) -> dict[str, str]:
        """The template's placeholders -> the columns they read ({text}: the text column)."""
        return {name: (self.text_column if name == "text" else name) for name in self.params.columns}

    def computed_requires(self) -> tuple[str, ...]:
        return tuple(self.fields.values())

    def computed_provides(self) -> tuple[str, ...]:
        return (self.params.output_column + "_raw",)

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = {**super().take_counts(), **self.counts}, {}
        return counts

    def request(self, row: dict) -> Request:
        llm = self.params.llm
        low, high = (f"{v:g}" for v in self.params.scale)
        prompt = self.params.template.format(low=low, high=high, **{k: row[c] for k, c in self.fields.items()})
        return Request(({"role": "user", "content": prompt},), llm.max_tokens, llm.temperature, llm.top_p,
                       self.seed if llm.seed is None else llm.seed)

    async def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        rows = batch.select(list(self.requires)).to_pylist()
        asked = [i for i, row in enumerate(rows) if all(isinstance(row[c], str) and row[c].strip()
                                                        for c in self.requires)]
        answers = await self.backend.generate([self.request(rows[i]) for i in asked])
        scores: list[float | None] = [None] * len(rows)
        raw: list[str | None] = [None] * len(rows)
        for i, answer in zip(asked, answers):
            if not answer.ok:
                raw[i] = f"error: {answer.error}" + (f" ({answer.detail})" if answer.detail else "")
                self._count("judge_failed")
                continue
            raw[i] = answer.text
            scores[i] = parse_score(answer.text, *self.params.scale)
            if scores[i] is None:
                self._count("judge_unparsed")
        if len(asked) < len(rows):
            self._count("judge_no_text", len(rows) - len(asked))
        out = self.params.output_column
        batch = batch.drop_columns([c for c in (out, out + "_raw") if c in batch.schema.names])
        return batch.append_column(out, pa.array(scores, pa.float64())).append_column(out + "_raw",
                                                                                      pa.array(raw, pa.string()))

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n
