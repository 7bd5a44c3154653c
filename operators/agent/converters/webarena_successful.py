"""WebArena successful trajectories (observation / action steps of WebArena runs) -> ADP.

The intent is the user's task. Each observation step is a web_observation: the reference puts
the accessibility-tree text in `html` and the screenshot in an image_observation (viewport
1280x720, WebArena's); each action step is an api_action named by its `action_name`, with the
WebArena action fields that action takes as kwargs and the model's chain of thought (`cot`)
as its description.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible, api, image_obs, trajectory, unnamed_obs, web_obs

NEEDS = "screenshots on disk: the trajectories name each step's `screenshot_path`"

VIEWPORT = [1280, 720]
# WebArena's action space: the fields of its action record each action uses.
_ARGUMENTS = {
    "click": ("element_id",), "hover": ("element_id",), "type": ("element_id", "text"),
    "press": ("key_comb",), "scroll": ("direction",), "goto": ("url",), "tab_focus": ("page_number",),
    "stop": ("answer",), "new_tab": (), "close_tab": (), "go_back": (), "go_forward": (), "none": (),
}


def _action(step: dict, i: int) -> dict:
    action = step.get("action")
    name = action.get("action_name") if isinstance(action, dict) else None
    if name not in _ARGUMENTS:
        raise Unconvertible(f"trajectory[{i}]: unknown WebArena action {name!r}")
    missing = [k for k in _ARGUMENTS[name] if k not in action]
    if missing:
        raise Unconvertible(f"trajectory[{i}]: {name} action without {', '.join(missing)}")
    cot = (step.get("metadata") or {}).get("cot") or ""
    return api(name, {k: action[k] for k in _ARGUMENTS[name]}, cot)


def _page(step: dict) -> dict:
    shot = step.get("screenshot_path")
    image = image_obs(shot, annotations=[]) if isinstance(shot, str) else None
    return web_obs(html=step.get("axtree"), url=step.get("url"), image=image, viewport_size=list(VIEWPORT))


def convert(record: dict, fallback_id: str) -> dict:
    steps, intent = record.get("trajectory"), record.get("intent")
    if not isinstance(steps, list) or not steps or not isinstance(intent, str):
        raise Unconvertible("record needs an 'intent' and a 'trajectory' list of steps")
    events = [unnamed_obs(intent)]
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise Unconvertible(f"trajectory[{i}] is not an object")
        events.append(_action(step, i) if "action" in step else _page(step))
    traj_id = str(record.get("task_id") if record.get("task_id") is not None else fallback_id)
    return trajectory(traj_id, events)
