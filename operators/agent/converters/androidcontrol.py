"""AndroidControl (one record per episode: goal, screenshots with their accessibility trees, actions
and the step instructions) -> ADP.

The goal opens the trajectory as a message (the reference's way); then each screenshot is an
image_observation (source user, as the reference writes it) annotated with the elements of its
accessibility tree that have text or a content description (the text first; the class name as
the element type, the pixel box), each followed by the action taken on it: an api_action with
the action's fields as kwargs and the step instruction as its description. The episode ends with
the screenshot after the last action. `navigate_back` / `navigate_home` are `back` / `home`
(the reference samples show `back`; `home` follows it).
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible, api, image_obs, message, trajectory

NEEDS = "screenshots on disk: the trajectories name the `screenshots` paths"

_RENAMED = {"navigate_back": "back", "navigate_home": "home"}


def _annotations(tree) -> list[dict]:
    if not isinstance(tree, list):
        raise Unconvertible("an accessibility tree is not a list of elements")
    out = []
    for node in tree:
        label = node.get("text") or node.get("content_description")
        if not label:
            continue
        box = node["bbox_pixels"]
        out.append({"text": label, "element_type": node.get("class_name"),
                    "bounding_box": {"x": float(box["x_min"]), "y": float(box["y_min"]),
                                     "width": float(box["width"]), "height": float(box["height"])}})
    return out


def _action(action, instruction) -> dict:
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        raise Unconvertible(f"action without an action_type: {action!r}")
    name = action["action_type"]
    return api(_RENAMED.get(name, name), {k: v for k, v in action.items() if k != "action_type"}, instruction)


def convert(record: dict, fallback_id: str) -> dict:
    goal, shots, trees = record.get("goal"), record.get("screenshots"), record.get("accessibility_trees")
    actions, instructions = record.get("actions"), record.get("step_instructions")
    if not isinstance(goal, str) or not all(isinstance(v, list) for v in (shots, trees, actions, instructions)):
        raise Unconvertible("record needs a goal and lists of screenshots, accessibility_trees, actions and "
                            "step_instructions")
    if not (len(shots) == len(trees) == len(actions) + 1 and len(instructions) == len(actions)):
        raise Unconvertible(f"{len(shots)} screenshots and {len(trees)} trees for {len(actions)} actions and "
                            f"{len(instructions)} instructions (expected one screenshot more than actions)")
    events = [message(goal)]
    for i, (shot, tree) in enumerate(zip(shots, trees)):
        events.append(image_obs(shot, source="user", annotations=_annotations(tree)))
        if i < len(actions):
            events.append(_action(actions[i], instructions[i]))
    traj_id = str(record.get("episode_id") if record.get("episode_id") is not None else fallback_id)
    return trajectory(traj_id, events)
