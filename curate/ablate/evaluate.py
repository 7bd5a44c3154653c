"""Evaluation of a trained proxy: bits per byte on held-out text and multiple-choice likelihoods.

Bits per byte (lm-evaluation-harness's loglikelihood_rolling, corpus form): the documents are
scored as one stream, EOS before each, in consecutive non-overlapping windows of seq_len tokens,
each window conditioned on the token before it; every document token is predicted once and the
EOS predictions are not counted. bpb = -sum(log p) / (UTF-8 bytes x ln 2), per document too
(for the bootstrap over documents).

Multiple choice (lm-evaluation-harness's loglikelihood): for each choice, context + " " + choice
is encoded once and split at the length of the context's encoding; the context starts after an
EOS (a document start, as in training); ll_i = sum of the choice tokens' natural log-probs.
acc = [argmax ll_i == gold]; acc_norm = [argmax ll_i / chars_i == gold]; gold_prob (DataDecide's
NORM_CORRECT_PROB per character) = p_gold / sum_i p_i with p_i = exp(ll_i / chars_i): continuous,
the signal a small proxy gives when its accuracy is at chance. Files: HellaSwag, ARC and PIQA
JSONL as published, or `{"context", "choices", "gold"}` per line.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curate.errors import CurateError


@dataclass
class TextSet:
    name: str
    stream: np.ndarray  # EOS d1 EOS d2 ...
    doc_of: np.ndarray  # per stream position: the document it belongs to, -1 for EOS
    bytes: np.ndarray  # UTF-8 bytes per document


def text_set(name: str, texts: list[str], tok, max_tokens: int) -> TextSet:
    """The documents as a stream, up to `max_tokens` document tokens (whole documents; the first is
    cut if it alone is longer)."""
    nbytes: list[int]
    parts, owners, nbytes, got = [], [], [], 0
    for t in texts:
        full = tok.encode([t])[0]
        if got and got + len(full) > max_tokens:
            break
        ids = full[:max_tokens]
        text_bytes = (
            len(t.encode("utf-8"))
            if len(ids) == len(full)
            else len(tok.op.tokenizer.decode([int(x) for x in ids]).encode("utf-8"))
        )
        parts += [np.array([tok.eos_id]), ids]
        owners += [np.array([-1]), np.full(len(ids), len(nbytes))]
        nbytes.append(text_bytes)
        got += len(ids)
    if not nbytes:
        raise CurateError(f"eval text {name}: no documents")
    return TextSet(name, np.concatenate(parts).astype(np.int64), np.concatenate(owners), np.array(nbytes, np.int64))


def doc_nll(model, ts: TextSet, seq_len: int, device: str, batch: int = 16) -> np.ndarray:
    """Sum of -log p (nats) of each document's tokens."""
    import torch
    import torch.nn.functional as F

    n = len(ts.stream) - 1  # targets are stream[1:]
    starts = list(range(0, n, seq_len))
    nll = np.zeros(len(ts.bytes), np.float64)
    with torch.no_grad():
        for b in range(0, len(starts), batch):
            group = starts[b : b + batch]
            length = min(seq_len, n - group[0]) if len(group) == 1 else seq_len
            x = np.zeros((len(group), length), np.int64)
            y = np.full((len(group), length), -100, np.int64)
            owner = np.full((len(group), length), -1, np.int64)
            for r, s in enumerate(group):
                e = min(s + seq_len, n)
                x[r, : e - s] = ts.stream[s:e]
                y[r, : e - s] = ts.stream[s + 1 : e + 1]
                owner[r, : e - s] = ts.doc_of[s + 1 : e + 1]
            logits = model(input_ids=torch.from_numpy(x).to(device)).logits.float()
            lp = (
                F.cross_entropy(
                    logits.reshape(-1, logits.size(-1)),
                    torch.from_numpy(y).reshape(-1).to(device),
                    reduction="none",
                    ignore_index=-100,
                )
                .double()
                .cpu()
                .numpy()
            )
            own = owner.reshape(-1)
            mask = own >= 0
            nll += np.bincount(own[mask], weights=lp[mask], minlength=len(nll))
    return nll


def bpb(nll: np.ndarray, nbytes: np.ndarray) -> float:
    return float(nll.sum() / (nbytes.sum() * math.log(2)))


# ---- multiple choice -------------------------------------------------------------------------


@dataclass
class Item:
    context: str
    choices: list[str]  # as scored (with the delimiter)
    gold: int


