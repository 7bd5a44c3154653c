"""Syntax-tree depth and node count through tree-sitter (Python's `ast`: test_text_stats.py)."""

import importlib.util
import pickle
import re
import sys
import types

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import RecipeError
from curate_operators.score.code_ast import CodeShapes, language_name, load_grammar, python_shape, tree_shape
from curate_operators.score.complexity import Complexity

tree_sitter = pytest.importorskip("tree_sitter")  # the qdc extra installs it and the common grammars


def parse(language, source):
    return tree_sitter.Parser(load_grammar(language)).parse(source.encode())


def reference(tree):
    """An independent recursive walk: named children only, comments (extras) left out."""
    def walk(node):
        kids = [walk(c) for c in node.named_children if not c.is_extra]
        return 1 + max((d for d, _ in kids), default=0), 1 + sum(n for _, n in kids)

    return walk(tree.root_node)


# Counted by hand from each tree's s-expression (named nodes only).
SNIPPETS = [
    ("javascript", "x = 1;", (4, 5)),  # program > expression_statement > assignment_expression > identifier, number
    ("c", "int main(void) { return 0; }", (6, 11)),
    ("go", "package main\nfunc f() int { return 1 }\n", (7, 12)),
    ("rust", "fn f() -> i32 { 1 }", (4, 7)),
    ("java", "class A { int f() { return 1; } }", (7, 11)),
    ("typescript", "let x: number = 1;", (5, 7)),
]


@pytest.mark.parametrize("language,source,shape", SNIPPETS)
def test_tree_sitter_shape_of_hand_counted_snippets(language, source, shape):
    tree = parse(language, source)
    assert tree_shape(tree) == shape == reference(tree)


LARGER = [
    ("javascript", "function f(a, b) {\n  // add\n  if (a > b) { return [a, b].map(x => x * 2); }\n"
                   "  for (let i = 0; i < 3; i++) { b += i; }\n  return {k: a, v: `t${b}`};\n}\n"),
    ("c", "#include <stdio.h>\nstruct p { int x; };\n/* c */ int f(struct p *q) {\n"
          "  for (int i = 0; i < 3; i++) { if (q->x > i) q->x--; }\n  return q ? q->x : -1;\n}\n"),
    ("go", "package m\nimport \"fmt\"\nfunc f(xs []int) (s int) {\n\tfor _, x := range xs {\n"
           "\t\tif x%2 == 0 { s += x }\n\t}\n\tfmt.Println(s)\n\treturn\n}\n"),
    ("rust", "use std::collections::HashMap;\n/// doc\nfn f(v: &[i32]) -> HashMap<i32, usize> {\n"
             "    let mut m = HashMap::new();\n    for x in v { *m.entry(*x).or_insert(0) += 1; }\n    m\n}\n"),
]


@pytest.mark.parametrize("language,source", LARGER)
def test_tree_sitter_shape_equals_a_recursive_walk(language, source):
    tree = parse(language, source)
    assert not tree.root_node.has_error
    assert tree_shape(tree) == reference(tree)


js_expr = st.recursive(
    st.sampled_from(["1", "a", "'s'", "null"]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, max_size=3).map(lambda xs: "f(" + ", ".join(xs) + ")"),
        st.tuples(inner, inner).map(lambda ab: f"({ab[0]} + {ab[1]})"),
        inner.map(lambda x: f"{{k: {x}}} /* c */"),
    ),
    max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(js_expr, min_size=1, max_size=3))
@example(["[[[[1]]]]", "f()"])
def test_tree_sitter_shape_of_generated_javascript_equals_a_recursive_walk(expressions):
    tree = parse("javascript", "".join(f"x = {e};\n" for e in expressions))
    assert tree_shape(tree) == reference(tree)


def test_comments_do_not_count():
    assert tree_shape(parse("javascript", "x = 1; // a comment")) == tree_shape(parse("javascript", "x = 1;"))
    assert tree_shape(parse("c", "/* a */ int x; // b")) == tree_shape(parse("c", "int x;"))


def test_deep_code_is_walked_without_recursion():
    tree = parse("javascript", "x = " + "(" * 5000 + "1" + ")" * 5000 + ";")
    assert tree_shape(tree) == (5004, 5005)  # program, statement, assignment, identifier, 5000 parens, number


