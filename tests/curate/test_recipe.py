"""Recipes are validated before any data is read, and errors name their place in the YAML."""

import pytest

from curate import recipe
from curate.errors import RecipeError

BASE = """
name: t
input: {path: in.jsonl}
output: {path: out}
steps:
  - rename: {columns: {body: text}}
  - sql_filter: {where: "length(text) > 3"}
  - exact_dedup: {columns: [text]}
"""


def test_valid_recipe_builds_steps_in_order():
    r = recipe.load(text=BASE)
    assert [s.name for s in r.steps] == ["rename", "sql_filter", "exact_dedup"]
    assert [s.label for s in r.steps] == ["01_rename", "02_sql_filter", "03_exact_dedup"]
    assert r.input.text_column == "text" and r.seed == 0


@pytest.mark.parametrize("bad, where, words", [
    (BASE.replace("rename", "renam"), "steps[0]", "unknown operator 'renam'"),
    (BASE.replace("{columns: [text]}", "{colums: [text]}"), "steps[2].exact_dedup.colums", "unknown parameter"),
    (BASE.replace("{columns: [text]}", "{columns: 7}"), "steps[2].exact_dedup.columns", "list"),
    (BASE.replace("input: {path: in.jsonl}", "input: {path: in.jsonl, batch_rows: -1}"), "input.batch_rows", "greater than 0"),
    (BASE.replace("input: {path: in.jsonl}\n", ""), "input", "missing"),
    (BASE + "extra: 1\n", "extra", "unknown top-level key"),
    (BASE.replace('"length(text) > 3"', '"length(text > "'), "steps[1].sql_filter.where", "SQL"),
    (BASE.replace("{columns: [text]}", "{colums: [text]}"), "steps[2].exact_dedup.colums", "Did you mean columns?"),
    (BASE.replace("input: {path: in.jsonl}", "input: {pth: in.jsonl}"), "input.pth", "Did you mean path?"),
    (BASE.replace("name: t", "nmae: t"), "nmae", "Did you mean name?"),
    (BASE + "metrics: {sampel: 10}\n", "metrics.sampel", "Did you mean sample?"),
    (BASE + "metrics: {sample: 1}\n", "metrics.sample", "greater than or equal to 2"),
    (BASE + "metrics: yes please\n", "metrics", "must be true, false or a mapping"),
    (BASE + "report: {bye: url}\n", "report.bye", "unknown parameter. Did you mean by?"),
    (BASE + "report: url\n", "report", "must be a mapping such as {by: COLUMN}"),
])
def test_errors_name_the_place(bad, where, words):
    with pytest.raises(RecipeError) as e:
        recipe.load(text=bad)
    assert e.value.where == where
    assert words in str(e.value)


def test_metrics_are_off_unless_asked_for_and_change_the_fingerprint():
    assert recipe.load(text=BASE).metrics is None
    assert recipe.load(text=BASE + "metrics: false\n").metrics is None
    on = recipe.load(text=BASE, overrides=["metrics=true"])
    assert on.metrics.sample == 2000 and on.metrics.sketch == 4096
    assert recipe.load(text=BASE + "metrics: {sample: 50}\n").metrics.sample == 50
    assert on.fingerprint() != recipe.load(text=BASE).fingerprint()  # --resume refuses a changed setting


def test_allow_empty_is_off_unless_asked_for_and_not_in_the_fingerprint():
    assert recipe.load(text=BASE).allow_empty is False
    allowed = recipe.load(text=BASE + "allow_empty: true\n")
    assert allowed.allow_empty is True
    assert allowed.fingerprint() == recipe.load(text=BASE).fingerprint()  # so --resume may publish a stopped run
    with pytest.raises(RecipeError, match="allow_empty: must be true or false"):
        recipe.load(text=BASE + "allow_empty: yes please\n")


def test_unknown_operator_suggests_close_names():
    with pytest.raises(RecipeError, match="Did you mean exact_dedup"):
        recipe.load(text=BASE.replace("exact_dedup", "exact_dedupe"))


def test_set_overrides_any_value_by_path():
    r = recipe.load(text=BASE, overrides=["steps[2].exact_dedup.lowercase=true", "seed=7", "output.shard_mb=64"])
    assert r.steps[2].params.lowercase is True and r.seed == 7 and r.output.shard_mb == 64
    r = recipe.load(text=BASE, overrides=["steps.1.sql_filter.where=n > 2"])
    assert r.steps[1].params.where == "n > 2"


def test_set_to_a_missing_list_item_is_an_error():
    with pytest.raises(RecipeError, match="no list item 9"):
        recipe.load(text=BASE, overrides=["steps[9].x=1"])


def test_env_variables_expand_and_stay_out_of_the_display(monkeypatch):
    monkeypatch.setenv("CORPUS", "/data/corpus")
    r = recipe.load(text=BASE.replace("in.jsonl", '"${CORPUS}/*.jsonl"'))
    assert r.input.path == "/data/corpus/*.jsonl"
    assert r.display["input"]["path"] == "${CORPUS}/*.jsonl"


def test_missing_env_variable_names_place(monkeypatch):
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    with pytest.raises(RecipeError) as e:
        recipe.load(text=BASE.replace("path: out", 'path: "${NOPE_NOT_SET}"'))
    assert e.value.where == "output.path" and "NOPE_NOT_SET" in str(e.value)
    assert recipe.load(text=BASE.replace("path: out", 'path: "${NOPE_NOT_SET:-fallback}"')).output.path == "fallback"


def test_command_line_input_and_output_replace_the_recipe():
    text = "steps:\n  - exact_dedup: {}\n"
    r = recipe.load(text=text, input_path="a.parquet", output_path="o")
    assert r.input.path == "a.parquet" and r.output.path == "o"


