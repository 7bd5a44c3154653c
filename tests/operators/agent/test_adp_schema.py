"""ADP 1.0 validation: errors name the trajectory, the event index and the field."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate_operators.agent.schema import EVENT_CLASSES, TrajectoryError, validate_trajectory

TRAJ = {
    "id": "t1",
    "content": [
        {"class_": "text_observation", "content": "list the files", "name": None, "source": "user"},
        {"class_": "code_action", "language": "bash", "content": "ls", "description": "look first"},
        {"class_": "text_observation", "content": "a.txt", "source": "environment"},
        {"class_": "api_action", "function": "click", "kwargs": {"bid": '"12"'}},
        {"class_": "web_observation", "html": None, "axtree": "[12] button 'OK'", "url": "http://x",
         "image_observation": {"class_": "image_observation", "content": "shot.png", "annotations": None,
                               "source": "environment"}, "viewport_size": [1280, 720]},
        {"class_": "message_action", "content": "<finish> a.txt </finish>"},
    ],
    "details": {"source": "test"},
}


def test_a_valid_trajectory_passes():
    assert validate_trajectory(copy.deepcopy(TRAJ)).id == "t1"


@pytest.mark.parametrize("mutate,expected", [
    (lambda t: t["content"][3].__setitem__("class_", "mouse_action"), "event 3 (mouse_action), field 'class_': unknown class_"),
    (lambda t: t["content"][3].pop("function"), "event 3 (api_action), field 'function': Field required"),
    (lambda t: t["content"][3].__setitem__("kwargs", [1]), "event 3 (api_action), field 'kwargs'"),
    (lambda t: t["content"][1].pop("description"), "event 1 (code_action), field 'description': Field required"),
    (lambda t: t["content"][1].__setitem__("language", "cobol2"), "event 1 (code_action), field 'language'"),
    (lambda t: t["content"][2].__setitem__("source", "robot"), "event 2 (text_observation), field 'source'"),
    (lambda t: t["content"][4].__setitem__("viewport_size", [1, 2, 3]), "event 4 (web_observation), field 'viewport_size'"),
    (lambda t: t["content"][0].pop("class_"), "event 0, field 'class_': missing class_"),
    (lambda t: t["content"][5].__setitem__("contents", "x"), "event 5 (message_action), field 'contents': unknown field"),
    (lambda t: t["details"].__setitem__("n", 3), "field 'details.n'"),
    (lambda t: t.__setitem__("content", "not a list"), "field 'content'"),
])
def test_errors_name_trajectory_event_and_field(mutate, expected):
    traj = copy.deepcopy(TRAJ)
    mutate(traj)
    with pytest.raises(TrajectoryError) as err:
        validate_trajectory(traj)
    assert str(err.value).startswith("trajectory 't1'")
    assert expected in str(err.value)


def test_later_optional_fields_are_accepted_and_kept():
    traj = copy.deepcopy(TRAJ)
    traj["schema_version"] = "1.2"
    traj["content"][1]["reasoning_content"] = "because"
    traj["content"][3]["tool_call_id"] = "call_1"
    traj["content"][5]["reward"] = 1.0
    model = validate_trajectory(traj)
    assert model.schema_version == "1.2"
    assert model.content[1].reasoning_content == "because"
    assert model.content[3].tool_call_id == "call_1"
    assert model.content[5].reward == 1.0


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, len(TRAJ["content"]) - 1), cls=st.text(min_size=1, max_size=12))
def test_any_unknown_class_is_reported_at_its_event(index, cls):
    if cls in EVENT_CLASSES:
        return
    traj = copy.deepcopy(TRAJ)
    traj["content"][index]["class_"] = cls
    with pytest.raises(TrajectoryError) as err:
        validate_trajectory(traj)
    assert err.value.event == index and err.value.field == "class_"
