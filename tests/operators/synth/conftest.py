from tests.curate.llm.conftest import mock_llm  # noqa: F401  (the loopback mock LLM fixture)
