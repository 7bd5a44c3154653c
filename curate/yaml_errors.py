"""PyYAML's errors restated in plain words: what is probably wrong, on which line, and what to do.

PyYAML names the token it choked on ("mapping values are not allowed here", "expected <block end>,
but found '<block mapping start>'"), often at a place after the mistake (an unclosed quote is
found at the end of the file). The restatement names the line where the fix goes, quotes it, and
keeps PyYAML's own words beside it for whoever knows them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from curate.errors import RecipeError


def _explain(e: yaml.MarkedYAMLError) -> tuple[yaml.Mark, str] | None:
    """(the mark of the line to fix, the plain words), or None where there is nothing to add."""
    problem, context = e.problem or "", e.context or ""
    at = e.problem_mark
    if at is None:  # yaml_error asks only where PyYAML marked the problem
        return None
    opened = e.context_mark or at
    if "'\\t'" in problem:
        return at, "a tab character: YAML indents with spaces only; replace the tab with spaces"
    if "quoted scalar" in context and "end of stream" in problem:
        return opened, "a quote opened here is never closed: add the closing quote at the end of the value"
    if "mapping values are not allowed" in problem:
        return at, (
            "a `key: value` where none can start: either the line above lacks its colon (`key: value`), "
            "or this line is indented deeper than the keys beside it, or a value holds ': ' (put such "
            "a value in quotes)"
        )
    if "could not find expected ':'" in problem:
        return opened, "a key without its colon: write `key: value`"
    if "flow sequence" in context or "flow mapping" in context:
        pair = "[]" if "sequence" in context else "{}"
        return (
            opened,
            f"the {pair[0]} opened here is not closed where expected: check the commas inside it and "
            f"its closing {pair[1]}",
        )
    if "block collection" in context and "'?'" in problem:
        return at, (
            "this line is indented like the items of the list above (`- ...`) but is not one: indent it "
            "further, under the item it belongs to, or start it with `- `"
        )
    if "expected <block end>" in problem and "'<scalar>'" in problem:
        return at, "more text after a value that ended (a closing quote or bracket): put the whole value in quotes"
    if "expected <block end>" in problem:
        return at, "bad indentation: this line is indented differently from the keys of the mapping it belongs to"
    if "undefined alias" in problem:
        return at, "`*name` refers to an anchor `&name` defined nowhere: put the value in quotes if * is meant"
    if "cannot start any token" in problem:
        return at, "a plain value cannot start with this character (@ or `): put the value in quotes"
    return None


def yaml_error(path: str | Path | None, text: str, e: yaml.YAMLError) -> RecipeError:
    """`FILE, line L: not valid YAML: <plain words>. The line: "...". PyYAML: <its problem>`, with PyYAML's own
    mention of the place (it only knows "<unicode string>") left out."""
    where = str(path or "recipe")
    if not isinstance(e, yaml.MarkedYAMLError) or e.problem_mark is None:
        return RecipeError(where, f"not valid YAML: {e}")
    pyyaml = " ".join(filter(None, (e.context, e.problem))) or str(e)
    explained = _explain(e)
    if explained is None:
        mark = e.problem_mark
        return RecipeError(f"{where}, line {mark.line + 1}, column {mark.column + 1}", f"not valid YAML: {pyyaml}")
    mark, words = explained
    lines = text.splitlines()
    shown = lines[mark.line].rstrip().replace("\t", "\\t") if mark.line < len(lines) else ""  # a tab, seen
    return RecipeError(
        f"{where}, line {mark.line + 1}",
        f"not valid YAML: {words}"
        + (f'. The line: "{shown}"' if shown else "")
        + f". PyYAML: {pyyaml} (line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1})",
    )