def _hellaswag_clean(text: str) -> str:
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def parse_item(row: dict, where: str) -> Item:
    """One row of a HellaSwag, ARC, PIQA or {context, choices, gold} file, as lm-eval builds it."""
    try:
        if "endings" in row and "ctx_a" in row:
            ctx = row["activity_label"] + ": " + row["ctx_a"] + " " + str(row.get("ctx_b", "")).capitalize()
            return Item(_hellaswag_clean(ctx), [" " + _hellaswag_clean(e) for e in row["endings"]], int(row["label"]))
        if "question" in row and isinstance(row.get("choices"), dict) and "answerKey" in row:
            labels = row["choices"]["label"]
            return Item(
                f"Question: {row['question']}\nAnswer:",
                [" " + t for t in row["choices"]["text"]],
                labels.index(row["answerKey"]),
            )
        if "goal" in row and "sol1" in row:
            return Item(f"Question: {row['goal']}\nAnswer:", [" " + row["sol1"], " " + row["sol2"]], int(row["label"]))
        if "context" in row and "choices" in row and "gold" in row:
            choices = [c if c.startswith((" ", "\n")) or not row["context"] else " " + c for c in row["choices"]]
            gold = int(row["gold"])
            if not 0 <= gold < len(choices):
                raise ValueError(f"gold {gold} is not a choice index (0..{len(choices) - 1})")
            return Item(row["context"], choices, gold)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CurateError(f"{where}: not a multiple-choice item: {type(e).__name__}: {e}") from None
    raise CurateError(
        f"{where}: not a HellaSwag, ARC, PIQA or {{context, choices, gold}} item (keys: {', '.join(sorted(row))})"
    )


def read_items(path: str) -> list[Item]:
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CurateError(f"--eval-mc {path}: cannot read it: {e}") from None
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise CurateError(f"--eval-mc {path}, line {n}: not JSON: {e}") from None
        if not isinstance(row, dict):
            raise CurateError(f"--eval-mc {path}, line {n}: not a JSON object")
        items.append(parse_item(row, f"--eval-mc {path}, line {n}"))
    if not items:
        raise CurateError(f"--eval-mc {path}: no items")
    return items


def choice_logprobs(model, items: list[Item], tok, seq_len: int, device: str, batch: int = 32) -> list[np.ndarray]:
    """ll_i of every choice of every item (natural log). The choices go through the model in
    batches, padded on the right (a causal model's earlier positions do not see the padding)."""
    import torch
    import torch.nn.functional as F

    seqs: list[tuple[np.ndarray, int]] = []  # (EOS + context + choice, truncated on the left; choice tokens)
    for item in items:
        ctx = tok.encode([item.context])[0] if item.context else np.zeros(0, np.int64)
        for whole in tok.encode([item.context + choice for choice in item.choices]):
            cont = len(whole) - len(ctx)
            seqs.append((np.concatenate([[tok.eos_id], whole])[-(seq_len + 1) :], min(cont, seq_len)))
    lls = np.zeros(len(seqs), np.float64)
    with torch.no_grad():
        for b in range(0, len(seqs), batch):
            group = seqs[b : b + batch]
            width = max(len(ids) for ids, _ in group) - 1
            x = np.zeros((len(group), width), np.int64)
            for r, (ids, _) in enumerate(group):
                x[r, : len(ids) - 1] = ids[:-1]
            logp = F.log_softmax(model(input_ids=torch.from_numpy(x).to(device)).logits.float(), -1).double().cpu()
            for r, (ids, cont) in enumerate(group):
                if cont <= 0:
                    continue
                positions = torch.arange(len(ids) - 1 - cont, len(ids) - 1)
                targets = torch.from_numpy(ids[-cont:].astype(np.int64))
                lls[b + r] = float(logp[r, positions, targets].sum())
    out, at = [], 0
    for item in items:
        out.append(lls[at : at + len(item.choices)])
        at += len(item.choices)
    return out


def mc_metrics(items: list[Item], lls: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-item acc, acc_norm and gold_prob."""
    acc, acc_norm, gold_prob = [], [], []
    for item, ll in zip(items, lls):
        chars = np.array([max(1, len(c.lstrip(" "))) for c in item.choices], np.float64)
        acc.append(float(np.argmax(ll) == item.gold))
        per_char = ll / chars
        acc_norm.append(float(np.argmax(per_char) == item.gold))
        p = np.exp(per_char - per_char.max())
        gold_prob.append(float(p[item.gold] / p.sum()))
    return {"acc": np.array(acc), "acc_norm": np.array(acc_norm), "gold_prob": np.array(gold_prob)}
