"""Every converter reproduces the reference's standardized samples from the raw samples."""

from __future__ import annotations

import pytest

from tests.operators.agent.adp_fixtures import (REPEATED_STD, equal_to_reference, load, needs_fixtures, reference_std,
                                                std_runs, with_raw)
from curate_operators.agent import converters
from curate_operators.agent.schema import validate_trajectory

pytestmark = needs_fixtures


@pytest.mark.parametrize("dataset", with_raw())
def test_converter_matches_reference_std(dataset):
    raw, std = load(dataset, "sample_raw.json"), reference_std(dataset)
    units = list(converters.iter_convert(converters.get(dataset), raw))
    assert [u.error for u in units] == [None] * len(units)
    ours = [t for u in units for t in u.trajectories]
    assert [t["id"] for t in ours] == [t["id"] for t in std]
    for mine, ref in zip(ours, std):
        validate_trajectory(mine)
        assert mine["details"] == ref["details"], mine["id"]
        assert len(mine["content"]) == len(ref["content"]), mine["id"]
        if not equal_to_reference(dataset, mine, ref):
            assert mine["content"] == ref["content"], mine["id"]  # shows where they differ
            raise AssertionError(f"{mine['id']}: not the reference's closing variants")


@pytest.mark.parametrize("dataset", sorted(REPEATED_STD))
def test_the_repeated_std_records_are_no_more_than_their_own_conversions(dataset):
    """reference_std keeps the last record of each run: every earlier one is a record's own
    conversion again, or (turkingbench, whose repeats lost their answers) its task, goto and page."""
    own = reference_std(dataset)
    for run in std_runs(dataset):
        for t, mine in zip(run, own):
            assert t in (mine, {**mine, "content": mine["content"][:3]})


def test_nnetnav_wa_shares_the_live_format():
    raw = load("nnetnav-live", "sample_raw.json")
    live = [u.trajectory for u in converters.iter_convert(converters.get("nnetnav-live"), raw)]
    wa = [u.trajectory for u in converters.iter_convert(converters.get("nnetnav-wa"), raw)]
    assert [t["content"] for t in wa] == [t["content"] for t in live]
    assert {t["details"]["source"] for t in wa} == {"nnetnav-wa"}


@pytest.mark.parametrize("dataset", with_raw())
def test_conversion_is_deterministic(dataset):
    raw = load(dataset, "sample_raw.json")
    conv = converters.get(dataset)
    first = [u.trajectories for u in converters.iter_convert(conv, raw)]
    assert [u.trajectories for u in converters.iter_convert(conv, raw)] == first
