"""README: the output bytes depend neither on a step's `batch_rows` nor on `input.batch_rows`, nor on
the number of workers. Every operator of the catalog runs here on a small input (three files, so
three tasks) under drawn batch sizes, against a baseline of one batch per task: its data/ and
trace/ files and its funnel must not change, but for what a model computes, which must agree to
its precision (README: the one exception). Two long recipes run on two workers as well.

A new catalog operator must get a case in CASES (or a reason in CANNOT_RUN_HERE), else
test_every_catalog_operator_is_covered fails: the promise stays kept as the catalog grows.
"""

from __future__ import annotations

import functools
import math
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate import recipe, registry
from curate.engine.run.runner import RunOptions, run
from tests.conftest import write_jsonl
from tests.operators.agent import adp_fixtures


@dataclass(frozen=True, eq=False)
class Case:
    """Steps (name, params) over one of the inputs below. Strings in params may name what the
    module sets up (Env): {models}, {tokenizer}, {lists}, {mock_url}."""

    # "text", "vectors" (text with a public embedding column `emb`), "nnetnav" (ADP raw) or "images"
    # (encoded images of several sizes and formats with captions)
    data: str
    steps: tuple[tuple[str, dict], ...]
    needs: tuple[str, ...] = ()  # modules of optional extras the steps import (the case skips without them)
    # Columns a model computes over batches of rows: equal to a relative 1e-5, not to the bit
    # (README: a row's score depends in its last bits on the shape of the batch it was run in).
    model_columns: tuple[str, ...] = ()
    # input.batch_rows and step batch_rows of the one run beside the baseline, for a case whose runs
    # are slow; None: hypothesis draws them.
    one_run: tuple[int, int] | None = None


MOCK_LLM = {"model": "mock", "base_url": "{mock_url}", "api_key_env": "BATCH_INVARIANCE_KEY"}
ADP = Case("nnetnav", (("adp_join", {"source": "nnetnav-live"}), ("adp_convert", {"source": "nnetnav-live"}),
                       ("adp_validate", {}), ("adp_export", {"style": "agentlab", "environment": "nnetnav-live"})))
MODEL_SCORES = Case("text", (("perplexity", {"model": "{models}/gpt2", "batch_size": 4}),
                             ("deita_complexity", {"model": "{models}/gpt2", "batch_size": 4}),
                             ("classifier_score", {"model": "{models}/classifier", "batch_size": 4})),
                    needs=("torch", "transformers"),
                    model_columns=("quality_perplexity", "complexity_deita", "quality_classifier"),
                    one_run=(5, 3))  # each run starts a model worker, which loads torch

CLIP = Case("images", (("clip_score", {"model": "{clip}", "batch_size": 4, "device": "cpu"}),
                       ("clip_score_select", {"fraction": 0.5})),
            needs=("torch", "open_clip"), model_columns=("quality_clip_score",),
            one_run=(5, 3))  # each run starts a model worker, which loads torch

RESPOND = Case("text", (("respond", {"llm": {**MOCK_LLM, "temperature": 0.7}, "n": 3}),
                        ("llm_judge", {"llm": MOCK_LLM}), ("best_of_n", {"score": "quality_llm_judge"})),
               needs=("aiohttp",))

