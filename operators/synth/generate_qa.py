"""generate_qa: question-answer pairs from each document by an LLM, one row per pair with
`question`, `answer`, `qa_index`, `synth_prompt`, `synth_model` and `_parent_id` (the
document's `_id`); the text column becomes the pair rendered by `text_template`.

Presets (verbatim, ../shared/specs/synth.md): `diverse_qa`, Nemotron-CC's DiverseQA prompt with
its system message (Su et al., arXiv 2412.02595; NVIDIA/NeMo-Curator
`nemo_curator/synthetic/prompts.py`), and `qa_from_text`, WRAP's Q&A style (Maini et al., ACL
2024). `template` replaces the preset with your own prompt ({document} where the text goes;
`@file.txt` reads it from a file).

Answers are parsed whatever their shape: "Question:/Answer:" tags (with bullets, numbering,
Markdown emphasis, or Q:/A:), JSON (a list of objects with question/answer keys, an object
holding such a list, JSON lines, fenced or not) or a numbered list of questions each followed by
its answer. Text before the first question is dropped (as Nemotron-CC's post-processing does).
A document whose answer holds no pair goes to the trace as `unparseable` with the raw answer in
the detail; failed, truncated, empty or refused answers are traced with that reason
(`llm_timeout`, `truncated`, ...), and rows without text as `no_text`.
"""

from __future__ import annotations

import string

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator

from curate.llm import Answer, LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import TEXT, Map, Params, Result, Verdict
from curate_operators.synth.cleaning import clean
from curate_operators.synth.instruct import QA_PRESETS, load_prompt, parse_qa
from curate_operators.synth.rephrase import llm_field

DETAIL_CHARS = 4000  # of a raw answer kept in the trace's detail
Read = tuple[list[tuple[str, str]], "str | None", "str | None", "str | None"]  # pairs, shape, reason, detail


class GenerateQAParams(Params):
    preset: str = Field("diverse_qa", description=f"The prompt: {', '.join(QA_PRESETS)}.")
    template: str | None = Field(None, description="Your own prompt instead of the preset's, with {document}; "
                                                   "'@path' reads it from a file.")
    system: str | None = Field(None, description="System message; default: the preset's (DiverseQA: Nemotron-CC's "
                                                 "chat preamble; none for a template). '' for none.")
    max_pairs: int = Field(8, ge=1, description="Most pairs kept per document (the first ones).")
    text_template: str = Field("Question: {question}\nAnswer: {answer}",
                               description="The text column of each pair's row, from {question} and {answer}.")
    llm: LLMConfig = llm_field()

    @field_validator("preset")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in QA_PRESETS:
            raise ValueError(f"unknown preset {v!r}; known: {', '.join(QA_PRESETS)} (or give template)")
        return v

    @field_validator("template")
    @classmethod
    def _has_document(cls, v: str | None) -> str | None:
        if v is not None:
            load_prompt(v, ("document",))  # where the row's text goes
        return v


