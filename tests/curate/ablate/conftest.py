"""Shared corpora for the ablate tests: English-like demo documents (curate demo) and random
printable characters as long as them (junk), a clean eval text, a micro model config."""

import gzip
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

PRINTABLE = [chr(c) for c in range(32, 127)]
MICRO = {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 2, "intermediate_size": 64, "tie_word_embeddings": False}


@pytest.fixture(scope="session")
def corpora(tmp_path_factory) -> Path:
    from curate.demo import generate

    root = tmp_path_factory.mktemp("ablate")
    generate(root / "demo", docs=300, files=2, seed=0, workers=1)
    rows = [json.loads(line) for p in sorted((root / "demo").glob("*.jsonl.gz")) for line in gzip.open(p, "rt")]
    rng = random.Random(0)
    with open(root / "junk.jsonl", "w") as f:
        for r in rows:  # random printable characters, as many as the document has
            f.write(json.dumps({"text": "".join(rng.choices(PRINTABLE, k=len(r["text"])))}) + "\n")
    generate(root / "evalsrc", docs=60, files=1, seed=7, workers=1)
    clean = [json.loads(line)["text"] for p in (root / "evalsrc").glob("*.jsonl.gz") for line in gzip.open(p, "rt")
             if json.loads(line)["planted"] is None]
    (root / "eval.txt").write_text("\n\n".join(clean[:20]), encoding="utf-8")
    (root / "micro.json").write_text(json.dumps(MICRO))
    return root


@pytest.fixture
def ablate_args():
    """A fast ablation's arguments: the micro model, 64-token sequences, batch 8, one thread, the
    runs one after another in this process (--jobs 1: spawning a process per run, each importing
    torch, cost a test 10-20 s; test_runs_side_by_side_* gives --jobs 2, which overrides it)."""
    return fast


def fast(root: Path, out: Path, *more, tokens=8192, seeds=2):
    return ["ablate", "--jobs", 1, *more, "-o", out, "--tokens", tokens, "--model", root / "micro.json", "--seeds", seeds,
            "--seq-len", 64, "--batch", 8, "--lr", "3e-3", "--threads", 1, "--eval-tokens", 3000]
