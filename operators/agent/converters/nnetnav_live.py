"""NNetNav-Live (open-web browsing) -> ADP; see _nnetnav for the rules."""

from curate_operators.agent.converters._nnetnav import MODEL_TEXT, make  # noqa: F401 (the registry reads it here)

GROUP_BY = "id"
convert = make("nnetnav-live")
