"""Android in the Wild (one record per step of an episode, consecutive steps grouped by episode) -> ADP.

The goal opens the trajectory (as a message, the way the reference writes it); each step is its
screenshot (`<image/encoded>.png`) as an image_observation annotated with the UI elements
(positions are [y, x, height, width], normalized), then its action. A dual-point gesture is
`touch_and_lift(x0, y0, x1, y1)` from the touch and lift points ([y, x], normalized). Other
action types keep their name in snake case, typed text as `text` (the reference samples show
only gestures, so these names are ours).
"""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Unconvertible, api, image_obs, message, trajectory

NEEDS = "screenshots on disk: the trajectories name `<image/encoded>.png`"

GROUP_BY = "episode_id"


def _annotations(step: dict) -> list[dict]:
    boxes = zip(step.get("image/ui_annotations_positions") or [], step.get("image/ui_annotations_text") or [],
                step.get("image/ui_annotations_ui_types") or [])
    return [{"text": text, "element_type": kind, "bounding_box": {"x": x, "y": y, "width": w, "height": h}}
            for (y, x, h, w), text, kind in boxes]


def _action(step: dict) -> dict:
    kind = step.get("results/action_type")
    if kind == "dual-point gesture":
        (ty, tx), (ly, lx) = step["results/yx_touch"], step["results/yx_lift"]
        return api("touch_and_lift", {"x0": tx, "y0": ty, "x1": lx, "y1": ly}, None)
    if not isinstance(kind, str) or not kind:
        raise Unconvertible(f"step {step.get('step_id')}: no action type")
    text = step.get("results/type_action")
    return api(re.sub(r"\W+", "_", kind.strip()).lower(), {"text": text} if kind == "type" else {}, None)


def convert(steps: list[dict], fallback_id: str) -> dict:
    steps = sorted(steps, key=lambda s: s.get("step_id", 0))
    goal = steps[0].get("goal_info")
    if not isinstance(goal, str):
        raise Unconvertible("episode has no goal_info")
    events = [message(goal)]
    for step in steps:
        if not isinstance(step.get("image/encoded"), str):
            raise Unconvertible(f"step {step.get('step_id')}: no screenshot path")
        events.append(image_obs(step["image/encoded"] + ".png", annotations=_annotations(step)))
        events.append(_action(step))
    traj_id = str(steps[0].get("episode_id") or fallback_id)
    return trajectory(traj_id, events)
