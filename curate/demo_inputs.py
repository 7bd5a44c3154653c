"""Demo inputs of the recipes that the demo corpus does not feed as it is (`curate demo --for
RECIPE DIR`): offline, from the demo corpus's own language (curate/demo_language.py), the same bytes for
the same seed.

- sft-qdc: `DIR/sft.jsonl`, instruction/response pairs with an `id`: questions answered in a few
  sentences, some spam answers (repeated words) and one question asked several ways.
- decontaminate: `DIR/gsm8k.jsonl` and `DIR/mmlu.jsonl`, the benchmarks the recipe names:
  gsm8k's items are slices of some documents of the demo corpus (so they are found; the corpus
  is generated first where it is missing), mmlu's appear nowhere.
- wrap: `DIR/web.jsonl`, a few web-like documents (`id`, `text`) to rephrase.
- ablate: `DIR/crawl/part-NNNN.jsonl.gz`, the demo corpus as a raw crawl is (half its rows junk of
  the planted low-quality kinds, a fifth copies of a small pool of popular documents; the default
  demo has a tenth and 7%), to compare the quickstart's output with its input by training
  (`curate ablate`), and `DIR/heldout.jsonl`, clean held-out text of the same language and
  lengths (documents of another seed, none with a defect) to score both on.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from curate.errors import CurateError

RECIPES = ("sft-qdc", "decontaminate", "wrap", "ablate")

# `--for ablate`: a raw crawl's defect rates (see crawl()).
CRAWL_LOW_QUALITY_RATE = 0.5
CRAWL_POOL_REFERENCE_RATE = 0.2
CRAWL_POOL_FRACTION = 0.01
HELDOUT_DOCS = 400


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
    tmp.replace(path)
    return path


def sft(directory: str | Path, rows: int = 200, seed: int = 0) -> list[Path]:
    from curate.demo_language import languages

    lang, _ = languages()
    rng = np.random.default_rng(seed)
    questions = [q.rstrip(".?!,") + "?" for q in lang.texts(rng, rng.integers(6, 16, rows))]
    answers = lang.texts(rng, rng.integers(20, 120, rows))
    out = []
    for i, (q, a) in enumerate(zip(questions, answers)):
        if i % 20 == 7:  # spam: one word over and over
            a = " ".join([a.split()[0]] * 40)
        elif i % 20 == 13:  # an earlier question asked again, a little differently
            q = questions[i - 13 + (i // 20) % 5].rstrip("?") + " please?"
        out.append({"id": f"sft-{i:05d}", "instruction": q, "response": a})
    return [_write_jsonl(Path(directory) / "sft.jsonl", out)]


def benchmarks(directory: str | Path, corpus: str | Path = "data/demo") -> list[Path]:
    from curate.demo import generate

    corpus = Path(corpus)
    files = sorted(corpus.glob("*.jsonl.gz"))
    if not files:
        files = generate(corpus)
    used = []
    for f in files:
        with gzip.open(f, "rt") as lines:
            for line in lines:
                row = json.loads(line)
                if isinstance(row.get("text"), str) and len(row["text"].split()) > 40 and not row.get("planted"):
                    used.append(row["text"].split())
                    if len(used) == 3:
                        break
        if len(used) == 3:
            break
    if not used:
        raise CurateError(f"{corpus} holds no document of more than 40 words to make benchmark items from")
    directory = Path(directory)
    gsm8k = [{"question": " ".join(w[5:20]), "answer": " ".join(w[20:30])} for w in used]
    mmlu = [{"id": f"mmlu-{i}", "question": f"zebra quokka {i} axolotl narwhal", "answer": "B"} for i in range(4)]
    return [_write_jsonl(directory / "gsm8k.jsonl", gsm8k), _write_jsonl(directory / "mmlu.jsonl", mmlu)]


def web(directory: str | Path, docs: int = 20, seed: int = 0) -> list[Path]:
    from curate.demo_language import languages

    lang, _ = languages()
    rng = np.random.default_rng(seed)
    texts = lang.texts(rng, rng.integers(80, 500, docs))
    rows = [{"id": f"web-{i:04d}", "text": t} for i, t in enumerate(texts)]
    return [_write_jsonl(Path(directory) / "web.jsonl", rows)]


def crawl(directory: str | Path, docs: int = 20_000, files: int = 8, seed: int = 0, workers: int = 1) -> list[Path]:
    """`DIR/crawl/`: the demo corpus at a raw crawl's defect rates. Junk and copies are a small
    share of the default demo's tokens (about 7% and 5%), too little to change what a proxy model
    trained on a few hundred thousand tokens learns; here junk is about 30% of the bytes and each
    pooled document is copied about 20 times. `DIR/heldout.jsonl`: HELDOUT_DOCS clean documents of
    another seed (`id`, `text`)."""
    from curate.demo import clean_documents, generate

    directory = Path(directory)
    paths = generate(
        directory / "crawl",
        docs=docs,
        files=files,
        seed=seed,
        workers=workers,
        low_quality_rate=CRAWL_LOW_QUALITY_RATE,
        pool_reference_rate=CRAWL_POOL_REFERENCE_RATE,
        pool_fraction=CRAWL_POOL_FRACTION,
    )
    rows = [{"id": f"heldout-{i:04d}", "text": t} for i, t in enumerate(clean_documents(HELDOUT_DOCS, seed + 1))]
    return paths + [_write_jsonl(directory / "heldout.jsonl", rows)]


def write(
    recipe: str,
    directory: str | Path,
    *,
    seed: int = 0,
    corpus: str | Path = "data/demo",
    docs: int = 20_000,
    files: int = 8,
    workers: int = 1,
) -> list[Path]:
    """The demo input of `recipe` (one of RECIPES) written under `directory`; the files written."""
    if recipe == "sft-qdc":
        return sft(directory, seed=seed)
    if recipe == "decontaminate":
        return benchmarks(directory, corpus)
    if recipe == "wrap":
        return web(directory, seed=seed)
    if recipe == "ablate":
        return crawl(directory, docs=docs, files=files, seed=seed, workers=workers)
    raise CurateError(f"no demo input for {recipe!r}: --for takes {', '.join(RECIPES)}")
