"""Mistakes a new user makes in a recipe, each refused by `curate validate` (and `run`) before any
worker starts, with exit 2, no traceback, and the message printed here word for word."""

import os

import pytest

from tests.conftest import write_jsonl


def recipe(tmp_path, steps: str) -> str:
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "the cat sat on the mat", "url": "http://a.org/x"}])
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                 f"steps:\n{steps}")
    return str(p)


def refused(cli, path: str, *args: str) -> str:
    """The one error line `curate validate` prints (exit 2, no traceback)."""
    res = cli("validate", path, *args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and res.stdout == ""
    return res.stderr.strip()


@pytest.fixture
def in_tmp(tmp_path):
    """Relative paths in recipes are relative to the current directory."""
    before = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(before)


def test_a_missing_tokenizer_path_is_named_with_its_parameter(cli, in_tmp):
    r = recipe(in_tmp, "  - token_count: {tokenizer: ./tok/tokenizer.json}\n")
    assert refused(cli, r, "--no-data") == (
        f"error: steps[0].token_count.tokenizer: ./tok/tokenizer.json does not exist "
        f"({in_tmp / 'tok' / 'tokenizer.json'}); it is taken as a local path because it starts with ./ (a "
        f"Hugging Face hub id, org/name, would be looked up in the local cache instead)")
    res = cli("run", r, "-w", "1")  # before any worker starts: nothing is written
    assert res.exit_code == 2 and "steps[0].token_count.tokenizer" in res.stderr
    assert not (in_tmp / "out").exists()


@pytest.mark.parametrize("steps, where, value, why", [
    ("  - perplexity: {model: models/gpt2/final}\n", "steps[0].perplexity.model", "models/gpt2/final",
     "it has more than one /"),
    ("  - classifier_score: {model: /nonexistent/edu-classifier}\n", "steps[0].classifier_score.model",
     "/nonexistent/edu-classifier", "it starts with /"),
    ("  - embed: {model: minilm.onnx}\n", "steps[0].embed.model", "minilm.onnx", "it ends in a file extension"),
    ("  - rephrase: {styles: [qa], llm: {backend: transformers, model: ./ckpt/qwen}}\n",
     "steps[0].rephrase.llm.model", "./ckpt/qwen", "it starts with ./"),
])
def test_missing_model_and_checkpoint_paths_are_refused(cli, in_tmp, steps, where, value, why):
    assert refused(cli, recipe(in_tmp, steps)) == (
        f"error: {where}: {value} does not exist ({(in_tmp / value).resolve()}); it is taken as a local path "
        f"because {why} (a Hugging Face hub id, org/name, would be looked up in the local cache instead)")


@pytest.mark.parametrize("steps, where, value", [
    ("  - language_id: {backend: fasttext, model_path: lid176}\n", "steps[0].language_id.model_path", "lid176"),
    ("  - url_filter: {block: {domains: blocked.txt}}\n", "steps[0].url_filter.block.domains", "blocked.txt"),
])
def test_missing_files_that_can_only_be_files_are_refused(cli, in_tmp, steps, where, value):
    assert refused(cli, recipe(in_tmp, steps)) == f"error: {where}: {value} does not exist ({in_tmp / value})"


@pytest.mark.parametrize("steps", [
    "  - token_count: {tokenizer: org/tokenizer-name}\n",  # a hub id: looked up in the cache when loaded
    "  - embed: {backend: open_clip, model: 'hf-hub:org/clip', pretrained: random}\n",  # a scheme, not a path
    "  - rephrase: {styles: [qa], llm: {model: accounts/acme/models/llama, base_url: 'http://127.0.0.1:1/v1'}}\n",
])
def test_hub_ids_schemes_and_endpoint_model_names_are_not_local_paths(cli, in_tmp, steps):
    res = cli("validate", recipe(in_tmp, steps), "--no-data")
    assert res.exit_code == 0, res.output


def test_paths_that_exist_pass_whatever_their_form(cli, in_tmp):
    (in_tmp / "org").mkdir()
    (in_tmp / "org" / "tok").mkdir()
    (in_tmp / "blocked.txt").write_text("a.org\n")
    r = recipe(in_tmp, "  - token_count: {tokenizer: org/tok}\n  - url_filter: {block: {domains: blocked.txt}}\n")
    assert cli("validate", r, "--no-data").exit_code == 0


@pytest.mark.parametrize("steps, where, key, value, braces", [
    ("  - minhash_dedup: {}\n    threshold: 0.8\n", "steps[0]", "threshold", "0.8", True),
    ("  - exact_dedup\n  - minhash_dedup:\n    threshold: 0.8\n", "steps[1]", "threshold", "0.8", False),
    ("  - exact_dedup:\n    columns: [url]\n", "steps[0]", "columns", '["url"]', False),
])
def test_a_parameter_written_beside_its_operator_is_named(cli, tmp_path, steps, where, key, value, braces):
    op = "minhash_dedup" if key == "threshold" else "exact_dedup"
    assert refused(cli, recipe(tmp_path, steps), "--no-data") == (
        f"error: {where}.{key}: written beside the operator {op}, not under it: indent it under `{op}:` "
        f"(`- {op}:` then `    {key}: {value}` on the next line" + (f", with no {{}} after `{op}:`)" if braces else ")"))


def test_two_operators_in_one_step_are_named(cli, tmp_path):
    r = recipe(tmp_path, "  - exact_dedup: {}\n    minhash_dedup: {}\n")
    assert refused(cli, r, "--no-data") == ("error: steps[0]: two operators in one step (exact_dedup, minhash_dedup): "
                                            "start each with its own `- `")


def test_a_step_of_keys_naming_no_operator_keeps_its_message(cli, tmp_path):
    assert refused(cli, recipe(tmp_path, "  - foo: 1\n    bar: 2\n"), "--no-data") == (
        "error: steps[0]: each step is a mapping with one key, the operator name")


BASE = "input: {path: in.jsonl}\noutput: {path: out}\n"


@pytest.mark.parametrize("text, line, words, shown, pyyaml", [
    ("input:\n\tpath: in.jsonl\noutput: {path: out}\n", 2,
     "a tab character: YAML indents with spaces only; replace the tab with spaces", "\\tpath: in.jsonl",
     "while scanning for the next token found character '\\t' that cannot start any token (line 2, column 1)"),
    ("input:\n  path in.jsonl\n  format: jsonl\noutput: {path: out}\n", 3,
     "a `key: value` where none can start: either the line above lacks its colon (`key: value`), or this line is "
     "indented deeper than the keys beside it, or a value holds ': ' (put such a value in quotes)", "  format: jsonl",
     "mapping values are not allowed here (line 3, column 9)"),
    ("input:\n    path: in.jsonl\n  format: jsonl\noutput: {path: out}\n", 3,
     "bad indentation: this line is indented differently from the keys of the mapping it belongs to",
     "  format: jsonl",
     "while parsing a block mapping expected <block end>, but found '<block mapping start>' (line 3, column 3)"),
    (BASE + "name: \"my run\nseed: 1\n", 3,
     "a quote opened here is never closed: add the closing quote at the end of the value", 'name: "my run',
     "while scanning a quoted scalar found unexpected end of stream (line 5, column 1)"),
    (BASE + "steps:\n  - exact_dedup: {columns: [url}\n", 4,
     "the [ opened here is not closed where expected: check the commas inside it and its closing ]",
     "  - exact_dedup: {columns: [url}",
     "while parsing a flow sequence expected ',' or ']', but got '}' (line 4, column 32)"),
    (BASE + "steps:\n  - exact_dedup\n  columns: [url]\n", 5,
     "this line is indented like the items of the list above (`- ...`) but is not one: indent it further, under "
     "the item it belongs to, or start it with `- `", "  columns: [url]",
     "while parsing a block collection expected <block end>, but found '?' (line 5, column 3)"),
])
def test_yaml_errors_are_restated_in_plain_words_naming_the_line(cli, tmp_path, text, line, words, shown, pyyaml):
    p = tmp_path / "r.yaml"
    p.write_text(text)
    assert refused(cli, str(p), "--no-data") == (f'error: {p}, line {line}: not valid YAML: {words}. '
                                                 f'The line: "{shown}". PyYAML: {pyyaml}')


def test_an_unexplained_yaml_error_keeps_pyyaml_words_and_place(cli, tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(BASE + "name: !!python/name:os.system x\n")
    assert refused(cli, str(p), "--no-data").startswith(f"error: {p}, line 3, column 7: not valid YAML: ")


@pytest.mark.parametrize("params, bands, rows", [("threshold: 0.8", 9, 12), ("threshold: 0.7, num_perm: 256", 25, 10)])
def test_minhash_dedup_takes_a_jaccard_threshold(cli, tmp_path, params, bands, rows):
    from curate import recipe as recipe_module

    r = recipe_module.load(recipe(tmp_path, f"  - minhash_dedup: {{{params}}}\n"))
    assert (r.steps[0].params.bands, r.steps[0].params.rows_per_band) == (bands, rows)


@pytest.mark.parametrize("params, message", [
    ("threshold: 0.8, bands: 20", "give threshold, or bands and rows_per_band, not both: threshold chooses them "
                                  "(remove bands, or threshold)"),
    ("threshold: 0.8, bands: 20, rows_per_band: 5", "give threshold, or bands and rows_per_band, not both: "
                                                    "threshold chooses them (remove bands and rows_per_band, or "
                                                    "threshold)"),
    ("num_perm: 128", "num_perm goes with threshold, which chooses bands and rows_per_band within it; without "
                      "threshold the signature has bands x rows_per_band values"),
])
def test_minhash_dedup_threshold_conflicting_with_explicit_bands_is_an_error(cli, tmp_path, params, message):
    r = recipe(tmp_path, f"  - minhash_dedup: {{{params}}}\n")
    assert refused(cli, r, "--no-data") == f"error: steps[0].minhash_dedup: {message}"


def test_minhash_dedup_explicit_bands_and_rows_stay_possible(cli, tmp_path):
    from curate import recipe as recipe_module

    r = recipe_module.load(recipe(tmp_path, "  - minhash_dedup: {bands: 20, rows_per_band: 5}\n"))
    assert (r.steps[0].params.bands, r.steps[0].params.rows_per_band) == (20, 5)
