"""NNetNav-Live (open-web browsing) -> ADP; see _nnetnav for the rules."""

from operators.agent.converters._nnetnav import make

GROUP_BY = "id"
convert = make("nnetnav-live")
