"""The command's edges: --dry-run's plan, curate's CLI importing no torch, the learning-rate flip
warning, an existing output, an --expect naming no arm."""

import json
import subprocess
import sys

from curate.ablate.results import _flips


def test_dry_run_prints_the_plan_and_trains_nothing(cli, corpora, ablate_args, tmp_path):
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--dry-run", "--json", seeds=3))
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["runs"] == 6 and plan["steps_per_run"] == 16 and plan["tokens_per_run"] == 8192
    assert plan["flops"] == 6 * plan["parameters"] * 8192 * 6 and plan["measured_tokens_per_s"] > 0
    assert not (tmp_path / "o" / "runs").exists() and not (tmp_path / "o" / "ablation.json").exists()


def test_the_cli_imports_no_torch():
    code = "import sys, curate.cli; sys.exit(1 if {'torch', 'transformers'} & set(sys.modules) else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_ranking_that_flips_with_the_learning_rate_is_a_warning():
    comps = [{"a": "x", "b": "y", "metric": "bpb:t@lr=0.001", "better": "x"},
             {"a": "x", "b": "y", "metric": "bpb:t@lr=0.0001", "better": "y"},
             {"a": "x", "b": "y", "metric": "bpb:u@lr=0.001", "better": "x"},
             {"a": "x", "b": "y", "metric": "bpb:u@lr=0.0001", "better": None}]
    assert _flips(comps, [1e-3, 1e-4]) == ["x vs y on bpb:t: the ranking flips with the learning rate "
                                           "(lr=0.001: x, lr=0.0001: y)"]


def test_existing_output_and_bad_expect_exit_2(cli, corpora, ablate_args, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "mine.txt").write_text("keep me")
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}"))
    assert res.exit_code == 2 and "exists; continue it with --resume" in " ".join(res.output.split())
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--overwrite"))
    assert res.exit_code == 2 and "not an ablation's output" in res.output
    assert (tmp_path / "o" / "mine.txt").read_text() == "keep me"
    res = cli(*ablate_args(corpora, tmp_path / "p", f"a={corpora / 'demo'}", "--expect", "a>b"))
    assert res.exit_code == 2 and "two or more arms" in res.output


def test_an_expectation_naming_no_arm_is_refused_before_training(cli, corpora, ablate_args, tmp_path):
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--expect", "a>c"))
    assert res.exit_code == 2 and "no arm named 'c' (arms: a, b)" in res.output
    assert not (tmp_path / "o" / "runs").exists()


def test_an_unknown_metric_is_refused_before_training(cli, corpora, ablate_args, tmp_path):
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--metric", "bpb:nothing"))
    assert res.exit_code == 2 and "--metric bpb:nothing: not a metric of this ablation (bpb:heldout-a" in res.output
    assert not (tmp_path / "o" / "runs").exists()


def test_arm_names_from_their_paths(tmp_path):
    from curate.ablate.arms import _default_name, parse

    assert parse(["good=/x/demo", "/y/data"]) == [("good", "/x/demo"), (None, "/y/data")]
    assert _default_name("/x/demo/*.jsonl.gz", set()) == "demo"
    assert _default_name("out/quickstart/data/", set()) == "quickstart"
    assert _default_name("recipes/web.yaml", {"web"}) == "web-2"


def test_runs_side_by_side_on_a_gpu_are_refused(cli, corpora, ablate_args, tmp_path):
    """Forked runs would share one CUDA context: on a GPU the runs go one at a time."""
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--device", "cuda", "--jobs", "2"))
    assert res.exit_code == 2 and "--jobs 2: runs go side by side on a CPU only; on cuda one at a time" in " ".join(
        res.output.split())
    assert not (tmp_path / "o" / "runs").exists()