def test_fingerprint_follows_content_not_formatting():
    a = recipe.load(text=BASE).fingerprint()
    b = recipe.load(text=BASE.replace("name: t", "name:   t   # comment")).fingerprint()
    c = recipe.load(text=BASE, overrides=["seed=1"]).fingerprint()
    assert a == b != c


def test_yaml_cannot_construct_python_objects():
    with pytest.raises(RecipeError, match="not valid YAML"):
        recipe.load(text="!!python/object/apply:os.system ['echo hi']")


@pytest.mark.parametrize("params, where, words", [
    ("{min_words: -10}", "steps[0].gopher_quality.min_words", "greater than or equal to 0 (got -10)"),
    ("{max_dup_line_frac: 1.5}", "steps[0].gopher_quality.max_dup_line_frac", "less than or equal to 1 (got 1.5)"),
    ("{min_alpha_word_frac: -0.1}", "steps[0].gopher_quality.min_alpha_word_frac", "greater than or equal to 0"),
    ("{max_top_ngram_char_frac: {2: 2.0}}", "steps[0].gopher_quality.max_top_ngram_char_frac", "between 0 and 1"),
    ("{min_words: 60, max_words: 50}", "steps[0].gopher_quality", "min_words (60) > max_words (50)"),
    ("{min_mean_word_length: 8, max_mean_word_length: 4}", "steps[0].gopher_quality",
     "min_mean_word_length (8.0) > max_mean_word_length (4.0)"),
])
def test_thresholds_outside_their_meaning_are_refused(params, where, words):
    text = f"input: {{path: in.jsonl}}\noutput: {{path: out}}\nsteps:\n  - gopher_quality: {params}\n"
    with pytest.raises(RecipeError) as e:
        recipe.load(text=text)
    assert e.value.where == where
    assert words in str(e.value)


def test_thresholds_at_their_limits_are_fine():
    text = ("input: {path: in.jsonl}\noutput: {path: out}\nsteps:\n  - gopher_quality: {min_words: 0, max_words: 0, "
            "max_dup_line_frac: 1, min_alpha_word_frac: 0, max_top_ngram_char_frac: {2: null, 3: 1.0}}\n")
    assert recipe.load(text=text).steps[0].params.min_words == 0


def test_set_naming_the_wrong_operator_says_which_is_there():
    with pytest.raises(RecipeError) as e:
        recipe.load(text=BASE, overrides=["steps[1].gopher_quality.min_words=30"])
    assert e.value.where == "--set steps[1].gopher_quality.min_words"
    assert "steps[1] is sql_filter, not gopher_quality" in str(e.value)
    with pytest.raises(RecipeError, match="steps\\[0\\] is normalize_text, not gopher_quality"):
        recipe.load(text=BASE.replace("  - rename: {columns: {body: text}}", "  - normalize_text"),
                    overrides=["steps[0].gopher_quality.min_words=30"])


def test_yaml_errors_name_the_file_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("input: {path: in.jsonl}\noutput: {path: out\nsteps: []\n")
    with pytest.raises(RecipeError) as e:
        recipe.load(p)
    # the line to fix is the one opening the {, not the one where PyYAML noticed it unclosed
    assert str(e.value).startswith(f"{p}, line 2: not valid YAML: the {{ opened here is not closed")
    assert "(line 3, column 6)" in str(e.value)
    assert "<unicode string>" not in str(e.value)


def test_operational_parameters_are_not_in_the_fingerprint_but_model_and_prompts_are(monkeypatch):
    """Rotating a key, fixing an endpoint or changing concurrency must not stop --resume; a change
    of model, prompt or sampling must."""
    from curate import recipe as recipe_module

    def fp(llm="model: m, base_url: '${BASE}'", extra=""):
        text = ("input: {path: x.jsonl}\noutput: {path: out}\nsteps:\n"
                f"  - rephrase: {{styles: [medium]{extra}, llm: {{{llm}}}}}\n")
        return recipe_module.load(text=text).fingerprint()

    monkeypatch.setenv("BASE", "http://a/v1")
    first = fp()
    monkeypatch.setenv("BASE", "http://b/v1")
    assert fp() == first
    assert fp("model: m, base_url: 'http://c/v1', api_key_env: OTHER, concurrency: 4, timeout_s: 3, max_retries: 1, "
              "cache_dir: /tmp/x") == first
    assert fp("model: m2, base_url: '${BASE}'") != first
    assert fp("model: m, base_url: '${BASE}', temperature: 0.7") != first
    assert fp(extra=", prompts: {medium: 'Say it again:'}") != first
    assert fp(extra=", ratio: '0:1'") != first


def test_memory_gb_is_a_positive_number_and_not_in_the_fingerprint():
    assert recipe.load(text=BASE).memory_gb is None
    budgeted = recipe.load(text=BASE + "memory_gb: 2.5\n")
    assert budgeted.memory_gb == 2.5
    assert budgeted.fingerprint() == recipe.load(text=BASE).fingerprint()  # the fits decide the same within any
    for bad in ("0", "-1", "lots", "true"):
        with pytest.raises(RecipeError, match="memory_gb: must be a number of GB > 0"):
            recipe.load(text=BASE + f"memory_gb: {bad}\n")


def test_report_breakdowns_are_read_and_not_in_the_fingerprint():
    assert recipe.load(text=BASE).report.columns() == []
    chosen = recipe.load(text=BASE + "report: {by: lang, by_domain: url}\n")
    assert chosen.report.columns() == [("report.by", "lang"), ("report.by_domain", "url")]
    assert chosen.fingerprint() == recipe.load(text=BASE).fingerprint()  # what the report shows, not the data
