"""evol_instruct: WizardLM's Evol-Instruct (Xu et al., "WizardLM: Empowering Large Language Models
to Follow Complex Instructions", arXiv 2304.12244; nlpxucan/WizardLM `Evol_Instruct/depth.py`,
`breadth.py`; distilabel's EvolInstruct), over `rounds` rounds, one row per surviving evolution.

Each round every instruction gets ONE evolution, picked uniformly among `operations` by a hash
of the recipe's seed, the row's `_id` and the round: in-depth (`constraints`, `deepening`,
`concretizing`, `reasoning`: the rewriter prompt with that method) or in-breadth (`breadth`: the
creator prompt). The text after the last "Prompt#:" is kept (as distilabel). The LLM then
answers the evolved instruction, and the eliminator (the paper's "Elimination Evolving") drops
an evolution when:
1. `no_gain`: it gives no information gain over the instruction it evolved from (the paper's
   Appendix G "Equal / Not Equal" prompt asked of the LLM; identical text counts as equal),
2. `refusal`: the answer contains "sorry" and is short (< `refusal_words`, 80) or is a refusal,
3. `no_content`: the answer is only punctuation and stop words (or empty),
4. `copied_prompt`: the evolved instruction copies words of the evolving prompt ("given
   prompt", "#Rewritten Prompt#", ...).
A failed evolution (also one whose request failed: `evolve_llm_timeout`, `evolve_truncated`,
`response_llm_http_500`, ...) leaves the instruction as it was for the next round, as in the
paper; the manifest counts each reason (`eliminated_<reason>`).

Rows out, per input row: the original (round 0, unless `keep_original: false`) and each
surviving evolution with `evol_round`, `evol_operation`, `evol_from_round` (the round of the
instruction it evolved from, 0 = the original), `evol_lineage` (the operations from the original
to it), `evol_previous` (that instruction), `response` (the LLM's answer to it), `synth_model`
and `_parent_id`. With `keep_original: false` a row none of whose evolutions survived goes to
the trace as `evol_eliminated` (detail: each round's reason); rows without text as `no_text`.
The prompts can be overridden (`depth`, `breadth`, `methods`, `equal`; '@path' reads a file).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field, model_validator

from curate.llm import LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import TEXT, Map, Params, Result, Verdict
from curate_operators.synth.cleaning import clean
from curate_operators.synth.instruct import (EVOL_BREADTH, EVOL_DEPTH, EVOL_EQUAL, EVOL_METHODS, copies_prompt,
                                      evolved_text, judged_equal, load_prompt, only_stop_words, refuses)

OPERATIONS = (*EVOL_METHODS, "breadth")


class EvolInstructParams(Params):
    rounds: int = Field(4, ge=1, description="Evolution rounds (the paper: 4 epochs).")
    operations: list[str] = Field(list(OPERATIONS), min_length=1,
                                  description="Picked uniformly each round: constraints, deepening, concretizing, "
                                              "reasoning (in-depth), breadth (in-breadth).")
    eliminate: bool = Field(True, description="Apply the elimination rules (else every evolution survives).")
    judge: bool = Field(True, description="Rule 1 asks the LLM whether the two instructions are equal.")
    refusal_words: int = Field(80, ge=1, description="Rule 2: an answer with 'sorry' under this many words.")
    keep_original: bool = Field(True, description="Emit each input instruction as round 0 too.")
    depth: str | None = Field(None, description="In-depth prompt ({method}, {instruction}); default WizardLM's.")
    breadth: str | None = Field(None, description="In-breadth prompt ({instruction}); default WizardLM's.")
    methods: dict[str, str] = Field(default_factory=dict, description="In-depth operation -> method text "
                                                                      "(overrides or new operations).")
    equal: str | None = Field(None, description="Rule 1's prompt ({first}, {second}); default the paper's.")
    llm: LLMConfig = Field(description="The LLM (as rephrase's); the same one answers and judges.")

    @model_validator(mode="after")
    def _known(self):
        for name, value, slots in (("depth", self.depth, ("method", "instruction")),
                                   ("breadth", self.breadth, ("instruction",)),
                                   ("equal", self.equal, ("first", "second"))):
            if value is not None:
                try:
                    load_prompt(value, slots)
                except ValueError as e:
                    raise ValueError(f"{name}: {e}") from None
        for op in self.operations:
            if op not in OPERATIONS and op not in self.methods:
                raise ValueError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)} (or add one under methods)")
        return self


class EvolInstruct(LLMBacked, Map):
    name = "evol_instruct"
    Params = EvolInstructParams
    changes_rows = True
    requires = (TEXT,)
    provides = ("evol_round", "evol_operation", "evol_from_round", "evol_lineage", "evol_previous", "response",
                "synth_model")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        p = self.params
        self.depth = load_prompt(p.depth) if p.depth else EVOL_DEPTH
        self.breadth = load_prompt(p.breadth) if p.breadth else EVOL_BREADTH
        self.equal = load_prompt(p.equal) if p.equal else EVOL_EQUAL
        self.methods = {**EVOL_METHODS, **p.methods}
        self.counts: dict[str, int] = {}

    def operation(self, row_id: str, round_: int) -> str:
        ops = self.params.operations
        return ops[xxhash.xxh64_intdigest(f"{self.seed}:{row_id}:{round_}".encode()) % len(ops)]

    def _request(self, content: str, round_: int, max_tokens: int | None = None) -> Request:
        llm = self.params.llm
        base = self.seed if llm.seed is None else llm.seed
        return Request(({"role": "user", "content": content},), max_tokens or llm.max_tokens, llm.temperature,
                       llm.top_p, base + round_)

    def evolve_prompt(self, instruction: str, operation: str) -> str:
        if operation == "breadth":
            return self.breadth.replace("{instruction}", instruction)
        return self.depth.replace("{method}", self.methods[operation]).replace("{instruction}", instruction)

    def _count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    async def process(self, batch: pa.RecordBatch):
        p = self.params
        ids = batch.column("_id").cast(pa.string()).to_pylist()
        texts = batch.column(self.text_column).to_pylist()
        has_text = np.array([isinstance(t, str) and bool(t.strip()) for t in texts], dtype=bool)
        current = {i: (texts[i], 0, ()) for i in np.flatnonzero(has_text)}  # text, its round, its lineage
        made: dict[int, list[dict]] = {i: [] for i in current}
        why: dict[int, list[str]] = {i: [] for i in current}
        for round_ in range(1, p.rounds + 1):
            rows = sorted(current)
            ops = {i: self.operation(ids[i], round_) for i in rows}
            evolved = await self.backend.generate(
                [self._request(self.evolve_prompt(current[i][0], ops[i]), round_) for i in rows])
            candidates: dict[int, str] = {}
            for i, answer in zip(rows, evolved):
                text, reason, _ = clean(answer)
                if reason is not None:
                    reason = f"evolve_{reason}"
                else:
                    text = evolved_text(text)
                    reason = "no_content" if not text else None
                    if reason is None and p.eliminate and copies_prompt(text):
                        reason = "copied_prompt"
                    if reason is None and p.eliminate and " ".join(text.split()) == " ".join(current[i][0].split()):
                        reason = "no_gain"
                if reason is None:
                    candidates[i] = text
                else:
                    self._fail(why, i, round_, ops[i], reason)
            asked = sorted(candidates)
            requests = [self._request(candidates[i], round_) for i in asked]
            judged = p.eliminate and p.judge
            if judged:
                requests += [self._request(self.equal.replace("{first}", current[i][0])
                                           .replace("{second}", candidates[i]), round_, 16) for i in asked]
            answers = await self.backend.generate(requests)
            for j, i in enumerate(asked):
                reason, response = self._eliminate(answers[j], answers[len(asked) + j] if judged else None)
                if reason is not None:
                    self._fail(why, i, round_, ops[i], reason)
                    continue
                previous, from_round, lineage = current[i]
                lineage = (*lineage, ops[i])
                made[i].append({"text": candidates[i], "evol_round": round_, "evol_operation": ops[i],
                                "evol_from_round": from_round, "evol_lineage": list(lineage),
                                "evol_previous": previous, "response": response})
                current[i] = (candidates[i], round_, lineage)
                self._count("evolved")
        keep = has_text.copy()
        reasons: list[str | None] = ["no_text"] * len(texts)
        details: list[str | None] = ["the row has no instruction to evolve"] * len(texts)
        parents, out = [], []
        for i in np.flatnonzero(has_text):
            children = made[i]
            if p.keep_original:
                children = [{"text": texts[i], "evol_round": 0, "evol_operation": None, "evol_from_round": None,
                             "evol_lineage": [], "evol_previous": None, "response": None}, *children]
            if not children:
                keep[i], reasons[i], details[i] = False, "evol_eliminated", "; ".join(why[i])
                continue
            parents += [i] * len(children)
            out += children
        rows = batch.take(pa.array(parents, pa.int64()))
        columns = {n: rows.column(n) for n in rows.schema.names if n not in ("_id", "_parent_id", *self.provides)}
        columns[self.text_column] = pa.array([c["text"] for c in out], pa.string())
        columns["evol_round"] = pa.array([c["evol_round"] for c in out], pa.int32())
        columns["evol_operation"] = pa.array([c["evol_operation"] for c in out], pa.string())
        columns["evol_from_round"] = pa.array([c["evol_from_round"] for c in out], pa.int32())
        columns["evol_lineage"] = pa.array([c["evol_lineage"] for c in out], pa.list_(pa.string()))
        columns["evol_previous"] = pa.array([c["evol_previous"] for c in out], pa.string())
        columns["response"] = pa.array([c["response"] for c in out], pa.string())
        columns["synth_model"] = pa.array([p.llm.model if c["evol_round"] else None for c in out], pa.string())
        columns["_parent_id"] = pa.array([ids[i] for i in parents], pa.string())
        return Result(pa.RecordBatch.from_pydict(columns), Verdict(keep, reasons, details))

    def _fail(self, why: dict, i: int, round_: int, operation: str, reason: str) -> None:
        why[i].append(f"round {round_} {operation}: {reason}")
        self._count(f"eliminated_{reason}")

    def _eliminate(self, response, judgement) -> tuple[str | None, str | None]:
        """(reason, None) when the evolution fails rules 1-3 or its requests failed, else (None, answer)."""
        p = self.params
        text, reason, _ = clean(response)
        if reason == "refused":  # the paper's rule 2 decides: "sorry" and short
            text, reason = response.text.strip(), None
        if reason == "empty":
            return "no_content", None
        if reason is not None:
            return f"response_{reason}", None
        if p.eliminate and refuses(text, p.refusal_words):
            return "refusal", None
        if p.eliminate and only_stop_words(text):
            return "no_content", None
        if judgement is not None:
            said, judge_reason, _ = clean(judgement)
            if judge_reason is not None:
                return f"judge_{judge_reason}", None
            if judged_equal(said):
                return "no_gain", None
        return None, text

    def take_counts(self) -> dict[str, int]:
        counts = super().take_counts()
        counts.update(self.counts)
        self.counts = {}
        return counts
