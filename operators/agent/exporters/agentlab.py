"""ADP -> AgentLab SFT samples (`{role: user|assistant, content}`), one sample per API action.

Each sample asks for the next action: the user turn holds the goal (the first user
message), the current page's accessibility tree (the latest web observation), AgentLab's
action space, the history of past actions and the request for the next action; the
assistant answers `{"thought": ..., "action": "fn(k=v, ...)"}` as JSON. Sample ids are
`<trajectory id>-<k>` with k the index of the agent turn in the trajectory. Trajectories
without API actions (code-only data) give no samples.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from curate_operators.agent.environments import Environment
from curate_operators.agent.exporters._common import Skip, call_source, finish_text

_PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


@lru_cache(maxsize=1)
def _templates() -> tuple[str, str]:
    return ((_PROMPTS / "agentlab_action_space.txt").read_text(encoding="utf-8"),
            (_PROMPTS / "agentlab_next_action.txt").read_text(encoding="utf-8"))


def _history(steps: list[tuple[str, str]]) -> str:
    return "".join(f"\n## step {n}\n\n### Thought\n{t}\n\n### Action\n{a}\n" for n, (t, a) in enumerate(steps))


def _user(goal: str, axtree: str | None, past: list[tuple[str, str]]) -> str:
    action_space, next_action = _templates()
    page = f"# Current page Accessibility Tree\n\n{axtree}\n============== \n\n" if axtree is not None else ""
    return f"# Goal\n{goal}\n\n{page}{action_space}# History of past actions\n{_history(past)}\n\n{next_action}"


def render_samples(traj: dict, env: Environment) -> list[tuple[str, list[dict]]]:
    """[(sample id, conversation)] for every API action of the trajectory."""
    events = traj["content"]
    first = events[0] if events else None
    if not first or first["class_"] != "text_observation":
        raise Skip("the trajectory does not start with a user message (the goal)")
    goal, axtree, past, samples, turn = first["content"], None, [], [], -1
    for e in events[1:]:
        cls = e["class_"]
        if cls == "web_observation":
            axtree = e.get("axtree") or ""
            continue
        if cls == "image_observation" or (cls == "text_observation" and e["source"] != "agent"):
            continue
        turn += 1  # an agent turn: action, message, or text the agent said
        if cls == "api_action":
            action = call_source(e["function"], e["kwargs"])
        elif cls == "message_action" and finish_text(e):
            action = f"send_msg_to_user({json.dumps(finish_text(e), ensure_ascii=False)})"
        else:
            continue
        thought = e.get("description") or ""
        answer = json.dumps({"thought": thought, "action": action})
        conv = [{"role": "user", "content": _user(goal, axtree, past)}, {"role": "assistant", "content": answer}]
        samples.append((f"{traj['id']}-{turn}", conv))
        past.append((thought, action))
    if not any(e["class_"] == "api_action" for e in events):
        raise Skip("no API actions: AgentLab samples are API (browser) actions")
    return samples


def render(traj: dict, env: Environment) -> list[dict]:
    """The first sample's conversation (the per-trajectory view used by tests and previews)."""
    samples = render_samples(traj, env)
    if not samples:
        raise Skip("no agent action to sample")
    return samples[0][1]
