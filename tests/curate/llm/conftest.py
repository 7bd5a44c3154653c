import pytest

from tests.curate.llm.mockkit import RunningMock


@pytest.fixture
def mock_llm(request):
    """A loopback mock LLM; `@pytest.mark.parametrize("mock_llm", [{options}], indirect=True)` sets options."""
    server = RunningMock(**getattr(request, "param", {}))
    yield server
    server.stop()
