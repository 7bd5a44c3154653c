"""`curate adp demo`: synthetic raw AgentInstruct OS records for recipes/agent-sft.yaml (no download)."""

from __future__ import annotations

import json

import pytest

from curate.errors import CurateError
from curate_operators.agent import converters
from curate_operators.agent.demo import generate
from curate_operators.agent.schema import validate_trajectory


def test_demo_records_convert_to_valid_adp_except_the_planted_ones(tmp_path):
    path = generate(tmp_path, trajectories=120, seed=3)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    units = list(converters.iter_convert(converters.get("agenttuning_os"), records))
    converted = [u.trajectory for u in units if u.trajectory is not None]
    for traj in converted:
        validate_trajectory(traj)
    unconvertible = [u.error for u in units if u.trajectory is None]
    assert unconvertible and all("no 'conversations' list" in e for e in unconvertible)
    contents = [str(t["content"]) for t in converted]
    copies = len(contents) - len(set(contents))
    assert len(converted) - copies == 120 and copies > 0
    # every session ends with an answer or finish, and bash actions alternate with OS outputs
    assert all(t["content"][-1]["content"].startswith("<finish>") for t in converted)
    assert {e["class_"] for t in converted for e in t["content"]} == {"text_observation", "code_action",
                                                                      "message_action"}


def test_demo_is_deterministic_per_seed(tmp_path):
    a = generate(tmp_path / "a", trajectories=50, seed=1).read_bytes()
    assert generate(tmp_path / "b", trajectories=50, seed=1).read_bytes() == a
    assert generate(tmp_path / "c", trajectories=50, seed=2).read_bytes() != a


def test_demo_needs_at_least_one_trajectory(tmp_path):
    with pytest.raises(CurateError, match="trajectories >= 1"):
        generate(tmp_path, trajectories=0)