class GenerateQA(LLMBacked, Map):
    name = "generate_qa"
    Params = GenerateQAParams
    changes_rows = True
    requires = (TEXT,)
    provides = ("question", "answer", "qa_index", "synth_prompt", "synth_model")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        p = self.params
        template, system = QA_PRESETS[p.preset]
        if p.template is not None:
            template, system = load_prompt(p.template), None
        self.template = template
        self.system = system if p.system is None else (p.system or None)
        self.prompt_name = "template" if p.template is not None else p.preset
        self.pieces = _pieces(p.text_template)
        self.shapes: dict[str, int] = {}

    def request(self, text: str) -> Request:
        llm = self.params.llm
        messages = ({"role": "system", "content": self.system},) if self.system else ()
        messages += ({"role": "user", "content": self.template.replace("{document}", text)},)
        return Request(messages, llm.max_tokens, llm.temperature, llm.top_p,
                       self.seed if llm.seed is None else llm.seed)

    def render(self, questions: pa.Array, answers: pa.Array) -> pa.Array:
        """text_template for every pair: joined by Arrow where the template only places {question}
        and {answer} (the default does), else str.format a pair at a time."""
        if self.pieces is None:
            fmt = self.params.text_template
            return pa.array([fmt.format(question=q, answer=a) for q, a in zip(questions.to_pylist(),
                                                                             answers.to_pylist())], pa.string())
        fields = {"question": questions, "answer": answers}
        return pc.binary_join_element_wise(*(fields[v] if is_field else v for is_field, v in self.pieces), "")

    def read(self, answer: Answer) -> Read:
        """An answer's pairs (the first max_pairs) and the shape they were found in; with no pairs, the
        reason and detail for the trace."""
        text, reason, detail = clean(answer)
        if text is None:
            return [], None, reason, detail
        pairs, shape = parse_qa(text)
        if not pairs:
            return [], shape, "unparseable", (answer.text or "")[:DETAIL_CHARS]
        return pairs[:self.params.max_pairs], shape, None, None

    async def process(self, batch: pa.RecordBatch):
        texts = batch.column(self.text_column).to_pylist()
        asked = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        # Each answer is read as it arrives (every backend calls back per answer), between the event
        # loop's other work: read all at once after the batch's last answer, they held up the loop
        # (no request sent meanwhile) for a second per 5,000 rows (bench/sections/synth.py).
        read: list[Read | None] = [None] * len(asked)

        def arrived(j: int, answer: Answer) -> None:
            read[j] = self.read(answer)

        await self.backend.generate([self.request(texts[i]) for i in asked], arrived)
        keep = np.zeros(len(texts), dtype=bool)
        reasons: list[str | None] = ["no_text"] * len(texts)
        details: list[str | None] = ["the row has no text to ask questions about"] * len(texts)
        made: dict[int, list[tuple[str, str]]] = {}
        shapes: dict[str, int] = {}
        for i, (pairs, shape, reason, detail) in zip(asked, read):
            if shape is not None:
                shapes[shape] = shapes.get(shape, 0) + 1
            if reason is not None:
                reasons[i], details[i] = reason, detail
                continue
            keep[i] = True
            made[i] = pairs
        for shape, n in shapes.items():  # answers per shape found, for the manifest's counts
            self.shapes[f"parsed_{shape}"] = self.shapes.get(f"parsed_{shape}", 0) + n
        kept = np.flatnonzero(keep).tolist()
        counts = [len(made[i]) for i in kept]
        pairs = [pair for i in kept for pair in made[i]]
        parents = pa.array(np.repeat(np.array(kept, dtype=np.int64), counts))
        questions = pa.array([q for q, _ in pairs], pa.string())
        out_answers = pa.array([a for _, a in pairs], pa.string())
        rows = batch.take(parents)
        columns = {n: rows.column(n) for n in rows.schema.names if n not in ("_id", "_parent_id", *self.provides)}
        columns[self.text_column] = self.render(questions, out_answers)
        columns["question"] = questions
        columns["answer"] = out_answers
        columns["qa_index"] = pa.array([k for n in counts for k in range(n)], pa.int32())
        columns["synth_prompt"] = pa.array([self.prompt_name] * len(pairs), pa.string())
        columns["synth_model"] = pa.array([self.params.llm.model] * len(pairs), pa.string())
        columns["_parent_id"] = rows.column("_id").cast(pa.string())
        return Result(pa.RecordBatch.from_pydict(columns), Verdict(keep, reasons, details))

    def take_counts(self) -> dict[str, int]:
        counts = super().take_counts()
        counts.update(self.shapes)
        self.shapes = {}
        return counts


def _pieces(template: str) -> list[tuple[bool, str]] | None:
    """The template as (is a field, literal text or "question"/"answer") in order, or None where it
    does more than place those two (a format spec, a conversion, another field, or no field at all):
    str.format renders it then."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:  # unbalanced braces: str.format says so, naming the template
        return None
    pieces: list[tuple[bool, str]] = []
    for literal, field, spec, conversion in parsed:
        if literal:
            pieces.append((False, literal))
        if field is None:
            continue
        if field not in ("question", "answer") or spec or conversion:
            return None
        pieces.append((True, field))
    return pieces if any(is_field for is_field, _ in pieces) else None
