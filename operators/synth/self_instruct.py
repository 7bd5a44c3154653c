"""self_instruct (Global): grows a pool of instructions from the seed instructions (the input
rows' text) with the Self-Instruct prompt (Wang et al., "Self-Instruct: Aligning Language Models
with Self-Generated Instructions", arXiv 2212.10560; yizhongw/self-instruct
`self_instruct/bootstrap_instructions.py`).

Each round asks `prompts_per_round` prompts of `prompt_instructions` (8) in-context
instructions: up to `machine_per_prompt` (2) sampled from the machine-generated ones so far, the
rest from the seeds, shuffled; "Come up with a series of tasks:\\n1. ...\\n8. ...\\n9.". Each
answer is split on `\\n\\d+\\s?\\. `; an instruction cut by max_tokens is dropped, survivors are
capitalized. A new instruction is kept when it passes the paper's filters (`filters`: 4 to 150
words; none of image, graph, picture, file, map, draw, plot, "go to"; not "Write a program"; no
punctuation or non-ASCII start) and its ROUGE-L F (rouge_score's tokenizer, no stemming)
against EVERY instruction in the pool (seeds and those kept before it, which join at once) is
below `rouge_threshold` (0.7). The ROUGE-L of a candidate against the whole pool is computed at
once (a longest-common-subsequence table over the pool as arrays), equal to rouge_score's.
Rounds go on until `num_instructions` are kept or `max_rounds` have run.

Deterministic given the recipe's seed and the answers: the in-context samples come from a seeded
generator, each prompt has its own sampling seed (so a repeated prompt is a new sample), and
answers are taken in order. Answers are in the request cache: a rerun pays for nothing.

Output: the seed rows (unless `keep_seeds: false`; then a seed with no child is traced as
`seed`), each followed by the new instructions whose prompt's first seed it is (`_parent_id`),
with `synth_round`, `synth_model`, `si_rouge_l` (the highest ROUGE-L against the pool when it
was kept) and every other column null. The manifest's fit summary counts rounds, requests,
candidates, each filter's rejections and what was kept.
Not done here: the paper's classification identification and instance generation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator

from curate.llm import LLMConfig, Request
from curate.llm.step import LLMBacked
from curate.ops import SERIAL, TEXT, FitState, Global, Parallel, Params, Result, Verdict
from curate_operators.synth.instruct import instruction_filter, load_prompt, self_instruct_prompt, split_instructions


class SelfInstructParams(Params):
    num_instructions: int = Field(100, ge=1, description="Stop once this many new instructions are kept.")
    max_rounds: int = Field(50, ge=1, description="... or after this many rounds.")
    prompts_per_round: int = Field(5, ge=1, description="Prompts asked per round (the paper: 5 per request batch).")
    prompt_instructions: int = Field(8, ge=1, description="In-context instructions per prompt (the paper: 8).")
    machine_per_prompt: int = Field(2, ge=0, description="Of them, at most this many machine-generated ones.")
    rouge_threshold: float = Field(0.7, gt=0, le=1, description="A new instruction is kept when its ROUGE-L F "
                                                                "against every pooled instruction is below this.")
    filters: bool = Field(True, description="The paper's heuristic filters (length, words, start).")
    classification: bool = Field(False, description="The classification-tasks header instead.")
    header: str | None = Field(None, description="Your own header line instead of the paper's ('@path': a file).")
    keep_seeds: bool = Field(True, description="Emit the seed rows too (else only the new instructions).")
    llm: LLMConfig = Field(description="The LLM (as rephrase's). The paper: temperature 0.7, top_p 0.5, "
                                       "max_tokens 1024.")

    @field_validator("header")
    @classmethod
    def _readable(cls, v: str | None) -> str | None:
        if v is not None:
            load_prompt(v)
        return v


def rouge_l_against(candidate: list[int], pool: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """ROUGE-L F of `candidate` (token ids) against every row of `pool` (token ids, -1 padded) at
    once: the LCS table is filled for all pool rows together. F = 2 LCS / (len(c) + len(p))."""
    n, width = pool.shape
    if not candidate or n == 0:
        return np.zeros(n)
    prev = np.zeros((n, width + 1), np.int32)
    for token in candidate:
        match = pool == token
        row = np.zeros_like(prev)
        for j in range(1, width + 1):
            row[:, j] = np.where(match[:, j - 1], prev[:, j - 1] + 1, np.maximum(prev[:, j], row[:, j - 1]))
        prev = row
    lcs = prev[np.arange(n), lengths]
    total = len(candidate) + lengths
    return np.where(total > 0, 2.0 * lcs / np.maximum(total, 1), 0.0)


class Pool:
    """The pooled instructions' token ids (rows of a -1 padded array that doubles when full),
    grown as instructions are kept."""

    def __init__(self):
        from rouge_score import tokenizers

        self.tokenizer = tokenizers.DefaultTokenizer(use_stemmer=False)
        self.vocab: dict[str, int] = {}
        self.rows = 0
        self.buffer = np.full((64, 16), -1, np.int32)
        self.sizes = np.zeros(64, np.int64)

    @property
    def ids(self) -> np.ndarray:
        return self.buffer[:self.rows, :max(1, int(self.sizes[:self.rows].max(initial=0)))]

    @property
    def lengths(self) -> np.ndarray:
        return self.sizes[:self.rows]

    def tokens(self, text: str) -> list[int]:
        return [self.vocab.setdefault(t, len(self.vocab)) for t in self.tokenizer.tokenize(text)]

    def add(self, tokens: list[int]) -> None:
        rows, width = self.buffer.shape
        if self.rows == rows or len(tokens) > width:
            grown = np.full((rows * 2 if self.rows == rows else rows, max(width, len(tokens))), -1, np.int32)
            grown[:rows, :width] = self.buffer
            self.buffer = grown
            self.sizes = np.concatenate([self.sizes, np.zeros(len(grown) - len(self.sizes), np.int64)])
        self.buffer[self.rows, :len(tokens)] = tokens
        self.sizes[self.rows] = len(tokens)
        self.rows += 1

    def max_rouge(self, tokens: list[int]) -> tuple[float, int]:
        scores = rouge_l_against(tokens, self.ids, self.lengths)
        if len(scores) == 0:
            return 0.0, -1
        best = int(np.argmax(scores))
        return float(scores[best]), best


@dataclass
class Grown(FitState):
    """The fit's result: new instructions by the seed `_id` they hang under, and the summary."""

    children: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)  # text, round, rouge
    report: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return self.report