# One case per operator; operators that need the same setup share one (the model scores load
# their models in one model-worker start, the ADP operators follow each other).
CASES: dict[str, Case] = {
    "normalize_text": Case("text", (("normalize_text", {"unicode_form": "NFKC", "lowercase": True}),)),
    "sql_filter": Case("text", (("sql_filter", {"where": "n % 3 <> 0"}),)),
    "select": Case("text", (("select", {"columns": ["text", "n"]}),)),
    "rename": Case("text", (("rename", {"columns": {"n": "number"}}),)),
    "cast": Case("text", (("cast", {"columns": {"n": "float64"}}),)),
    "gopher_quality": Case("text", (("gopher_quality", {"scores": True}),)),
    "c4_quality": Case("text", (("c4_quality", {"scores": True, "min_sentences": 2}),)),
    "fineweb_quality": Case("text", (("fineweb_quality", {"scores": True}),)),
    "language_id": Case("text", (("language_id", {"languages": ["en"], "min_score": 0.5}),), needs=("py3langid",)),
    "url_filter": Case("text", (("url_filter", {"block": {"suffixes": "{lists}/block.txt"}, "drop_missing": True}),)),
    "pii_redact": Case("text", (("pii_redact", {}),)),
    "token_count": Case("text", (("token_count", {"tokenizer": "{tokenizer}"}),), needs=("tokenizers",)),
    "sample": Case("text", (("sample", {"fraction": 0.5}),)),
    "shuffle": Case("text", (("shuffle", {}), ("shuffle", {"window": 4}))),
    "exact_dedup": Case("text", (("exact_dedup", {}),)),
    "containment_dedup": Case("text", (("containment_dedup", {"ngram": 3, "num_perm": 32}),)),
    "minhash_dedup": Case("text", (("minhash_dedup", {"ngram": 3, "bands": 8, "rows_per_band": 2}),)),
    "embed": Case("text", (("embed", {"backend": "hash", "dim": 16}),)),
    "semantic_dedup": Case("vectors", (("semantic_dedup", {"embedding_column": "emb", "k": 3, "eps": 0.2,
                                                           "columns": True}),), needs=("faiss",)),
    "density_prune": Case("vectors", (("density_prune", {"embedding_column": "emb", "k": 3, "fraction": 0.5,
                                                         "neighbors": 2}),), needs=("faiss",)),
    "quality_heuristics": Case("text", (("quality_heuristics", {"ngram_rules": True}),)),
    "complexity_scores": Case("text", (("complexity_scores", {}),)),
    "perplexity": MODEL_SCORES,
    "deita_complexity": MODEL_SCORES,
    "classifier_score": MODEL_SCORES,
    "llm_judge": Case("text", (("llm_judge", {"llm": MOCK_LLM}),), needs=("aiohttp",)),
    "novelty": Case("vectors", (("novelty", {"embedding_column": "emb", "k": 2}),), needs=("faiss",)),
    "dataset_metrics": Case("vectors", (("dataset_metrics", {"embedding_column": "emb", "score_columns": ["score"],
                                                             "sample": 40, "bleu_sample": 10, "clusters": 3}),),
                            needs=("faiss", "sacrebleu")),
    "qdc_select": Case("vectors", (("qdc_select", {"fraction": 0.5, "quality": {"score": 1.0},
                                                   "complexity": {"n": 0.5}, "embedding_column": "emb"}),),
                       needs=("faiss", "scipy")),
    "adp_join": ADP,
    "adp_convert": ADP,
    "adp_validate": ADP,
    "adp_export": ADP,
    "decontaminate": Case("text", (("decontaminate", {"benchmarks": [{"name": "b", "path": "{benchmark}",
                                                                      "columns": ["q", "a"], "id_column": "id"}],
                                                      "ngram": 5}),)),
    "tokenize": Case("text", (("tokenize", {"tokenizer": "{tokenizer}", "eos": 0}),), needs=("tokenizers",)),
    "image_filter": Case("images", (("image_filter", {"min_side": 24, "max_aspect_ratio": 2.0, "decodable": True,
                                                      "min_caption_words": 2}),), needs=("PIL",)),
    "image_cluster_filter": Case("vectors", (("image_cluster_filter", {
        "embedding_column": "emb", "target_embeddings": "{targets}", "k": 4, "niter": 5, "fraction": 0.7,
        "score_column": "score"}),), needs=("faiss",)),
    "caption_class_filter": Case("text", (("caption_class_filter", {"classes": "{lists}/classes.txt"}),)),
    "image_exact_dedup": Case("images", (("image_exact_dedup", {}),), needs=("PIL",)),
    "phash_dedup": Case("images", (("phash_dedup", {"max_distance": 6}),), needs=("PIL", "scipy")),
    "clip_score": CLIP,
    "clip_score_select": CLIP,
    "chunk": Case("text", (("chunk", {"max_tokens": 25}),), needs=("pysbd",)),
    "rephrase": Case("text", (("rephrase", {"llm": MOCK_LLM, "styles": ["medium", "qa"], "ratio": "1:2"}),),
                     needs=("aiohttp",)),
    "url_normalize": Case("text", (("url_normalize", {"date_column": None, "time_column": None}),)),
    "generate_qa": Case("text", (("generate_qa", {"llm": MOCK_LLM, "max_pairs": 3}),), needs=("aiohttp",)),
    "evol_instruct": Case("text", (("evol_instruct", {"llm": MOCK_LLM, "rounds": 2}),), needs=("aiohttp",)),
    "self_instruct": Case("text", (("self_instruct", {"llm": MOCK_LLM, "num_instructions": 6, "max_rounds": 3}),),
                          needs=("aiohttp", "rouge_score")),
    "respond": RESPOND,
    "best_of_n": RESPOND,
}

