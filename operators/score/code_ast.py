"""Depth and node count of a Python program's syntax tree (the standard library's `ast`)."""

from __future__ import annotations

import ast
import warnings


def ast_shape(source: str | None) -> tuple[int, int] | None:
    """(depth, nodes) of the module's tree, or None when the text is not Python that parses."""
    if source is None:
        return None
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
