"""Every operator in the catalog reads and writes the columns its parameters say (preflight and the
engine check the data against `requires` and add `provides`), and none overrides `__init__` to
compute them: they come from the Params' column declarations (curate/ops.py)."""

import ast
import inspect
import textwrap

import pytest

from curate import registry
from curate.ops import Operator
from curate.registry import catalog

LLM = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
GOPHER_CHEAP = ("word_count", "mean_word_length", "hash_word_ratio", "ellipsis_word_ratio", "bullet_line_frac",
                "ellipsis_line_frac", "alpha_word_frac", "stop_words", "dup_line_frac", "dup_para_frac",
                "dup_line_char_frac", "dup_para_char_frac")
CLUSTERS = ("_cluster", "prune_dist_to_centroid")

# name -> [(params, requires, provides)], built with text_column="body" (the recipe's input.text_column).
EXPECTED = {
    "adp_convert": [({"source": "openai_chat"}, (), ("id", "content", "details")),
                    ({"source": "openai_chat", "raw_column": "raw"}, ("raw",), ("id", "content", "details"))],
    "adp_export": [({"style": "openhands"}, ("id", "content", "details"), ("id", "system", "conversations"))],
    "adp_validate": [({}, ("id", "content", "details"), ())],
    "adp_join": [({"source": "openai_chat"}, (), ()), ({"source": "nnetnav-live"}, (), ("_adp_records",)),
                 ({"source": "nnetnav-live", "raw_column": "raw"}, ("raw",), ("_adp_records",))],
    "c4_quality": [({}, ("body",), ()),
                   ({"scores": True}, ("body",), ("quality_c4_sentences", "quality_c4_kept_line_frac"))],
    "cast": [({"columns": {"a": "int64", "b": "string"}}, ("a", "b"), ())],
    "chunk": [({}, ("body",), ("chunk_index",))],
    "classifier_score": [({"model": "m"}, ("body",), ("quality_classifier",)),
                         ({"model": "m", "column": "t", "output_column": "o"}, ("t",), ("o",))],
    "clip_score": [({"model": "m"}, ("image", "body"), ("quality_clip_score",)),
                   ({"model": "m", "image_column": "img", "caption_column": "cap", "keep_embedding": True},
                    ("img", "cap"), ("quality_clip_score", "_embedding"))],
    "clip_score_select": [({"fraction": 0.3}, ("quality_clip_score",), ()),
                          ({"threshold": 0.3, "score_column": "s"}, ("s",), ())],
    "caption_class_filter": [({"classes": "c.txt"}, ("body",), ()),
                             ({"classes": "c.txt", "caption_column": "cap", "language_column": "l"}, ("cap", "l"), ())],
    "image_cluster_filter": [({"target_embeddings": "t.npy"}, ("_embedding", "body"), ()),
                             ({"target_embeddings": "t.npy", "language_column": "l", "caption_column": "c",
                               "threshold": 0.3, "score_column": "s"}, ("_embedding", "l", "c", "s"), ()),
                             ({"target_embeddings": "t.npy", "caption_rules": False, "fraction": 0.3,
                               "embedding_column": "e"}, ("e", "quality_clip_score"), ())],
    "image_exact_dedup": [({}, ("image",), ()), ({"image_column": "img", "prefer": "q", "on": "bytes"}, ("img", "q"), ())],
    "phash_dedup": [({}, ("image",), ()), ({"image_column": "img", "prefer": "q"}, ("img", "q"), ())],
    "image_filter": [({"min_side": 10}, (), ()), ({"preset": "datacomp_basic"}, ("body",), ()),
                     ({"formats": ["png"], "decodable": True}, ("image",), ()),
                     ({"min_caption_words": 2, "caption_column": "cap", "image_column": "img"}, ("cap",), ())],
    "complexity_scores": [
        ({"metrics": ["words"]}, ("body",), ("complexity_words",)),
        ({"metrics": ["words"], "instruction_column": "i", "response_column": "r", "tokenizer": "tok"}, ("i", "r"),
         ("complexity_instruction_words", "complexity_instruction_tokens", "complexity_response_words",
          "complexity_response_tokens")),
        ({"metrics": ["words"], "response_column": "r"}, ("r",), ("complexity_response_words",)),
        ({"metrics": ["words"], "code_column": "c", "code_language_column": "l"}, ("body", "c", "l"),
         ("complexity_words", "complexity_ast_depth", "complexity_ast_nodes"))],
    "decontaminate": [({"benchmarks": [{"name": "b", "path": "b.jsonl"}]}, ("body",), ()),
                      ({"benchmarks": [{"name": "b", "path": "b.jsonl"}], "columns": ["i", "r"], "mode": "redact"},
                       ("i", "r"), ("contamination_redactions",)),
                      ({"benchmarks": [{"name": "b", "path": "b.jsonl"}], "mode": "mark"}, ("body",),
                       ("contamination_benchmark", "contamination_item", "contamination_ngrams",
                        "contamination_offset", "contamination_items"))],
    "best_of_n": [({"score": "s"}, ("s", "_parent_id"), ()), ({"score": "s", "group": "g"}, ("s", "g"), ())],
    "containment_dedup": [({}, ("body",), ()), ({"prefer": "q"}, ("body", "q"), ())],
    "dataset_metrics": [({}, ("body",), ()),
                        ({"embedding_column": "e", "score_columns": ["s1", "s2"]}, ("body", "e", "s1", "s2"), ())],
    "deita_complexity": [({"model": "m"}, ("body",), ("complexity_deita",)),
                         ({"model": "m", "instruction_column": "i", "output_column": "o"}, ("i",), ("o",))],
    "density_prune": [({"fraction": 0.5}, ("_embedding",), ()),
                      ({"fraction": 0.5, "columns": True, "embedding_column": "e"}, ("e",), CLUSTERS)],
    "embed": [({}, ("body",), ("_embedding",)), ({"column": "title", "output_column": "vec"}, ("title",), ("vec",))],
    "evol_instruct": [({"llm": LLM}, ("body",), ("evol_round", "evol_operation", "evol_from_round", "evol_lineage",
                                                 "evol_previous", "response", "synth_model"))],
    "exact_dedup": [({}, ("body",), ()), ({"columns": ["url"], "prefer": "q"}, ("url", "q"), ()),
                    ({"prefer": "q"}, ("body", "q"), ())],
    "fineweb_quality": [({}, ("body",), ()),
                        ({"scores": True}, ("body",), tuple(f"quality_fineweb_{m}" for m in (
                            "line_punct_ratio", "short_line_ratio", "dup_line_char_ratio", "newline_word_ratio")))],
    "generate_qa": [({"llm": LLM}, ("body",), ("question", "answer", "qa_index", "synth_prompt", "synth_model"))],
    "gopher_quality": [({}, ("body",), ()),
                       ({"scores": True, "max_top_ngram_char_frac": {2: None}, "max_dup_ngram_char_frac": {}},
                        ("body",), tuple(f"quality_gopher_{m}" for m in (*GOPHER_CHEAP, "top_2gram_char_frac")))],
    "language_id": [({}, ("body",), ("language", "language_score")),
                    ({"language_column": "l", "score_column": "s"}, ("body",), ("l", "s"))],
    "llm_judge": [({"llm": LLM}, ("body",), ("quality_llm_judge", "quality_llm_judge_raw")),
                  ({"llm": LLM, "template": "{instruction} {response} {text} {low}", "output_column": "o"},
                   ("instruction", "response", "body"), ("o", "o_raw"))],
    "minhash_dedup": [({}, ("body",), ()), ({"prefer": "q"}, ("body", "q"), ())],
    "normalize_text": [({}, ("body",), ("body",))],
    "novelty": [({}, ("_embedding",), ("diversity_novelty",)),
                ({"embedding_column": "e", "output_column": "o"}, ("e",), ("o",))],
    "perplexity": [({"model": "m"}, ("body",), ("quality_perplexity",)),
                   ({"model": "m", "instruction_column": "i", "response_column": "r", "output_column": "o"},
                    ("i", "r"), ("o", "complexity_ifd"))],
    "pii_redact": [({}, ("body",), ()), ({"columns": ["a", "b"]}, ("a", "b"), ())],
    "qdc_select": [({"size": 3, "quality": {"q1": 1, "q2": -1}, "complexity": {"c1": 1, "q1": 1},
                     "embedding_column": "e"}, ("e", "q1", "q2", "c1"), ())],
    "quality_heuristics": [({"metrics": ["word_count"]}, ("body",), ("quality_word_count", "quality_heuristic")),
                           ({"metrics": ["top_2gram_char_frac"], "combined": False}, ("body",),
                            ("quality_top_2gram_char_frac",))],
    "rename": [({"columns": {"a": "b", "c": "d"}}, ("a", "c"), ("b", "d"))],
    "rephrase": [({"llm": LLM}, ("body",), ("synth_style", "synth_model"))],
    "respond": [({"llm": {**LLM, "temperature": 0.7}}, ("body",), ("response_index", "synth_model", "response")),
                ({"llm": {**LLM, "temperature": 0.7}, "instruction_column": "i", "output_column": "o",
                  "pair_column": "p"}, ("i",), ("response_index", "synth_model", "o", "p"))],
    "sample": [({"fraction": 0.5}, ("_id",), ()), ({"fraction": 0.5, "by": "k"}, ("k",), ())],
    "select": [({"columns": ["a", "b"]}, ("a", "b"), ())],
    "self_instruct": [({"llm": LLM}, ("body",), ("synth_round", "synth_model", "si_rouge_l"))],
    "semantic_dedup": [({}, ("_embedding",), ()), ({"columns": True, "embedding_column": "e"}, ("e",), CLUSTERS)],
    "shuffle": [({}, ("_id",), ())],
    "sql_filter": [({"where": "true"}, (), ())],
    "token_count": [({"tokenizer": "t"}, ("body",), ("token_count",)),
                    ({"tokenizer": "t", "column": "n"}, ("body",), ("n",))],
    "tokenize": [({"tokenizer": "t"}, ("body",), ("input_ids",)),
                 ({"tokenizer": "t", "column": "ids"}, ("body",), ("ids",))],
    "url_filter": [({}, ("url",), ()), ({"url_column": "u"}, ("u",), ())],
    "extract_text": [({}, ("html",), ("body",)), ({"html_column": "h", "column": "t"}, ("h",), ("t",))],
    "url_normalize": [({}, ("url", "warc_date"), ("url", "domain", "warc_time")),
                      ({"date_column": None, "time_column": None}, ("url",), ("url", "domain"))],
}


