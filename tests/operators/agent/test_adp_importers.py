"""The generic importers: OpenAI chat messages with tool calls, and ShareGPT conversations."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from curate_operators.agent import converters
from curate_operators.agent.schema import validate_trajectory


def _convert(name, records):
    return list(converters.iter_convert(converters.get(name), records))


def test_openai_chat_with_tool_calls():
    rec = {"id": "c1", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "what is in /tmp?"},
        {"role": "assistant", "content": "I will look.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls /tmp"}'}},
            {"id": "b", "type": "function", "function": {"name": "web_search", "arguments": '{"query": "tmp"}'}}]},
        {"role": "tool", "tool_call_id": "a", "name": "execute_bash", "content": "x.txt"},
        {"role": "tool", "tool_call_id": "b", "name": "web_search", "content": "results"},
        {"role": "assistant", "content": "There is x.txt."},
    ]}
    (unit,) = _convert("openai_chat", [rec])
    traj = unit.trajectory
    validate_trajectory(traj)
    classes = [e["class_"] for e in traj["content"]]
    assert classes == ["text_observation", "text_observation", "code_action", "text_observation", "api_action",
                       "text_observation", "message_action"]
    assert traj["content"][2]["content"] == "ls /tmp" and traj["content"][2]["description"] == "I will look."
    assert traj["content"][4] == {"class_": "api_action", "function": "web_search", "kwargs": {"query": "tmp"},
                                  "description": "I will look."}
    assert traj["content"][3]["source"] == "environment" and traj["content"][3]["name"] == "execute_bash"
    assert traj["content"][-1]["content"] == "<finish> There is x.txt. </finish>"


def test_openai_chat_bad_arguments_are_unconvertible_with_reason():
    rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": "{not json"}}]}]}
    (unit,) = _convert("openai_chat", [rec])
    assert unit.trajectory is None and "arguments are not JSON" in unit.error


_turn = st.one_of(
    st.builds(lambda v: {"from": "human", "value": v}, st.text(max_size=30)),
    st.builds(lambda v: {"from": "gpt", "value": v}, st.text(max_size=30)),
    st.builds(lambda v: {"from": "observation", "value": v}, st.text(max_size=30)),
    st.builds(lambda n, q: {"from": "function_call", "value": json.dumps({"name": n, "arguments": {"q": q}})},
              st.from_regex(r"[a-z_]{1,10}", fullmatch=True), st.text(max_size=10)),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_turn, min_size=1, max_size=12))
def test_sharegpt_gives_one_valid_event_per_turn(turns):
    (unit,) = _convert("sharegpt", [{"conversations": turns}])
    traj = unit.trajectory
    validate_trajectory(traj)
    assert len(traj["content"]) == len(turns)
    assert traj["id"] == "0"  # no id: the record's position


def test_unknown_source_lists_the_known_ones():
    import pytest

    from curate.errors import CurateError

    with pytest.raises(CurateError, match="known sources: .*agenttuning_alfworld.*sharegpt"):
        converters.get("agentinstruct")
