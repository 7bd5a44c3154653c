"""GUI converters of the 2025-12 release refuse records they cannot map, with the reason: an
AndroidControl episode whose screenshots do not frame its actions, a ScreenAgent session that is
not a list of steps with English task and response."""

from __future__ import annotations

import copy

from tests.operators.agent.adp_fixtures import load, needs_fixtures
from curate_operators.agent import converters

pytestmark = needs_fixtures


def errors(source: str, records: list) -> list:
    return [u.error for u in converters.iter_convert(converters.get(source), records)]


def test_androidcontrol_needs_one_screenshot_more_than_actions():
    episode = copy.deepcopy(load("androidcontrol", "sample_raw.json")[0])
    assert errors("androidcontrol", [episode]) == [None]
    episode["screenshots"].pop()
    (error,) = errors("androidcontrol", [episode])
    assert "3 screenshots and 4 trees for 3 actions" in error
    (error,) = errors("androidcontrol", [{"goal": "g"}])
    assert "needs a goal and lists of screenshots" in error


def test_androidcontrol_action_without_a_type_is_refused():
    episode = copy.deepcopy(load("androidcontrol", "sample_raw.json")[0])
    del episode["actions"][1]["action_type"]
    (error,) = errors("androidcontrol", [episode])
    assert "action without an action_type" in error


def test_screenagent_sessions_are_lists_of_steps_with_english_text():
    session = copy.deepcopy(load("screenagent", "sample_raw.json")[0])
    (unit,) = converters.iter_convert(converters.get("screenagent"), [session])
    assert len(unit.trajectories) == len(session) and unit.error is None
    del session[2]["LLM_response_editer_en"]
    assert errors("screenagent", [session]) == ["step 2: needs string task_prompt_en and LLM_response_editer_en"]
    assert errors("screenagent", [[]]) == ["session without steps"]
    assert errors("screenagent", [{"session_id": "s"}]) == ["record is a dict, not an array"]
    assert errors("agenttuning_os", [[{"id": 1}]]) == ["record is a list, not an object"]