def _operator(name: str) -> type[Operator]:
    try:
        return registry.get(name)
    except ImportError as e:  # an optional extra that is not installed
        pytest.skip(f"{name}: {e}")


def test_every_operator_has_expectations():
    assert set(EXPECTED) == set(catalog())


@pytest.mark.parametrize("name, params, requires, provides",
                         [(name, *case) for name, cases in EXPECTED.items() for case in cases])
def test_columns_follow_the_params(name, params, requires, provides):
    cls = _operator(name)
    op = cls(cls.Params(**params), text_column="body")
    assert (op.requires, op.provides) == (requires, provides)


def test_fits_read_what_prepare_did_not():
    """exact_dedup hashes its key columns before the fit (in prepare), so its fit reads only
    `prefer`; the others' fits read what they require (fit_columns None)."""
    exact = _operator("exact_dedup")
    assert exact(exact.Params(prefer="q")).fit_columns == ("q",) and exact().fit_columns == ()
    assert all(_operator(name)().fit_columns is None for name in ("minhash_dedup", "semantic_dedup", "novelty"))


@pytest.mark.parametrize("name", sorted(catalog()))
def test_no_init_computes_columns(name):
    """Columns are declared (Params fields, class attributes, computed_requires / computed_provides);
    an operator's own __init__, if any, sets other state."""
    for cls in _operator(name).__mro__:
        init = cls.__dict__.get("__init__")
        if init is None or not cls.__module__.startswith("curate_operators."):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        assigned = {t.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    for t in ast.walk(t) if isinstance(t, ast.Attribute)}
        assert not assigned & {"requires", "provides", "fit_columns"}, f"{cls.__qualname__}.__init__"
