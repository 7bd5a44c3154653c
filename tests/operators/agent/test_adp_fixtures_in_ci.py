"""Without ../shared the ADP reference tests skip on a developer's machine, but fail in CI
(`CI=true`): a CI run that cannot see the fixtures must not pass as a row of skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.operators.agent import adp_fixtures

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def no_fixtures(tmp_path, monkeypatch):
    monkeypatch.setattr(adp_fixtures, "FIXTURES", tmp_path / "missing")


def test_missing_fixtures_skip_outside_ci(no_fixtures, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="ADP fixtures not found"):
        adp_fixtures.require()
    assert adp_fixtures.with_raw() == [] and adp_fixtures.sft_cases() == []


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_missing_fixtures_fail_in_ci(no_fixtures, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="ADP fixtures not found"):
        adp_fixtures.require()
    # the parametrized reference tests ask for the dataset list while pytest collects them
    with pytest.raises(pytest.fail.Exception, match="ADP fixtures not found"):
        adp_fixtures.with_raw()


def test_a_marked_reference_test_fails_in_ci_when_fixtures_are_missing(tmp_path):
    test = "tests/operators/agent/test_adp_cli.py::test_rejected_records_go_to_the_trace_with_the_reason"
    env = {**os.environ, "ADP_FIXTURES": str(tmp_path / "missing")}
    for ci, code, outcome in (("true", 1, "ERROR"), ("", 0, "SKIPPED")):
        env["CI"] = ci
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rEs", "-p", "no:cacheprovider", test],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        summary = [line for line in run.stdout.splitlines() if line.startswith(outcome)]
        assert run.returncode == code and "ADP fixtures not found" in "".join(summary), run.stdout + run.stderr
