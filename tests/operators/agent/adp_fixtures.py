"""The ADP reference fixtures (shared/fixtures/adp): raw, standardized and SFT samples per dataset."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

FIXTURES = Path(os.environ.get("ADP_FIXTURES", Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "adp"))
# Tests that read the fixtures; the `reference_fixtures` fixture (conftest.py) calls require().
needs_fixtures = pytest.mark.usefixtures("reference_fixtures")


def _missing() -> str | None:
    if FIXTURES.is_dir():
        return None
    return f"ADP fixtures not found at {FIXTURES} (put shared/ beside the repository or set ADP_FIXTURES)"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def require() -> None:
    """Skip when the fixtures are missing (a checkout without ../shared), but fail in CI: there
    they are always present, so their absence is a broken setup that must not pass as skips."""
    if (reason := _missing()) is not None:
        pytest.fail(reason, pytrace=False) if _in_ci() else pytest.skip(reason)

# The fixture README: for these datasets the reference drew the closing observation and finish
# message with an unseeded random choice, so the last two events may be any of the variants.
# mini-coder (2025-12 release, not in the README's list) closes the same way: its std sample ends
# with one of the same closing observations and finish messages.
RANDOM_CLOSING = {"agenttuning_alfworld", "agenttuning_kg", "agenttuning_webshop", "code_feedback", "swe-smith",
                  "swe-gym_openhands_sampled_trajectories", "nebius_SWE-agent-trajectories", "mini-coder"}

# The 2025-12 release's std sample of these datasets repeats records: it is the conversions of
# raw[:1], raw[:2] and raw[:3] concatenated, the three raw records converted as [0, 0', 1, 0', 1', 2].
# webarena_successful's repeats equal the first conversions; turkingbench's converter consumed each
# record's answers in memory, so its repeats (0', 1') stop after the first page: the goto and the
# task's page. A converter gives one trajectory per raw record, so these compare with the last
# record of each run, each raw record's own conversion (test_adp_converters checks the repeats).
REPEATED_STD = {"webarena_successful", "turkingbench"}


def std_runs(dataset: str) -> list[list[dict]]:
    """A REPEATED_STD sample cut into its runs: the conversions of raw[:1], raw[:2], ..."""
    std, n = load(dataset, "sample_std.json"), len(load(dataset, "sample_raw.json"))
    assert len(std) == n * (n + 1) // 2, f"{dataset}: {len(std)} std records are not runs over {n} raw ones"
    return [std[k * (k - 1) // 2: k * (k + 1) // 2] for k in range(1, n + 1)]


def reference_std(dataset: str) -> list[dict]:
    if dataset in REPEATED_STD:
        return [run[-1] for run in std_runs(dataset)]
    return load(dataset, "sample_std.json")


def equal_to_reference(dataset: str, mine: dict, ref: dict) -> bool:
    """The acceptance comparison: every field and event equal, except the last two events of a
    RANDOM_CLOSING trajectory that closes with the reference's random pair, which must be one of
    the same fixed variants."""
    from curate_operators.agent.converters._events import CLOSING_MESSAGES, CLOSING_OBSERVATIONS

    if mine["id"] != ref["id"] or mine["details"] != ref["details"] or len(mine["content"]) != len(ref["content"]):
        return False
    if dataset in RANDOM_CLOSING and ref["content"][-2]["content"] in CLOSING_OBSERVATIONS:
        last = mine["content"][-1]
        return (mine["content"][:-2] == ref["content"][:-2] and mine["content"][-2]["content"] in CLOSING_OBSERVATIONS
                and any(m in last["content"] + str(last["description"]) for m in CLOSING_MESSAGES))
    return mine["content"] == ref["content"]


def datasets() -> list[str]:
    """The fixture datasets; parametrized tests call this while pytest collects them, so when the
    fixtures are missing it gives no cases (pytest skips the test) or, in CI, fails the collection."""
    if (reason := _missing()) is not None:
        if _in_ci():
            pytest.fail(reason, pytrace=False)
        return []
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def load(dataset: str, name: str):
    path = FIXTURES / dataset / name
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    return json.loads(text) if text else ([] if text == "" else None)


def with_raw() -> list[str]:
    """Every dataset of the release with raw samples: all of them have a converter."""
    return [d for d in datasets() if (FIXTURES / d / "sample_raw.json").is_file()]


def sft_cases() -> list[tuple[str, str]]:
    """(dataset, style) of each reference SFT rendering; the exporters render the reference's own
    standardized samples."""
    return [(d, style) for d in datasets()
            for style in ("openhands", "sweagent", "agentlab")
            if (FIXTURES / d / "sft" / f"sample_sft_{style}.json").is_file()]


def environment_for(dataset: str) -> str | None:
    from curate_operators.agent import environments

    return dataset if dataset in environments.names() else None


def intro_pattern() -> re.Pattern:
    from curate_operators.agent.environments import ALSO_INTROS, INTROS

    alts = [re.escape(t).replace(re.escape("{tool}"), r"\w+") for t in INTROS + ALSO_INTROS]
    return re.compile("^(?:" + "|".join(alts) + ")")
