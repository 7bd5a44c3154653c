"""NNetNav-WA (WebArena browsing; same raw format as NNetNav-Live) -> ADP; see _nnetnav for the rules."""

from operators.agent.converters._nnetnav import make

GROUP_BY = "id"
convert = make("nnetnav-wa")
