"""`curate ablate` end to end on a micro model: better data ranks better with a significant paired
result and passes the --expect gate; the same data is "no difference"; the same command gives the
same losses; a killed ablation resumed gives the same numbers; arms as a run directory, a glob, a
recipe and --recipe; unreadable eval files and tokenizers exit 2 naming them."""

import json

import pytest

import curate.ablate.train as train_module


def result(out):
    return json.loads((out / "ablation.json").read_text())


def test_better_data_is_ranked_better_beyond_seed_noise(cli, corpora, ablate_args, tmp_path):
    out = tmp_path / "o"
    res = cli(*ablate_args(corpora, out, f"good={corpora / 'demo'}", f"junk={corpora / 'junk.jsonl'}",
                           "--eval-text", corpora / "eval.txt", "--expect", "good>junk", tokens=16384, seeds=3))
    assert res.exit_code == 0, res.output
    r = result(out)
    assert r["primary_metric"] == "bpb:eval"
    assert [a["name"] for a in r["arms"]] == ["good", "junk"] and all(a["tokens"] == 16384 for a in r["arms"])
    assert all(len(a["seeds"]) == 3 and len(a["seeds"][0]["losses"]) == 32 for a in r["arms"])
    good, junk = r["arms"]
    assert good["mean"]["bpb:eval"] < junk["mean"]["bpb:eval"]
    c = next(c for c in r["comparisons"] if c["metric"] == "bpb:eval")
    assert (c["a"], c["b"], c["better"]) == ("good", "junk", "good")
    assert c["diff"] > 0 and c["p_value"] < 0.05 and c["bootstrap"]["low"] > 0
    assert "good better than junk on bpb:eval" in res.stdout
    assert (out / "ablation.html").read_text().count("<polyline") == 2
    assert (out / "arms" / "good" / "tokens.npy").is_file() and (out / "arms" / "good" / "tokens-seed-1.npy").is_file()
    # The gate the other way round fails (exit 1); --resume reuses the finished runs.
    res = cli(*ablate_args(corpora, out, f"good={corpora / 'demo'}", f"junk={corpora / 'junk.jsonl'}",
                           "--eval-text", corpora / "eval.txt", "--expect", "junk>good", "--resume",
                           tokens=16384, seeds=3))
    assert res.exit_code == 1 and "expectation failed" in res.output
    assert result(out)["comparisons"] == r["comparisons"]


def test_same_data_twice_is_no_difference_and_runs_are_deterministic(cli, corpora, ablate_args, tmp_path):
    glob = str(corpora / "demo" / "*.jsonl.gz")
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={glob}", f"b={corpora / 'demo'}"))
    assert res.exit_code == 0, res.output
    r = result(tmp_path / "o")
    a, b = r["arms"]
    assert [s["losses"] for s in a["seeds"]] == [s["losses"] for s in b["seeds"]]  # glob = directory
    assert all(c["better"] is None and "no difference beyond seed noise" in c["verdict"] for c in r["comparisons"])
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={glob}", f"b={corpora / 'demo'}", "--overwrite"))
    assert res.exit_code == 0, res.output
    again = result(tmp_path / "o")
    assert [s["losses"] for s in again["arms"][0]["seeds"]] == [s["losses"] for s in a["seeds"]]  # bit for bit
    assert again["arms"][0]["seeds"][0]["metrics"] == a["seeds"][0]["metrics"]


def test_runs_side_by_side_give_the_numbers_of_runs_one_after_another(cli, corpora, ablate_args, tmp_path):
    arms = (f"good={corpora / 'demo'}", f"junk={corpora / 'junk.jsonl'}")
    assert cli(*ablate_args(corpora, tmp_path / "one", *arms, "--jobs", "1")).exit_code == 0
    res = cli(*ablate_args(corpora, tmp_path / "two", *arms, "--jobs", "2"))
    assert res.exit_code == 0, res.output
    one, two = result(tmp_path / "one"), result(tmp_path / "two")
    assert (one["settings"]["jobs"], two["settings"]["jobs"]) == (1, 2)
    for key in ("losses", "metrics"):
        assert [s[key] for a in one["arms"] for s in a["seeds"]] == [s[key] for a in two["arms"] for s in a["seeds"]]


