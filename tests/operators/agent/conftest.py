"""Fixtures of the ADP tests."""

import pytest

from tests.operators.agent import adp_fixtures


@pytest.fixture
def reference_fixtures():
    """Marks a test that reads shared/fixtures/adp: skipped without them, failed in CI."""
    adp_fixtures.require()
