"""Depth and node count of a program's syntax tree.

Python's with the standard library's `ast`. Other languages' with tree-sitter: the grammar of a
language NAME is the package `tree_sitter_NAME` (tree-sitter's own grammar packages, e.g.
tree-sitter-javascript; the `qdc` extra installs the common ones), imported when a row first needs
it. Tree-sitter's tree is concrete; to measure the same thing as `ast`, only its named nodes count
(keywords and punctuation are anonymous nodes, `ast` has none) and comments (extras) are skipped.
Tree-sitter recovers from syntax errors with ERROR or MISSING nodes; such a tree is not the
program's, so, as with `ast`'s SyntaxError, the shape is null.
"""

from __future__ import annotations

import ast
import importlib
import re
import warnings

Shape = tuple[int, int]  # (depth, nodes)

# Names a data set may use for a language -> the grammar package's NAME.
ALIASES = {"js": "javascript", "jsx": "javascript", "ts": "typescript", "c++": "cpp", "golang": "go", "rs": "rust",
           "py": "python", "c#": "c_sharp", "csharp": "c_sharp", "sh": "bash", "shell": "bash"}
# Packages holding several grammars: NAME -> (package NAME, function returning the grammar).
_SHARED = {"typescript": ("typescript", "language_typescript"), "tsx": ("typescript", "language_tsx"),
           "php": ("php", "language_php")}


def language_name(language: str | None) -> str | None:
    """The grammar NAME of a language as a data set writes it ("C++" -> "cpp"), or None."""
    if language is None:
        return None
    name = language.strip().lower()
    name = ALIASES.get(name, name)
    return name if re.fullmatch(r"[a-z0-9_]+", name) else None


def python_shape(source: str) -> Shape | None:
    """(depth, nodes) of the module's `ast` tree, or None when the text is not Python that parses."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    depth, nodes = 0, 0
    stack = [(tree, 1)]
    while stack:  # iterative: deeply nested code must not hit Python's recursion limit
        node, d = stack.pop()
        nodes += 1
        depth = max(depth, d)
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return depth, nodes


def tree_shape(tree) -> Shape | None:
    """(depth, nodes) of a tree-sitter tree's named nodes without comments, None if it has errors."""
    if tree.root_node.has_error:
        return None
    cursor = tree.walk()
    depth = nodes = 0
    levels = [0]  # named depth of each node on the cursor's path (anonymous nodes add no level)
    while True:
        node = cursor.node
        named = node.is_named and not node.is_extra
        if named:
            nodes += 1
            depth = max(depth, levels[-1] + 1)
        if not node.is_extra and cursor.goto_first_child():
            levels.append(levels[-1] + named)
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return depth, nodes
            levels.pop()


def grammar_package(name: str) -> str:
    """The PyPI package holding grammar NAME ("c_sharp" -> "tree-sitter-c-sharp")."""
    return "tree-sitter-" + _SHARED.get(name, (name,))[0].replace("_", "-")


def load_grammar(name: str):
    """tree-sitter's Language for grammar NAME; ImportError when tree-sitter or the grammar is missing."""
    from tree_sitter import Language

    package, function = _SHARED.get(name, (name, "language"))
    module = importlib.import_module(f"tree_sitter_{package}")
    return Language(getattr(module, function)())


class CodeShapes:
    """Measures code in any language, keeping one parser per language and why shapes are null."""

    def __init__(self):
        self.parsers: dict[str, object] = {}  # NAME -> tree-sitter Parser, or None without a grammar
        self.counts: dict[str, int] = {}

    def parser(self, name: str):
        if name not in self.parsers:
            try:
                from tree_sitter import Parser

                self.parsers[name] = Parser(load_grammar(name))
            except (ImportError, AttributeError):
                self.parsers[name] = None
        return self.parsers[name]

    def shape(self, source: str | None, language: str | None) -> Shape | None:
        """(depth, nodes), or None: no code, no grammar for the language, or code that does not parse."""
        if source is None:
            return None
        name = language_name(language)
        if name == "python":
            shape = python_shape(source)
        elif name is None or self.parser(name) is None:
            return self._null("ast_unsupported_language")
        else:
            shape = tree_shape(self.parsers[name].parse(source.encode()))
        return shape if shape is not None else self._null("ast_parse_error")

    def _null(self, reason: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        return None