def test_python_through_tree_sitter_agrees_with_ast_where_comparable():
    # The grammars differ (tree-sitter has no Load/Store contexts, `ast` no expression_statement),
    # so the counts are equal only for the simplest code; both must rank nesting the same way.
    assert tree_shape(parse("python", "x = 1")) == python_shape("x = 1") == (4, 5)
    nested = ["x = 1", "x = f(1)", "def g(x):\n    return f(x, 1)\n", "def g():\n    if a:\n        return f([1])\n",
              "def g():\n    for i in a:\n        if i:\n            return f([i + 1])\n"]
    by_tree_sitter = [tree_shape(parse("python", s)) for s in nested]
    by_ast = [python_shape(s) for s in nested]
    for shapes in (by_tree_sitter, by_ast):
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(shapes, shapes[1:]))


def test_trees_with_error_or_missing_nodes_are_null_and_counted():
    shapes = CodeShapes()
    assert shapes.shape("x = = 1;", "javascript") is None  # an ERROR node
    assert shapes.shape("function f(a { return a; }", "javascript") is None  # a MISSING ")"
    assert shapes.shape("def (:", "python") is None
    assert shapes.counts == {"ast_parse_error": 3}


def test_languages_as_data_sets_write_them():
    assert [language_name(x) for x in ["C++", " JavaScript", "Go", "golang", "C#", "TSX", None, "../os", "x.y"]] == [
        "cpp", "javascript", "go", "go", "c_sharp", "tsx", None, None, None]
    shapes = CodeShapes()
    assert shapes.shape("x = 1;", "JavaScript") == (4, 5)
    assert shapes.shape("int x;", "C++") == shapes.shape("int x;", "cpp") is not None


def test_unsupported_languages_are_null_and_counted():
    shapes = CodeShapes()
    assert shapes.shape("IDENTIFICATION DIVISION.", "cobol") is None  # no tree_sitter_cobol package
    assert shapes.shape("x", None) is None
    assert shapes.shape("x", "os.path") is None  # not a grammar name: nothing is imported
    assert shapes.shape(None, "cobol") is None  # no code: null, and no reason to count
    assert shapes.counts == {"ast_unsupported_language": 3}


def test_a_package_without_a_grammar_function_is_unsupported(monkeypatch):
    monkeypatch.setitem(sys.modules, "tree_sitter_notagrammar", types.ModuleType("tree_sitter_notagrammar"))
    shapes = CodeShapes()
    assert shapes.shape("x", "notagrammar") is None
    assert shapes.counts == {"ast_unsupported_language": 1}


def test_complexity_scores_with_a_language_column():
    op = Complexity(Complexity.Params(metrics=["words"], code_column="code", code_language_column="lang"))
    assert op.requires == ("text", "code", "lang")
    batch = pa.record_batch({
        "text": ["a"] * 6,
        "code": ["x = 1;", "x = 1", "fn f() -> i32 { 1 }", "x = = 1;", "PROCEDURE DIVISION.", None],
        "lang": ["JavaScript", "Python", "rust", "js", "COBOL", "go"]})
    out = op.process(batch)
    assert out.column("complexity_ast_depth").to_pylist() == [4, 4, 4, None, None, None]
    assert out.column("complexity_ast_nodes").to_pylist() == [5, 5, 7, None, None, None]
    assert op.take_counts() == {"ast_parse_error": 1, "ast_unsupported_language": 1}
    assert op.take_counts() == {}  # counted once
    # Workers get the operator pickled: its cached parsers (not picklable) stay behind.
    again = pickle.loads(pickle.dumps(op))
    assert again.process(batch).column("complexity_ast_nodes").equals(out.column("complexity_ast_nodes"))


def test_complexity_scores_with_a_fixed_language():
    op = Complexity(Complexity.Params(metrics=["words"], code_column="code", code_language="go"))
    op.check_schema(pa.schema([("text", pa.string()), ("code", pa.string())]))
    out = op.process(pa.record_batch({"text": ["a"], "code": ["package main\nfunc f() int { return 1 }\n"]}))
    assert out.column("complexity_ast_depth").to_pylist() == [7]


@pytest.mark.parametrize("language,package", [("cobol", "tree-sitter-cobol"), ("C#", "tree-sitter-c-sharp"),
                                              ("no such/language", "tree-sitter-<language>")])
def test_a_fixed_language_without_a_grammar_is_refused_before_the_run(language, package):
    if language == "C#" and importlib.util.find_spec("tree_sitter_c_sharp"):
        pytest.skip("tree-sitter-c-sharp is installed here")
    op = Complexity(Complexity.Params(code_column="code", code_language=language))
    with pytest.raises(RecipeError, match=f"no tree-sitter grammar .* install the package {re.escape(package)} "):
        op.check_schema(pa.schema([("text", pa.string()), ("code", pa.string())]))
