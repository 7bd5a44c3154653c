"""An HTML form page a web agent fills in: its inputs in page order, the actions that set them to a
worker's answers, and the page as lxml writes it back after each action.

The page is parsed by lxml's HTML parser (libxml2) and written back with `etree.tostring` (XML
syntax, ASCII with character references): the serialization the ADP reference's TurkingBench
pages have, where empty elements close as `<b/>`, `<head>` is added and attributes gain values.

An action names its input by an XPath (the reference's forms: `//input[@name="q1" and
@type="radio" and @value="2"]`, or without the value test for a checkbox that has no value) and is
checked against the page: the XPath must select the very input the answer sets. Only what a
worker changes is acted on: an input already in the answer's state gets no action, nor do hidden
inputs (the page's scripts set them) and buttons.
"""

from __future__ import annotations

from dataclasses import dataclass

from curate.errors import CurateError
from curate_operators.agent.converters._events import Unconvertible

# Inputs a worker does not type or choose in: set by the page's scripts, or buttons.
NOT_ANSWERED = {"hidden", "submit", "button", "reset", "image", "file"}


@dataclass(frozen=True)
class Action:
    function: str  # click, fill or select_option
    kwargs: dict


def parse(html: str):
    """The page's element tree (lxml is imported here: only this converter needs it)."""
    try:
        from lxml import etree
    except ImportError:
        raise CurateError("the turkingbench converter needs lxml: pip install 'curate[adp]'") from None
    root = etree.HTML(html)
    if root is None:
        raise Unconvertible("the Template holds no HTML")
    return root


def serialized(root) -> str:
    from lxml import etree

    return etree.tostring(root).decode("ascii")


def fields(root) -> dict[str, list]:
    """Name -> the page's inputs of that name, names in the order the page first shows them."""
    found: dict[str, list] = {}
    for el in root.iter("input", "textarea", "select"):
        if el.get("name") is not None:
            found.setdefault(el.get("name"), []).append(el)
    return found


def literal(text: str) -> str:
    """`text` as an XPath string literal (XPath 1.0 has no escapes: concat() for both quotes)."""
    if '"' not in text:
        return f'"{text}"'
    if "'" not in text:
        return f"'{text}'"
    return "concat(" + ", '\"', ".join(f'"{part}"' for part in text.split('"')) + ")"


def answer(root, name: str, inputs: list, value: str) -> list[Action]:
    """The actions that set input `name` to `value` on the page (applied to `root`), in order."""
    kind = (inputs[0].get("type") or "text").lower() if inputs[0].tag == "input" else inputs[0].tag
    if kind in NOT_ANSWERED:
        return []
    if kind in ("radio", "checkbox"):
        return _choose(root, name, kind, inputs, value)
    if kind == "select":
        return _select(root, name, inputs[0], value)
    return _fill(root, name, inputs[0], value)


def _selecting(root, xpath: str, target) -> dict:
    """The action's kwargs, once the XPath is known to select `target` first on the page."""
    hits = root.xpath(xpath)
    if not hits or hits[0] is not target:
        raise Unconvertible(f"{xpath} does not select the answered input first")
    return {"xpath": xpath}


def _click(root, box) -> Action:
    value = f"and @value={literal(box.get('value'))}" if box.get("value") is not None else ""
    xpath = f"//input[@name={literal(box.get('name'))} and @type={literal(box.get('type'))} {value}]"
    return Action("click", _selecting(root, xpath, box))


def _choose(root, name: str, kind: str, inputs: list, value: str) -> list[Action]:
    """A radio group: click the chosen one (the others clear). A checkbox: click it to check it,
    or click the checked ones to clear them when the answer is empty (the box left unchecked)."""
    boxes = [el for el in inputs if el.tag == "input" and (el.get("type") or "").lower() == kind]
    if value == "":
        clicks = [box for box in boxes if box.get("checked") is not None] if kind == "checkbox" else []
    else:
        chosen = [box for box in boxes if box.get("value", "on") == value]
        if not chosen:
            values = ", ".join(sorted({box.get("value", "on") for box in boxes}))
            raise Unconvertible(f"answer {name}={value!r} is none of the {kind} values ({values})")
        clicks = [chosen[0]] if chosen[0].get("checked") is None else []
    actions = []
    for box in clicks:
        actions.append(_click(root, box))
        if box.get("checked") is not None:  # a checkbox cleared
            del box.attrib["checked"]
        else:
            for other in boxes if kind == "radio" else ():
                other.attrib.pop("checked", None)
            box.set("checked", "checked")
    return actions


def _fill(root, name: str, el, value: str) -> list[Action]:
    current = (el.text or "") if el.tag == "textarea" else el.get("value", "")
    if value == current:
        return []
    kwargs = _selecting(root, f"//{el.tag}[@name={literal(name)}]", el)
    if el.tag == "textarea":
        el.text = value
    else:
        el.set("value", value)
    return [Action("fill", {**kwargs, "value": value})]


def _select(root, name: str, el, value: str) -> list[Action]:
    options = list(el.iter("option"))
    chosen = [o for o in options if o.get("value", o.text or "") == value]
    if not chosen:
        raise Unconvertible(f"answer {name}={value!r} is none of the options of select {name!r}")
    current = next((o for o in options if o.get("selected") is not None), options[0])
    if chosen[0] is current:
        return []
    kwargs = _selecting(root, f"//select[@name={literal(name)}]", el)
    for option in options:
        option.attrib.pop("selected", None)
    chosen[0].set("selected", "selected")
    return [Action("select_option", {**kwargs, "value": value})]
