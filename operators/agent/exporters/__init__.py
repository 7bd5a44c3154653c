"""ADP -> SFT exporters by style name: openhands, sweagent (`{from, value}` turns) and agentlab
(`{role, content}` turns, one sample per action).

`Exporter(style, system_prompt=..., environment=..., web=...)` renders validated trajectory
dicts to SFT records `{id, system, conversations}`. The system prompt is read from a file the
user can point to (default: ours, shipped in operators/agent/prompts/<style>_system.txt).
The environment (a shipped name, usually the source dataset, or a JSON file) gives the API
documentation and whether the data is web browsing; `web` overrides the latter.
A trajectory the style cannot render raises `Skip` with the reason.
"""

from __future__ import annotations

from pathlib import Path

from curate.errors import CurateError
from curate_operators.agent import environments
from curate_operators.agent.exporters import agentlab, openhands, sweagent
from curate_operators.agent.exporters._common import Skip

STYLES = {"openhands": openhands, "sweagent": sweagent, "agentlab": agentlab}
PROMPTS = Path(__file__).resolve().parent.parent / "prompts"

__all__ = ["Exporter", "Skip", "STYLES", "check_style"]


def check_style(style: str) -> str:
    if style not in STYLES:
        raise CurateError(f"unknown SFT style {style!r}; known styles: {', '.join(sorted(STYLES))}")
    return style


def read_system_prompt(style: str, path: str | None) -> str:
    file = Path(path) if path else PROMPTS / f"{style}_system.txt"
    try:
        return file.read_text(encoding="utf-8")
    except OSError as e:
        raise CurateError(f"system prompt file {file}: {e.strerror or e}") from None


class Exporter:
    def __init__(self, style: str, system_prompt: str | None = None, environment: str | None = None,
                 web: bool | None = None):
        self.style = check_style(style)
        self.module = STYLES[style]
        self.system = read_system_prompt(style, system_prompt)
        env = environments.load(environment)
        self.env = env if web is None else env.model_copy(update={"web": web})

    def export(self, traj: dict) -> list[dict]:
        """SFT records for one trajectory (several for agentlab); Skip when it cannot be rendered."""
        if self.style == "agentlab":
            return [{"id": sid, "system": self.system, "conversations": conv}
                    for sid, conv in agentlab.render_samples(traj, self.env)]
        return [{"id": traj["id"], "system": self.system, "conversations": self.module.render(traj, self.env)}]
