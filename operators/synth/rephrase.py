"""rephrase (WRAP): each row's text rephrased by an LLM in the recipe's styles, as new rows with
`synth_style`, `synth_model` and `_parent_id`, beside the original (real:synthetic `ratio`,
default 1:1: the original and one rephrasing, its style taken in turn among `styles` by a hash
of the row's id; "0:1" keeps only rephrasings, in every style; "1:2" two styles per row).

A row gets all of its rephrasings or none: if one of its requests fails (after the backend's
retries), or the answer is empty, refused or cut at max_tokens, the row goes to the trace with
that reason (`llm_timeout`, `llm_http_500`, `llm_bad_request`, `truncated`, `empty`,
`refused`, ...) and nothing of it is emitted, so the ratio holds exactly. Answers that came
back are in the request cache: a later run pays only for what failed.

Over HTTP (`llm.backend: openai`) the step runs in the io class: `process` is async and the
backend keeps `llm.concurrency` requests in flight. Local models run on the model workers.
"""

from __future__ import annotations

from math import gcd

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field, field_validator, model_validator

from curate.llm import LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import TEXT, Map, Params, Result, Verdict
from curate_operators.synth.cleaning import clean
from curate_operators.synth.prompts import PROMPTS, TEMPLATE


def llm_field(description: str = "The LLM (as rephrase's): backend, model, base_url, api_key_env, concurrency, "
                                  "max_tokens, temperature, top_p, seed, cache_dir."):
    """The required `llm` field (an LLMConfig) of the synth operators that take rephrase's LLM settings."""
    return Field(description=description)


class RephraseParams(Params):
    styles: list[str] = Field(["medium"], min_length=1, description="Styles to rephrase in: easy, medium, hard, "
                                                                     "qa (the paper's prompts) or your own.")
    prompts: dict[str, str] = Field(default_factory=dict, description="Style -> prompt: new styles, or overrides "
                                                                      "of the paper's.")
    template: str = Field(TEMPLATE, description="The user message, from {prompt} (the style's) and {text}.")
    system: str | None = Field(None, description="A system message sent first, if any.")
    ratio: str = Field("1:1", description="real:synthetic rows out, e.g. 1:1, 1:2, 0:1 (rephrasings only).")
    llm: LLMConfig = Field(description="The LLM: backend (openai, transformers, vllm), model, base_url, api_key_env, "
                                       "concurrency, timeout_s, max_retries, max_tokens, temperature, top_p, seed, "
                                       "cache_dir (README: Synthetic rephrasing).")

    @field_validator("template")
    @classmethod
    def _has_text(cls, v: str) -> str:
        if "{text}" not in v:
            raise ValueError("template must contain {text} (where the row's text goes)")
        return v

    @model_validator(mode="after")
    def _known_styles(self):
        known = {**PROMPTS, **self.prompts}
        for style in self.styles:
            if style not in known:
                raise ValueError(f"unknown style {style!r}; known: {', '.join(known)} (add one under prompts)")
        real, synthetic = self.parts
        if real > 1 or (real == 1 and synthetic > len(self.styles)):
            raise ValueError(f"ratio {self.ratio}: each row gives one original and at most one rephrasing per style "
                             f"({len(self.styles)} styles), so the ratio is 1:k with k <= {len(self.styles)}, or 0:1")
        return self

    @property
    def parts(self) -> tuple[int, int]:
        try:
            real, synthetic = (int(x) for x in self.ratio.split(":"))
        except ValueError:
            raise ValueError(f"ratio must be real:synthetic, e.g. 1:1 (got {self.ratio!r})") from None
        if real < 0 or synthetic < 1:
            raise ValueError(f"ratio {self.ratio}: real >= 0 and synthetic >= 1")
        g = gcd(real, synthetic)
        return real // g, synthetic // g


class Rephrase(LLMBacked, Map):
    name = "rephrase"
    Params = RephraseParams
    changes_rows = True
    requires = (TEXT,)
    provides = ("synth_style", "synth_model")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self.prompts = {**PROMPTS, **self.params.prompts}
        self.real, self.synthetic = self.params.parts

    def styles_for(self, row_id: str) -> list[str]:
        """The styles of one row: all of them for 0:1, else `synthetic` of them, in turn by id."""
        styles = self.params.styles
        if self.real == 0:
            return list(styles)
        start = xxhash.xxh64_intdigest(f"{self.seed}:{row_id}".encode()) % len(styles)
        return [styles[(start + j) % len(styles)] for j in range(self.synthetic)]

    def request(self, text: str, style: str) -> Request:
        llm = self.params.llm
        messages = ({"role": "system", "content": self.params.system},) if self.params.system else ()
        messages += ({"role": "user", "content": self.params.template.format(prompt=self.prompts[style], text=text)},)
        return Request(messages, llm.max_tokens, llm.temperature, llm.top_p,
                       self.seed if llm.seed is None else llm.seed)

    async def process(self, batch: pa.RecordBatch):
        ids = batch.column("_id").cast(pa.string()).to_pylist()
        texts = batch.column(self.text_column).to_pylist()
        asked: list[tuple[int, str]] = []  # (row, style) of each request
        for i, (row_id, text) in enumerate(zip(ids, texts)):
            if isinstance(text, str) and text.strip():
                asked += [(i, style) for style in self.styles_for(row_id)]
        answers = await self.backend.generate([self.request(texts[i], style) for i, style in asked])
        keep = np.array([isinstance(t, str) and bool(t.strip()) for t in texts], dtype=bool)
        reasons: list[str | None] = ["no_text"] * len(texts)
        details: list[str | None] = ["the row has no text to rephrase"] * len(texts)
        made: dict[int, list[tuple[str, str]]] = {}
        for (i, style), answer in zip(asked, answers):
            text, reason, detail = clean(answer)
            if reason is None:
                made.setdefault(i, []).append((style, text))
            elif keep[i]:  # the row's first failure is its reason
                keep[i], reasons[i], details[i] = False, reason, f"style {style}: {detail}"
        parents, out_text, out_style = [], [], []
        for i in np.flatnonzero(keep):
            if self.real:
                parents.append(i), out_text.append(texts[i]), out_style.append(None)
            for style, text in made[i]:
                parents.append(i), out_text.append(text), out_style.append(style)
        rows = batch.take(pa.array(parents, pa.int64()))
        columns = {n: rows.column(n) for n in rows.schema.names
                   if n not in ("_id", "_parent_id", "synth_style", "synth_model")}
        columns[self.text_column] = pa.array(out_text, pa.string())
        columns["synth_style"] = pa.array(out_style, pa.string())
        columns["synth_model"] = pa.array([self.params.llm.model if s else None for s in out_style], pa.string())
        columns["_parent_id"] = pa.array([ids[i] for i in parents], pa.string())
        return Result(pa.RecordBatch.from_pydict(columns), Verdict(keep, reasons, details))
