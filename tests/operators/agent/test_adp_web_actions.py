"""Web converters pick the action as the ADP reference does: after the model's reasoning, in the
dataset's action grammar. Every case starts from a real raw record of the fixtures and varies the
response around its action (reasoning before and after it, several fenced blocks, stop answers);
the converted trajectory must be the reference one, with the reasoning as the thought.
"""

from __future__ import annotations

import copy
import re
from itertools import groupby

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.operators.agent.adp_fixtures import load, needs_fixtures
from curate_operators.agent import converters

pytestmark = needs_fixtures

HEADER, EOT = "<|start_header_id|>assistant<|end_header_id|>\n", "\n<|eot_id|>"
SUMMARY = "In summary, the next action I will perform is"
# A page element quoted in a fenced block, as models do in their reasoning: not an action.
ELEMENT = "```[78] textbox 'Search models, datasets, users...'```"
# Reasoning text that opens no fenced block, comment, call or special token of its own.
reasoning = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="`<#("), max_size=120)
hypothesis_settings = settings(max_examples=40, deadline=None,
                               suppress_health_check=[HealthCheck.function_scoped_fixture])


def convert(source: str, unit):
    (out,) = converters.iter_convert(converters.get(source), unit if isinstance(unit, list) else [unit])
    assert out.error is None, out.error
    return out.trajectory


# --- NNetNav (live and WebArena): WebArena actions in ``` after "In summary, the next action ..." ---

def nnetnav_steps() -> list[tuple[list[dict], int, str, dict]]:
    """(the trajectory's raw step records, step index, the step's action, reference trajectory)."""
    raw, std = load("nnetnav-live", "sample_raw.json"), load("nnetnav-live", "sample_std.json")
    out = []
    for (_, group), ref in zip(groupby(raw, key=lambda r: r["id"]), std):
        records = list(group)
        for k, rec in enumerate(records):
            action = re.findall(r"```(.*?)```", rec["output"], re.DOTALL)[-1].strip()
            out.append((records, k, action, ref))
    return out


def with_response(records: list[dict], k: int, body: str) -> list[dict]:
    records = copy.deepcopy(records)
    records[k]["output"] = HEADER + body + EOT
    return records


def expected(ref: dict, k: int, description: str, **event) -> dict:
    ref = copy.deepcopy(ref)
    ref["content"][2 + 2 * k].update(description=description, **event)
    return ref


# variant name -> (reasoning, action) -> (response, the thought the converter must keep)
NNETNAV_VARIANTS = {
    "page element quoted in a fence before the action": lambda r, a: (
        f"{r}\nThe box I mean is {ELEMENT}.\n\n{SUMMARY} ```{a}```", f"{r}\nThe box I mean is {ELEMENT}."),
    "previous action quoted before the announced one": lambda r, a: (
        f"Earlier I performed ```go_back``` and it did not help. {r}\n\n{SUMMARY} ```{a}```",
        f"Earlier I performed ```go_back``` and it did not help. {r}"),
    "reasoning after the action": lambda r, a: (
        f"{r}\n\n{SUMMARY} ```{a}```\nThis moves toward the objective; next I expect {ELEMENT}.", r),
    "unannounced action after quoted elements": lambda r, a: (
        f"{r}\nThe box is {ELEMENT}. So I do ```{a}```", f"{r}\nThe box is {ELEMENT}. So I do"),
    "action fenced on lines of its own": lambda r, a: (f"{r}\n\n{SUMMARY}\n```\n{a}\n```\n", r),
}


@pytest.mark.parametrize("source", ["nnetnav-live", "nnetnav-wa"])
@pytest.mark.parametrize("variant", NNETNAV_VARIANTS)
def test_nnetnav_action_is_the_grammar_block_after_the_reasoning(source, variant):
    for records, k, action, ref in nnetnav_steps():
        thought = ref["content"][2 + 2 * k]["description"]
        body, kept = NNETNAV_VARIANTS[variant](thought, action)
        traj = convert(source, with_response(records, k, body))
        assert traj["content"] == expected(ref, k, kept)["content"], (variant, action)


