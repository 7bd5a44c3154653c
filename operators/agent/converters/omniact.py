"""OmniAct (desktop/web screens with a PyAutoGUI script per task) -> ADP.

The screenshot is an image_observation annotated with the labelled UI boxes (element type
"button", the box from its top-left and bottom-right corners); the task text "Task: ...
Output Script:\\n<script>" becomes the user's task and a python code_action whose description
is the heading ("Output Script") the reference keeps.
"""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Unconvertible, code, image_obs, trajectory, unnamed_obs

NEEDS = "the screenshot on disk: the trajectories name the record's `image` path"

_TASK = re.compile(r"^\s*Task:\s*(?P<task>.*?)\n(?P<heading>Output Script):?\n(?P<script>.*)$", re.DOTALL)


def _annotations(box: dict) -> list[dict]:
    corners = zip(box.get("top_left") or [], box.get("bottom_right") or [], box.get("label") or [])
    return [{"text": label, "element_type": "button",
             "bounding_box": {"x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0}}
            for (x0, y0), (x1, y1), label in corners]


def convert(record: dict, fallback_id: str) -> dict:
    task, image = record.get("task"), record.get("image")
    if not isinstance(task, str) or not isinstance(image, str):
        raise Unconvertible("record needs a string 'task' and 'image'")
    m = _TASK.match(task)
    if m is None:
        raise Unconvertible("task is not 'Task: ...\\nOutput Script:\\n<script>'")
    events = [image_obs(image, annotations=_annotations(record.get("box") or {})),
              unnamed_obs(m["task"].strip()),
              code("python", m["script"].strip(), m["heading"])]
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    return trajectory(traj_id, events)
