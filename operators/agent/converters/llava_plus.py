"""LLaVA-Plus (visual tool-use chats) -> ADP.

A human turn that starts with the `<image>` placeholder is the record's image (under
`images/<data_source>/`) as an image observation, then the text after it; the reference reads
the placeholder only there (elsewhere it stays in the text). Human turns are user
observations, tool outputs included; a gpt turn is a message whose description is its `thoughts`, followed by an
api_action per tool call (`API_name`, `API_params`). The reference marks no finish message.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible, api, image_obs, message, trajectory, unnamed_obs
from curate_operators.agent.converters._model_text import Turns
from curate_operators.agent.converters.sharegpt import turns

NEEDS = "images on disk: the trajectories name `images/<data_source>/<image>`"

MODEL_TEXT = Turns("conversations", text="value", role="from", model=("gpt",))

_IMAGE = "<image>"


def _gpt(turn: dict, i: int) -> list[dict]:
    events = [message(turn["value"], turn.get("thoughts"))]
    for call in turn.get("actions") or []:
        if not isinstance(call, dict) or not isinstance(call.get("API_name"), str):
            raise Unconvertible(f"conversations[{i}]: action without an API_name")
        params = call.get("API_params") or {}
        if not isinstance(params, dict):
            raise Unconvertible(f"conversations[{i}]: API_params of {call['API_name']} is not an object")
        events.append(api(call["API_name"], params, None))
    return events


def convert(record: dict, fallback_id: str) -> dict:
    events = []
    for i, turn in turns(record):
        if turn.get("from") == "human":
            text = turn["value"]
            if text.startswith(_IMAGE) and isinstance(record.get("image"), str):
                folder = f"images/{record['data_source']}/" if record.get("data_source") else ""
                events.append(image_obs(folder + record["image"]))
                text = text[len(_IMAGE):].lstrip("\n")
            events.append(unnamed_obs(text))
        elif turn.get("from") == "gpt":
            events += _gpt(turn, i)
        else:
            raise Unconvertible(f"conversations[{i}] has unknown speaker {turn.get('from')!r}")
    traj_id = str(record.get("unique_id") or record.get("id") or fallback_id)
    return trajectory(traj_id, events)