def test_nnetnav_stop_answers_keep_their_brackets_and_finish_only_at_the_end():
    records, _, _, ref = nnetnav_steps()[0]  # two steps: type, then stop
    answer = "The limit is [-1/6] (exactly)"
    traj = convert("nnetnav-live", with_response(records, 1, f"It is done. {SUMMARY} ```stop [{answer}]```"))
    assert traj["content"] == expected(ref, 1, "It is done.", content=f"<finish> {answer} </finish>")["content"]
    # a stop before the last step is a plain message; an empty answer is allowed
    mid = with_response(records, 0, f"Nothing to do. {SUMMARY} ```stop []```")
    assert convert("nnetnav-live", mid)["content"][2] == {
        "class_": "message_action", "content": "", "description": "Nothing to do."}


def test_nnetnav_typed_text_may_hold_brackets():
    records, k, _, ref = nnetnav_steps()[0]
    traj = convert("nnetnav-live", with_response(records, k, f"Type it. {SUMMARY} ```type [89] [f[x] as x->0] [1]```"))
    assert traj["content"][2]["kwargs"] == {"bid": '"89"', "text": '"f[x] as x->0"', "press_enter_after": "0"}


def test_nnetnav_a_response_without_a_grammar_action_is_rejected_with_what_it_found():
    records, k, _, _ = nnetnav_steps()[0]
    (out,) = converters.iter_convert(converters.get("nnetnav-live"),
                                     with_response(records, k, f"The box is {ELEMENT}. {SUMMARY} ```jump [3]```"))
    assert out.trajectory is None
    assert "no WebArena action" in out.error and "'jump [3]'" in out.error and "[78] textbox" in out.error


# Fences closed with more backticks than they opened with, as seen in real model outputs
# (```stop [answer]``````): a run of three or more backticks opens or closes a block.
EXTRA_BACKTICKS = {
    "action closed with six": lambda r, a: (f"{r}\n\n{SUMMARY} ```{a}``````", r),
    "action closed with six, text after": lambda r, a: (f"{r}\n\n{SUMMARY} ```{a}`````` That is all.", r),
    "action closed with four, text after": lambda r, a: (f"{r}\n\n{SUMMARY} ```{a}```` That is all.", r),
    "quoted element closed with six before the action": lambda r, a: (
        f"{r}\nThe box is ```[78] textbox 'Search'``````.\n\n{SUMMARY} ```{a}```",
        f"{r}\nThe box is ```[78] textbox 'Search'``````."),
    "action fenced with four on both sides": lambda r, a: (f"{r}\n\n{SUMMARY} ````{a}````", r),
}


@pytest.mark.parametrize("variant", EXTRA_BACKTICKS)
def test_nnetnav_fence_closed_with_extra_backticks_still_holds_the_action(variant):
    for records, k, action, ref in nnetnav_steps():
        thought = ref["content"][2 + 2 * k]["description"]
        body, kept = EXTRA_BACKTICKS[variant](thought, action)
        traj = convert("nnetnav-live", with_response(records, k, body))
        assert traj["content"] == expected(ref, k, kept)["content"], (variant, action)


@hypothesis_settings
@given(before=reasoning, after=reasoning, pick=st.integers(0, 10**6))
@example(before="", after="", pick=0)
@example(before="\n\n", after=".", pick=1)
@example(before="my next action should be", after=" [12]", pick=2)
def test_nnetnav_any_reasoning_around_an_action_gives_the_same_action(before, after, pick):
    steps = nnetnav_steps()
    records, k, action, ref = steps[pick % len(steps)]
    traj = convert("nnetnav-live", with_response(records, k, f"{before} {SUMMARY} ```{action}```{after}"))
    assert traj["content"] == expected(ref, k, before.strip())["content"]