class SelfInstruct(LLMBacked, Global):
    name = "self_instruct"
    Params = SelfInstructParams
    changes_rows = True  # the seeds and the instructions grown from them (engine: expand.py)
    requires = (TEXT,)
    provides = ("synth_round", "synth_model", "si_rouge_l")

    @classmethod
    def resources_for(cls, params):
        return cls.resources  # the LLM is asked in `fit`, in the driver; `apply` only lays out rows

    def setup(self) -> None:  # the backend is opened by `fit` alone, on first use (apply's workers need none)
        pass

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Grown:
        p = self.params
        seeds: list[tuple[int, str, str]] = []
        for batch in batches:
            for o, i, t in zip(batch.column("_ord").to_pylist(), batch.column("_id").cast(pa.string()).to_pylist(),
                               batch.column(self.text_column).to_pylist()):
                if isinstance(t, str) and t.strip():
                    seeds.append((o, i, t))
        seeds.sort()
        report = {"seeds": len(seeds), "rounds": 0, "requests": 0, "candidates": 0, "kept": 0,
                  "rejected": {}, "per_round": []}
        grown = Grown(report=report)
        if not seeds:
            return grown
        header = load_prompt(p.header) if p.header else None
        pool = Pool()
        texts = [t for _, _, t in seeds]
        for t in texts:
            pool.add(pool.tokens(t))
        machine: list[tuple[str, str]] = []  # (text, seed id it hangs under)
        rng = np.random.default_rng(self.seed)
        base = self.seed if p.llm.seed is None else p.llm.seed
        for round_ in range(1, p.max_rounds + 1):
            if report["kept"] >= p.num_instructions:
                break
            prompts, owners = [], []
            for _ in range(p.prompts_per_round):
                k_machine = min(p.machine_per_prompt, len(machine), p.prompt_instructions)
                picked_m = [machine[i][0] for i in sorted(rng.choice(len(machine), k_machine, replace=False))] \
                    if k_machine else []
                k_seed = min(p.prompt_instructions - k_machine, len(seeds))
                picked_s = [int(i) for i in rng.choice(len(seeds), k_seed, replace=False)]
                context = [texts[i] for i in picked_s] + picked_m
                order = rng.permutation(len(context))
                context = [context[i] for i in order]
                prompt = self_instruct_prompt(context, p.classification)
                if header:
                    prompt = header + prompt[prompt.index("\n"):]
                prompts.append((prompt, len(context) + 1))
                owners.append(seeds[picked_s[0]][1] if picked_s else seeds[0][1])
            llm = p.llm
            requests = [Request(({"role": "user", "content": prompt},), llm.max_tokens, llm.temperature, llm.top_p,
                                base + (round_ - 1) * p.prompts_per_round + j)
                        for j, (prompt, _) in enumerate(prompts)]
            answers = asyncio.run(self.backend.generate(requests))
            report["rounds"], report["requests"] = round_, report["requests"] + len(requests)
            kept_here = 0
            for (prompt, first), owner, answer in zip(prompts, owners, answers):
                if not answer.ok or not answer.text:
                    reason = f"llm_{answer.error}" if not answer.ok else "empty"
                    report["rejected"][reason] = report["rejected"].get(reason, 0) + 1
                    continue
                found = split_instructions(answer.text, first)
                if answer.finish_reason == "length" and found:
                    found = found[:-1]  # the last one was cut by max_tokens (the paper drops it)
                    report["rejected"]["truncated"] = report["rejected"].get("truncated", 0) + 1
                for inst in found:
                    if report["kept"] >= p.num_instructions:
                        break
                    report["candidates"] += 1
                    reason = instruction_filter(inst) if p.filters else None
                    tokens = pool.tokens(inst)
                    score, _ = pool.max_rouge(tokens)
                    if reason is None and score >= p.rouge_threshold:
                        reason = "rouge_l"
                    if reason is not None:
                        report["rejected"][reason] = report["rejected"].get(reason, 0) + 1
                        continue
                    pool.add(tokens)
                    machine.append((inst, owner))
                    grown.children.setdefault(owner, []).append((inst, round_, round(score, 6)))
                    report["kept"] += 1
                    kept_here += 1
            report["per_round"].append(kept_here)
        report["counts"] = self.backend.take_counts()
        return grown

    def apply(self, batch: pa.RecordBatch, state: Grown):
        p = self.params
        ids = batch.column("_id").cast(pa.string()).to_pylist()
        parents, texts, rounds, scores, is_seed = [], [], [], [], []
        keep = np.zeros(len(ids), bool)
        for i, row_id in enumerate(ids):
            children = state.children.get(row_id, [])
            if p.keep_seeds:
                parents.append(i), texts.append(None), rounds.append(0), scores.append(None), is_seed.append(True)
            for text, round_, score in children:
                parents.append(i), texts.append(text), rounds.append(round_), scores.append(score)
                is_seed.append(False)
            keep[i] = p.keep_seeds or bool(children)
        rows = batch.take(pa.array(parents, pa.int64()))
        seed_mask = pa.array(is_seed, pa.bool_())
        columns = {}
        for name in rows.schema.names:
            if name in ("_id", "_parent_id", *self.provides):
                continue
            column = rows.column(name)
            if name == self.text_column:
                column = pa.array([t if t is not None else s for t, s in zip(texts, column.to_pylist())],
                                  column.type)
            elif name != "_ord":  # a new instruction has no seed's input, output or labels
                column = pc.if_else(seed_mask, column, pa.nulls(len(column), column.type))
            columns[name] = column
        columns["synth_round"] = pa.array(rounds, pa.int32())
        columns["synth_model"] = pa.array([None if s else p.llm.model for s in is_seed], pa.string())
        columns["si_rouge_l"] = pa.array(scores, pa.float64())
        columns["_parent_id"] = pa.array([ids[i] for i in parents], pa.string())
        verdict = Verdict(keep, "seed", "a seed instruction (keep_seeds: false)")
        return Result(pa.RecordBatch.from_pydict(columns), verdict)