# Operators this test cannot run, and why.
CANNOT_RUN_HERE: dict[str, str] = {
    "extract_text": "reads an `html` column none of these inputs has; its bytes across workers and batch sizes: "
                    "tests/operators/web/test_extract_text.py::test_output_bytes_independent_of_workers_and_batch_rows",
}

FILE_ROWS = (37, 23, 28)  # three input files, so three tasks (and two workers have work)
LARGEST = max(FILE_ROWS) + 5


def test_every_catalog_operator_is_covered():
    names = set(registry.names())
    assert not set(CASES) & set(CANNOT_RUN_HERE)
    missing = sorted(names - set(CASES) - set(CANNOT_RUN_HERE))
    assert not missing, f"give {missing} a case in CASES (or a reason in CANNOT_RUN_HERE)"
    for name, case in CASES.items():
        assert name in {step for step, _ in case.steps}, f"the case of {name} does not run it"


# --- inputs -------------------------------------------------------------------------------------

WORDS = ("the of and to that have with be river market garden window winter music science history "
         "teacher village morning letter engine bridge forest summer station library kitchen harbor "
         "museum theory number picture mountain question answer student journey").split()
FOREIGN = ["Le comité s'est réuni mardi pour discuter du nouveau budget de l'année prochaine et des écoles.",
           "Der Ausschuss traf sich am Dienstag, um den neuen Haushalt für das kommende Jahr zu besprechen.",
           "El comité se reunió el martes para discutir el nuevo presupuesto del próximo año y las escuelas."]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
    return " ".join(words).capitalize() + "."


def text_rows() -> list[dict]:
    """Web-like documents: most pass the quality rules, some are junk, duplicates, near-duplicates,
    documents contained in larger ones, other languages, PII; a url, an integer and a score."""
    rng = random.Random(7)
    rows: list[dict] = []
    for i in range(sum(FILE_ROWS)):
        kind = i % 10
        if kind == 3 and rows:  # an exact copy of an earlier document
            text = rows[rng.randrange(len(rows))]["text"]
        elif kind == 5 and rows:  # a near-duplicate: one word changed
            words = rows[rng.randrange(len(rows))]["text"].split(" ")
            words[rng.randrange(len(words))] = "changed"
            text = " ".join(words)
        elif kind == 7 and rows:  # contained in a larger one: its first lines
            text = "\n".join(rows[rng.randrange(len(rows))]["text"].split("\n")[:2])
        elif kind == 8:
            text = FOREIGN[i % len(FOREIGN)] * rng.randint(1, 3)
        elif kind == 9:
            text = rng.choice(["click here", "", "Home | About | Contact", "buy now!!! " * 5])
        else:
            lines = [" ".join(_sentence(rng) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(2, 8))]
            if i % 4 == 0:
                lines.append(f"Write to person{i}@example.org or call 555-010-{i:04d} from 10.0.{i}.1.")
            text = "\n".join(lines)
        host = f"{rng.choice(['news', 'blog', 'shop'])}.{rng.choice(['a.com', 'b.org', 'spam.net'])}"
        url = None if i % 11 == 0 else f"https://{host}/{i}"
        rows.append({"text": text, "url": url, "n": i, "score": round(rng.random(), 3)})
    return rows