def test_held_out_nnetnav_wa_trajectories_with_quoted_elements_all_convert(tmp_path):
    """The issue's case: every response's reasoning quotes a page element in a fence before the action."""
    raw = load("nnetnav-live", "sample_raw.json")
    for rec in raw:
        rec["output"] = rec["output"].replace("Let's think", f"The page shows {ELEMENT}. Let's think", 1)
    units = list(converters.iter_convert(converters.get("nnetnav-wa"), raw))
    assert [u.error for u in units] == [None] * 5


# --- Synatra: one Python call among comments (the thought) and prose ---

def synatra_cases() -> list[tuple[dict, str, dict]]:
    """(raw record, its action line, reference trajectory)."""
    raw, std = load("synatra", "sample_raw.json"), load("synatra", "sample_std.json")
    calls = [next(line for line in r["response"].split("\n") if re.match(r"^\w+\(.*\)$", line)) for r in raw]
    return list(zip(raw, calls, std))


SYNATRA_VARIANTS = {
    "call in a python fence": lambda c: f"```python\n{c}\n```",
    "call in a one-line fence": lambda c: f"```{c}```",
    "call in inline backticks": lambda c: f"`{c}`",
    "page quoted in a fence before the call": lambda c: f"```\n[98] button 'Install'\n```\n{c}",
    "helper call that is no action before the call": lambda c: f'find_element("Install")\n{c}',
    "prose after the call": lambda c: f"{c}\nThis should finish the step (hopefully).",
}


@pytest.mark.parametrize("variant", SYNATRA_VARIANTS)
def test_synatra_action_is_the_grammar_call_among_reasoning(variant):
    for rec, call, ref in synatra_cases():
        rec = dict(rec, response=rec["response"].replace(call, SYNATRA_VARIANTS[variant](call)))
        assert convert("synatra", rec)["content"] == ref["content"], variant


def test_synatra_stop_keeps_its_answer_as_the_documented_api_call():
    rec, call, ref = synatra_cases()[0]
    rec = dict(rec, response=rec["response"].replace(call, 'stop(answer="Installed (Chrome) [done]")'))
    event = convert("synatra", rec)["content"][-1]
    assert (event["function"], event["kwargs"]) == ("stop", {"answer": '"Installed (Chrome) [done]"'})
    assert event["description"] == ref["content"][-1]["description"]


def test_synatra_a_response_without_an_action_call_is_rejected_with_the_calls_it_holds():
    rec, call, _ = synatra_cases()[0]
    (out,) = converters.iter_convert(converters.get("synatra"),
                                     [dict(rec, response=rec["response"].replace(call, 'find_element("Install")'))])
    assert out.trajectory is None
    assert "no call of a Synatra action" in out.error and "find_element" in out.error


@hypothesis_settings
@given(before=reasoning, after=reasoning, pick=st.integers(0, 10**6))
@example(before="", after="", pick=0)
def test_synatra_any_prose_around_the_call_gives_the_same_action(before, after, pick):
    cases = synatra_cases()
    rec, call, ref = cases[pick % len(cases)]
    rec = dict(rec, response=rec["response"].replace(call, f"{before}\n{call}\n{after}"))
    assert convert("synatra", rec)["content"] == ref["content"]


# --- AgentInstruct WebShop (`Action:` then search[...] / click[...]) and Mind2Web (`Answer:` choice) ---

def agent_turns(dataset: str) -> list[tuple[dict, int, str, str]]:
    """(raw record, turn index, thought, action text) of every assistant turn with Thought and action."""
    marker = "Action:" if dataset == "agenttuning_webshop" else "Answer:"
    out = []
    for rec in load(dataset, "sample_raw.json"):
        for i, turn in enumerate(rec["conversations"]):
            m = re.match(rf"^\s*Thought:\s*(.*?)\s*{marker}\s*(.*?)\s*$", turn["content"], re.DOTALL)
            if turn["role"] != "user" and m:
                out.append((rec, i, m[1], m[2]))
    return out


def with_turn(rec: dict, i: int, text: str) -> dict:
    rec = copy.deepcopy(rec)
    rec["conversations"][i]["content"] = text
    return rec