def test_killed_ablation_resumes_to_the_same_numbers(cli, corpora, ablate_args, tmp_path, monkeypatch):
    # --jobs 1: the runs in this process, where the patched lr_at below stops the second one.
    arms = (f"good={corpora / 'demo'}", f"junk={corpora / 'junk.jsonl'}", "--checkpoint-every", "4", "--jobs", "1")
    assert cli(*ablate_args(corpora, tmp_path / "whole", *arms, seeds=1)).exit_code == 0
    real, calls = train_module.lr_at, []

    def killed(step, steps, spec):
        calls.append(step)
        if len(calls) == 16 + 6:  # the second run (junk), at step 6: after its checkpoint at step 4
            raise KeyboardInterrupt(2)
        return real(step, steps, spec)

    monkeypatch.setattr(train_module, "lr_at", killed)
    res = cli(*ablate_args(corpora, tmp_path / "cut", *arms, seeds=1))
    assert res.exit_code != 0 and not (tmp_path / "cut" / "ablation.json").exists()
    assert (tmp_path / "cut" / "runs" / "junk" / "seed-0" / "checkpoint.pt").is_file()
    assert (tmp_path / "cut" / "runs" / "good" / "seed-0" / "result.json").is_file()
    monkeypatch.setattr(train_module, "lr_at", real)
    res = cli(*ablate_args(corpora, tmp_path / "cut", *arms, "--resume", seeds=1))
    assert res.exit_code == 0, res.output
    whole, cut = result(tmp_path / "whole"), result(tmp_path / "cut")
    for a, b in zip(whole["arms"], cut["arms"]):
        assert a["seeds"][0]["losses"] == b["seeds"][0]["losses"]
        assert a["seeds"][0]["metrics"] == b["seeds"][0]["metrics"]


def test_arms_as_run_directory_and_recipe(cli, corpora, ablate_args, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: r\ninput: {{path: '{corpora / 'demo'}/*.jsonl.gz', text_column: text}}\n"
                      f"output: {{path: '{tmp_path / 'run'}'}}\nsteps:\n  - exact_dedup: {{}}\n")
    assert cli("run", recipe, "-w", "1", "--no-report").exit_code == 0
    res = cli(*ablate_args(corpora, tmp_path / "o", tmp_path / "run", f"recipe={recipe}", "-w", "1", seeds=1))
    assert res.exit_code == 0, res.output
    r = result(tmp_path / "o")
    assert [(a["name"], a["kind"]) for a in r["arms"]] == [("run", "run"), ("recipe", "recipe")]
    assert r["arms"][1]["paths"] == [str(tmp_path / "o" / "arms" / "recipe" / "run" / "data")]
    # The same recipe's output from the run directory and from the recipe run: the same sample.
    assert r["arms"][0]["seeds"][0]["losses"] == r["arms"][1]["seeds"][0]["losses"]
    res = cli(*ablate_args(corpora, tmp_path / "o2", "--recipe", recipe, "-w", "1", seeds=1))
    assert res.exit_code == 0, res.output
    assert [a["name"] for a in result(tmp_path / "o2")["arms"]] == ["input", "output"]


@pytest.mark.parametrize("extra, named", [
    (["--eval-mc", "nowhere.jsonl"], "--eval-mc nowhere.jsonl: cannot read it"),
    (["--eval-text", "nowhere.txt"], "--eval-text nowhere.txt: not found"),
    (["--tokenizer", "no/such-tokenizer"], "--tokenizer no/such-tokenizer: cannot load it"),
])
def test_unreadable_inputs_exit_2_naming_them(cli, corpora, ablate_args, tmp_path, extra, named):
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}", *extra))
    assert res.exit_code == 2
    assert named in " ".join(res.output.split()) and "Traceback" not in res.output


def test_a_broken_eval_file_and_a_damaged_tokenizer(cli, corpora, ablate_args, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": "a", "choices": ["x"], "gold": 3}\n')
    res = cli(*ablate_args(corpora, tmp_path / "o", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--eval-mc", bad))
    assert res.exit_code == 2 and f"--eval-mc {bad}, line 1" in " ".join(res.output.split())
    broken = tmp_path / "tok" / "tokenizer.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    res = cli(*ablate_args(corpora, tmp_path / "o2", f"a={corpora / 'demo'}", f"b={corpora / 'junk.jsonl'}",
                           "--tokenizer", broken.parent))
    assert res.exit_code == 2 and "cannot load it" in res.output and "Traceback" not in res.output