def write_inputs(root: Path) -> dict[str, Path]:
    """The three inputs as files split in FILE_ROWS (a task each); returns their globs."""
    rows = text_rows()
    starts = [sum(FILE_ROWS[:k]) for k in range(len(FILE_ROWS) + 1)]
    for k in range(len(FILE_ROWS)):
        write_jsonl(root / "text" / f"part{k}.jsonl", rows[starts[k]:starts[k + 1]])

    from curate_operators.embed.embed import Embed

    embed = Embed(Embed.Params(backend="hash", dim=16, on_empty="embed", output_column="emb"))
    table = pa.Table.from_batches([embed.process(pa.RecordBatch.from_pylist(rows))])
    (root / "vectors").mkdir()
    for k in range(len(FILE_ROWS)):
        pq.write_table(table.slice(starts[k], FILE_ROWS[k]), root / "vectors" / f"part{k}.parquet")

    raw = adp_fixtures.load("nnetnav-live", "sample_raw.json") or []
    # Two copies with their own trajectory ids; the files cut through trajectories.
    records = raw + [{**r, "id": f"{r['id']}-copy"} for r in raw]
    write_jsonl(root / "nnetnav" / "part0.jsonl", records[:27])
    write_jsonl(root / "nnetnav" / "part1.jsonl", records[27:])
    (root / "images").mkdir()
    for k in range(len(FILE_ROWS)):
        pq.write_table(pa.Table.from_pylist(image_rows(rows[starts[k]:starts[k + 1]], k)),
                       root / "images" / f"part{k}.parquet")
    return {"text": root / "text" / "*.jsonl", "vectors": root / "vectors" / "*.parquet",
            "nnetnav": root / "nnetnav" / "*.jsonl", "images": root / "images" / "*.parquet"}


def image_rows(rows: list[dict], part: int) -> list[dict]:
    """An encoded image per text row (sizes, shapes and formats vary; one in 13 is not an image),
    with the row's first words as its caption."""
    from tests.curate.io.wds_shards import image_bytes

    out = []
    for i, row in enumerate(rows):
        n = row["n"]
        size = (16 + (n * 7) % 48, 16 + (n * 11) % 40)
        image = b"not an image" if n % 13 == 0 else image_bytes(size, (n % 256, 80, 160), ["JPEG", "PNG"][n % 2])
        out.append({"image": image, "text": " ".join(row["text"].split()[:n % 6]), "n": n})
    return out