WEBSHOP_VARIANTS = {
    "Action: at a line start inside the reasoning": lambda t, a: (
        f"Thought:\n{t}\nAction: none yet, I compare the options first.\n\nAction:\n{a}",
        f"{t}\nAction: none yet, I compare the options first."),
    "reasoning after the action": lambda t, a: (f"Thought:\n{t}\n\nAction:\n{a}\n\nThis gets me closer.", t),
    "action in a fence": lambda t, a: (f"Thought:\n{t}\n\nAction:\n```\n{a}\n```", t),
    "thought and action inline": lambda t, a: (f"Thought: {t}\nAction: {a}", t),
}


@pytest.mark.parametrize("variant", WEBSHOP_VARIANTS)
def test_webshop_action_is_the_grammar_action_after_the_reasoning(variant):
    for rec, i, thought, action in agent_turns("agenttuning_webshop"):
        ref = convert("agenttuning_webshop", rec)
        text, kept = WEBSHOP_VARIANTS[variant](thought, action)
        traj = convert("agenttuning_webshop", with_turn(rec, i, text))
        ref["content"][i]["description"] = kept
        assert traj["content"] == ref["content"], (variant, action)


def test_webshop_clicked_element_may_hold_brackets():
    rec, i, thought, _ = agent_turns("agenttuning_webshop")[0]
    traj = convert("agenttuning_webshop", with_turn(rec, i, f"Thought:\n{thought}\n\nAction:\nclick[Size [US] 9]"))
    assert traj["content"][i]["kwargs"] == {"element": '"Size [US] 9"'}


@pytest.mark.parametrize("dataset, text, reason", [
    ("agenttuning_webshop", "Thought:\nI should buy it.\n\nAction:\nbuy[Now]", "no WebShop action"),
    ("agenttuning_mind2web", "Thought: It is the quote.\nAnswer: the second one", "no choice letter"),
])
def test_agentinstruct_a_marker_without_a_grammar_action_is_rejected(dataset, text, reason):
    rec, i, _, _ = agent_turns(dataset)[0]
    (out,) = converters.iter_convert(converters.get(dataset), [with_turn(rec, i, text)])
    assert out.trajectory is None and reason in out.error and f"turn {i}" in out.error


MIND2WEB_VARIANTS = {
    "reasoning after the answer": lambda t, a: (f"Thought: {t}\nAnswer: {a}\n\nThat option matches the task.", t),
    "Answer: at a line start inside the reasoning": lambda t, a: (
        f"Thought: {t}\nAnswer: it must be one of the choices.\nAnswer: {a}",
        f"{t}\nAnswer: it must be one of the choices."),
}


@pytest.mark.parametrize("variant", MIND2WEB_VARIANTS)
def test_mind2web_answer_is_the_grammar_choice_after_the_reasoning(variant):
    for rec, i, thought, answer in agent_turns("agenttuning_mind2web"):
        ref = convert("agenttuning_mind2web", rec)
        text, kept = MIND2WEB_VARIANTS[variant](thought, answer)
        traj = convert("agenttuning_mind2web", with_turn(rec, i, text))
        ref["content"][i]["description"] = kept
        assert traj["content"] == ref["content"], (variant, answer)


@pytest.mark.parametrize("dataset", ["agenttuning_webshop", "agenttuning_mind2web"])
@hypothesis_settings
@given(after=reasoning, pick=st.integers(0, 10**6))
@example(after="", pick=0)
def test_agentinstruct_any_reasoning_after_the_action_gives_the_same_action(dataset, after, pick):
    cases = agent_turns(dataset)
    rec, i, thought, action = cases[pick % len(cases)]
    marker = "Action:" if dataset == "agenttuning_webshop" else "Answer:"
    traj = convert(dataset, with_turn(rec, i, f"Thought: {thought}\n{marker} {action}\n\n{after}"))
    assert traj["content"] == convert(dataset, rec)["content"]
