"""TurkingBench HITs -> ADP beyond the reference samples (radio buttons and checkboxes): the
actions set each answered input from the page's state, an action's XPath selects the very input it
sets, text and select answers fill and choose, and records the converter cannot map are refused
with the reason."""

from __future__ import annotations

import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import CurateError
from curate_operators.agent import converters
from curate_operators.agent.converters import _form_page as form


def hit(template: str, answer: dict, **fields) -> dict:
    return {"Task": "T", "Title": "t", "Description": "d", "Keywords": "k", "Template": template, "_id": "T__0",
            "Answer": answer, **fields}


def convert(record: dict) -> dict:
    (unit,) = converters.iter_convert(converters.get("turkingbench"), [record])
    assert unit.error is None, unit.error
    return unit.trajectory


def error(record: dict) -> str:
    (unit,) = converters.iter_convert(converters.get("turkingbench"), [record])
    assert unit.trajectories == []
    return unit.error


def actions(traj: dict) -> list[tuple]:
    return [(e["function"], e["kwargs"]) for e in traj["content"][3::2]]


def body(page: str) -> str:
    return page[page.index("<body>"):page.index("</body>")]


def test_the_task_page_is_the_template_filled_in_and_scripts_keep_their_placeholders():
    template = "<p>${question}</p><p>${n}</p><script>let s = `${x}`;</script>"
    traj = convert(hit(template, {}, question="Why?", n=3))
    assert traj["content"][2]["html"] == "<p>Why?</p><p>3</p><script>let s = `${x}`;</script>"
    assert traj["content"][1] == {"class_": "api_action", "function": "goto",
                                  "kwargs": {"url": "https://turkingbench.github.io/tasks/T__0"}, "description": None}
    assert traj["details"] == {"task": "T", "title": "t", "task_description": "d", "keywords": "k"}
    assert len(traj["content"]) == 3


def test_a_radio_already_chosen_gets_no_click_and_a_new_choice_clears_the_group():
    template = ('<input type="radio" name="q" value="a" checked><input type="radio" name="q" value="b">'
                '<input type="radio" name="r" value="x" checked>')
    traj = convert(hit(template, {"q": "b", "r": "x"}))
    assert actions(traj) == [("click", {"xpath": '//input[@name="q" and @type="radio" and @value="b"]'})]
    assert body(traj["content"][-1]["html"]) == (
        '<body><input type="radio" name="q" value="a"/><input type="radio" name="q" value="b" checked="checked"/>'
        '<input type="radio" name="r" value="x" checked="checked"/>')


def test_an_empty_checkbox_answer_clears_a_box_checked_by_default_and_on_checks_one():
    template = '<input type="checkbox" name="a" checked><input type="checkbox" name="b"><input type="checkbox" name="c">'
    traj = convert(hit(template, {"a": "", "b": "on", "c": ""}))
    assert actions(traj) == [("click", {"xpath": '//input[@name="a" and @type="checkbox" ]'}),
                             ("click", {"xpath": '//input[@name="b" and @type="checkbox" ]'})]
    assert body(traj["content"][-1]["html"]) == ('<body><input type="checkbox" name="a"/>'
                                                 '<input type="checkbox" name="b" checked="checked"/>'
                                                 '<input type="checkbox" name="c"/>')


def test_inputs_act_in_page_order_and_hidden_or_absent_answers_get_no_action():
    template = ('<input type="hidden" name="h"><textarea name="why"></textarea><input name="age">'
                '<select name="s"><option value="1">one</option><option>two</option></select><input type="submit">')
    traj = convert(hit(template, {"s": "two", "nowhere": "x", "age": "7", "h": "js", "why": "because"}))
    assert actions(traj) == [("fill", {"xpath": '//textarea[@name="why"]', "value": "because"}),
                             ("fill", {"xpath": '//input[@name="age"]', "value": "7"}),
                             ("select_option", {"xpath": '//select[@name="s"]', "value": "two"})]
    assert body(traj["content"][-1]["html"]) == (
        '<body><input type="hidden" name="h"/><textarea name="why">because</textarea><input name="age" value="7"/>'
        '<select name="s"><option value="1">one</option><option selected="selected">two</option></select>'
        '<input type="submit"/>')


def test_answers_the_page_already_shows_get_no_action():
    template = '<input name="a" value="x"><textarea name="b">y</textarea><select name="c"><option>1</option></select>'
    assert len(convert(hit(template, {"a": "x", "b": "y", "c": "1"}))["content"]) == 3


def test_a_choice_the_page_does_not_offer_is_refused_with_the_values_it_does():
    radios = '<input type="radio" name="q" value="a"><input type="radio" name="q" value="b">'
    assert error(hit(radios, {"q": "c"})) == "answer q='c' is none of the radio values (a, b)"
    select = '<select name="s"><option value="1">one</option></select>'
    assert error(hit(select, {"s": "one"})) == "answer s='one' is none of the options of select 's'"


def test_an_xpath_that_would_select_another_input_is_refused():
    """A radio without a value (value "on") has no value test: the XPath would click the group's first."""
    template = '<input type="radio" name="q" value="a"><input type="radio" name="q">'
    assert error(hit(template, {"q": "on"})) == ('//input[@name="q" and @type="radio" ] does not select the answered '
                                                 'input first')


def test_records_the_converter_cannot_map_are_refused_with_the_reason():
    assert error({"Template": "<p/>"}).startswith("record needs string Task, Title, Description, Keywords and Template")
    assert error(hit("<p>${q}</p>", {}, q=["a"])) == "field 'q' is a list, not text"
    assert error(hit('<input name="a">', {"a": None})) == "Answer['a'] is a NoneType, not text"
    assert error(hit("", {})) == "the Template holds no HTML"


def test_without_lxml_the_converter_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "lxml", None)
    with pytest.raises(CurateError, match=r"needs lxml: pip install 'curate\[adp\]'"):
        form.parse("<p>x</p>")


@settings(max_examples=60, deadline=None)
@given(value=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\ufffe\uffff"),
                     min_size=1, max_size=8).filter(lambda v: v != "other"))
@example(value='"')
@example(value="'")
@example(value="""a"b'c""")
@example(value='""\'\'')
def test_an_answer_value_with_any_quotes_names_its_input(value):
    """XPath 1.0 literals have no escapes: a value with both quotes is written with concat()."""
    root = form.parse('<input type="radio" name="q" value="other"><input type="radio" name="q" value="x">')
    root.xpath("//input")[1].set("value", value)
    (action,) = form.answer(root, "q", root.xpath("//input"), value)
    assert root.xpath(action.kwargs["xpath"]) == [root.xpath("//input")[1]]