class Env:
    """The inputs, and what cases name in their params, made when first named: block lists, a
    tokenizer, tiny local models, a mock LLM server."""

    def __init__(self, root: Path):
        self.root = root
        self.inputs = write_inputs(root)
        self.server = None

    @functools.cached_property
    def lists(self) -> Path:
        (self.root / "lists").mkdir()
        (self.root / "lists" / "block.txt").write_text("spam.net\n")
        (self.root / "lists" / "classes.txt").write_text("river, market\nWindow\ngarden bridge\n")
        return self.root / "lists"

    @functools.cached_property
    def benchmark(self) -> Path:
        """Benchmark items: lines of some input documents (so some are found), and one that is not."""
        lines = [line for row in text_rows()[::9] for line in row["text"].split("\n")[:1]]
        items = [{"q": line, "a": "", "id": k} for k, line in enumerate(lines + ["an item no document holds"])]
        write_jsonl(self.root / "bench.jsonl", items)
        return self.root / "bench.jsonl"

    @functools.cached_property
    def tokenizer(self) -> Path:
        from tokenizers.implementations import ByteLevelBPETokenizer

        from tests.operators.score.tiny_lm import CORPUS

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1)
        bpe.save(str(self.root / "tokenizer.json"))
        return self.root / "tokenizer.json"

    @functools.cached_property
    def targets(self) -> Path:
        """Reference embeddings for image_cluster_filter: some rows' vectors (so some clusters are targets)."""
        import numpy as np

        table = pq.read_table(self.inputs["vectors"].parent)
        emb = table.column("emb").combine_chunks()
        np.save(self.root / "targets.npy", emb.values.to_numpy().reshape(len(emb), -1)[::25])
        return self.root / "targets.npy"

    @functools.cached_property
    def clip(self) -> Path:
        from tests.operators.embed.tiny_clip import build_tiny_clip

        return build_tiny_clip(self.root / "models" / "tiny-clip")

    @functools.cached_property
    def models(self) -> Path:
        from tests.operators.score.tiny_lm import build_tiny_classifier, build_tiny_gpt2

        build_tiny_gpt2(self.root / "models" / "gpt2")
        build_tiny_classifier(self.root / "models" / "classifier", labels=2)
        return self.root / "models"

    @functools.cached_property
    def mock_url(self) -> str:
        from tests.curate.llm.mockkit import RunningMock

        self.server = RunningMock(api_key="k-batch")
        os.environ["BATCH_INVARIANCE_KEY"] = "k-batch"
        return self.server.url

    def __getitem__(self, name: str):  # str.format_map: only the names a value holds are made
        return getattr(self, name)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            del os.environ["BATCH_INVARIANCE_KEY"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    made = Env(tmp_path_factory.mktemp("batch-invariance"))
    try:
        yield made
    finally:
        made.close()


def _fill(value, env: Env):
    if isinstance(value, str):
        return value.format_map(env)
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    return value


def needed(case: Case) -> None:
    """Skip a case whose optional extras are not installed; the ADP one needs ../shared."""
    for module in case.needs:
        pytest.importorskip(module)
    if case.data == "nnetnav":
        adp_fixtures.require()


_runs = iter(range(1 << 30))


def run_case(case: Case, env: Env, input_rows: int | None, step_rows: int | None, workers: int,
             memory_gb: float | None = None) -> dict:
    """Run `case` (in a directory of its own, so that no operator built for another run is
    reused), with the recipe's `memory_gb` if given; returns what must not change: the data/ and
    trace/ files and the manifest's funnel."""
    steps = []
    for name, params in case.steps:
        params = _fill(params, env)
        sized = step_rows and not registry.get(name).batch_rows_param  # shuffle's batch is its window
        steps.append({name: {**params, **({"batch_rows": step_rows} if sized else {})}})
    out = env.root / f"run-{next(_runs)}"
    doc = {"input": {"path": str(env.inputs[case.data]), **({"batch_rows": input_rows} if input_rows else {})},
           "output": {"path": str(out)}, "steps": steps,
           "allow_empty": True,  # a long chain of filters may remove every row: its bytes must still agree
           **({"memory_gb": memory_gb} if memory_gb else {})}
    with mock.patch.dict(os.environ, {"CURATE_CACHE_DIR": str(out / "llm-cache")}):  # fresh: every request is sent
        manifest = run(recipe.load(text=yaml.safe_dump(doc)), RunOptions(workers=workers))
    files: dict[str, object] = {}
    scores: dict[str, dict] = {}
    for p in sorted(p for sub in ("data", "trace") for p in (out / sub).rglob("*") if p.is_file()):
        name = str(p.relative_to(out))
        if case.model_columns and name.startswith("data/"):
            table = pq.read_table(p)
            present = [c for c in case.model_columns if c in table.column_names]
            files[name] = table.drop_columns(present).to_pylist()
            scores[name] = {c: table.column(c).to_pylist() for c in present}
        elif case.model_columns and name.startswith("trace/"):  # removed rows carry the model's scores too
            rows = pq.read_table(p).to_pylist()
            scores[name] = {c: [r["row"].pop(c, None) for r in rows] for c in case.model_columns}
            files[name] = rows
        else:
            files[name] = p.read_bytes()
    shutil.rmtree(out)
    funnel = _funnel([s.model_dump(exclude_unset=True) for s in manifest.steps])
    return {"funnel": funnel, "files": files, "scores": scores}


# How an LLM step got its answers (from its request cache, or asked once for several rows of
# a batch), not what they are: these counts depend on the batches by design; so do the bytes a
# fit's work files took, and its seconds.
RUN_ACCOUNTING = ("cache_hits", "cache_misses", "duplicates", "tokens_in", "tokens_out", "errors_", "work_bytes",
                  "fit_seconds")


def _funnel(value):
    """The manifest's figures less the time things took and the LLM request accounting."""
    if isinstance(value, dict):
        return {k: _funnel(v) for k, v in value.items() if k != "seconds" and not k.startswith(RUN_ACCOUNTING)}
    if isinstance(value, list):
        return [_funnel(v) for v in value]
    return value


def _close(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x == y or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-5))
                                    for x, y in zip(a, b))


def differences(expected: dict, got: dict) -> str:
    """What differs, readably ("" when nothing does): the funnel, or the first differing row of
    each differing file."""
    if expected["funnel"] != got["funnel"]:
        return f"funnel {got['funnel']} != {expected['funnel']}"
    lines = []
    for name in sorted(set(expected["files"]) | set(got["files"])):
        a, b = expected["files"].get(name), got["files"].get(name)
        if a is None or b is None:
            lines.append(f"{name}: only in {'the run' if a is None else 'the baseline'}")
        elif a != b:
            ta, tb = (x if isinstance(x, list) else pq.read_table(pa.BufferReader(x)).to_pylist() for x in (a, b))
            diff = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
            if diff == max(len(ta), len(tb)):
                lines.append(f"{name}: the same rows in other bytes")
                continue
            x, y = (t[diff] if diff < len(t) else {} for t in (ta, tb))
            changed = {k: (str(y.get(k))[:200], str(x.get(k))[:200]) for k in x.keys() | y.keys() if x.get(k) != y.get(k)}
            lines.append(f"{name}: {len(tb)} rows (baseline {len(ta)}); row {diff} differs in (run, baseline): {changed}")
        for column, values in expected["scores"].get(name, {}).items():
            if not _close(values, got["scores"].get(name, {}).get(column, [])):
                lines.append(f"{name}: {column} differs beyond rounding")
    return "\n".join(lines)


_baselines: dict[str, dict] = {}


def baseline(case_name: str, env: Env) -> dict:
    """The case with the default batch sizes (8192 rows: one batch per task), one worker."""
    if case_name not in _baselines:
        _baselines[case_name] = run_case(CASES[case_name], env, None, None, 1)
    return _baselines[case_name]


def _distinct_cases() -> list[str]:
    """One operator name per distinct case (cases shared by several operators run once)."""
    seen, names = set(), []
    for name, case in CASES.items():
        if id(case) not in seen:
            seen.add(id(case))
            names.append(name)
    return names


rows = st.integers(1, LARGEST)


@pytest.mark.parametrize("name", _distinct_cases())
def test_output_bytes_do_not_depend_on_batch_sizes(name, env):
    case = CASES[name]
    needed(case)
    expected = baseline(name, env)

    def check(input_rows: int, step_rows: int | None) -> None:
        diff = differences(expected, run_case(case, env, input_rows, step_rows, 1))
        assert not diff, f"{name}: input.batch_rows={input_rows}, step batch_rows={step_rows} changed the output:\n{diff}"

    if case.one_run:
        check(*case.one_run)
        return

    @settings(max_examples=2, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(input_rows=rows, step_rows=st.none() | rows)
    @example(input_rows=1, step_rows=None)
    @example(input_rows=10 * LARGEST, step_rows=1)
    def drawn(input_rows, step_rows):
        check(input_rows, step_rows)

    drawn()


# Two workers spawn processes (seconds each run), so the worker count is checked on two long
# recipes rather than per operator: every text operator that chains (CPU and LLM steps, embed
# and each Global, which fits with parallel pieces), and the ADP steps.
TEXT_PIPELINE = Case("text", tuple(step for name in (
    "normalize_text", "pii_redact", "url_filter", "language_id", "quality_heuristics", "complexity_scores",
    "token_count", "chunk", "shuffle", "sample", "exact_dedup", "minhash_dedup", "containment_dedup", "embed")
    for step in CASES[name].steps) + (
    ("semantic_dedup", {"k": 3, "eps": 0.2}), ("novelty", {"k": 2}),
    ("dataset_metrics", {"embedding_column": "_embedding", "sample": 40, "bleu_sample": 10, "clusters": 3}),
    ("qdc_select", {"fraction": 0.9, "quality": {"quality_heuristic": 1.0}}),
    ("density_prune", {"k": 3, "fraction": 0.9, "neighbors": 2})) + tuple(step for name in (
    "llm_judge", "rephrase", "c4_quality", "fineweb_quality", "sql_filter", "cast", "rename")
    for step in CASES[name].steps) + (("select", {"columns": ["text", "number"]}),) + CASES["gopher_quality"].steps,
    needs=tuple(sorted({module for case in CASES.values() if case is not MODEL_SCORES and case.data == "text"
                        for module in case.needs} | {"faiss", "sacrebleu", "scipy"})))
PIPELINES = {"text": TEXT_PIPELINE, "adp": ADP}


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_output_bytes_do_not_depend_on_the_worker_count_or_the_memory_budget(pipeline, env):
    """...nor on whether the Global fits hold their state in memory or spill it (a budget so small
    that every fit takes its on-disk path)."""
    case = PIPELINES[pipeline]
    needed(case)
    expected = run_case(case, env, None, None, 1)
    diff = differences(expected, run_case(case, env, 5, 3, 2, memory_gb=1e-9))
    assert not diff, (f"{pipeline}: two workers (input.batch_rows=5, step batch_rows=3) and memory_gb 1e-9 changed "
                      f"the output:\n{diff}")
