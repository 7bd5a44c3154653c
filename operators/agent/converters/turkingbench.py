"""TurkingBench (crowdsourcing tasks on the web: a HIT's HTML form and a worker's answers) -> ADP.

A record is one HIT: the task's HTML `Template` with `${field}` placeholders, the fields' values,
and the worker's `Answer` ({input name: value}). The trajectory is a web agent doing the HIT: the
user's instruction to go to the task's page on turkingbench.github.io, a goto and the page as
served (the template filled in), then for each answered input, in the order the page shows them,
the actions that set it (see _form_page.py) and the page after each one, as lxml's HTML parser
writes it back (the reference's serialization: only lxml gives it byte for byte).

Placeholders that name no field of the record stay as written (scripts in a page may use `${...}`
in JavaScript), and answers that name no input of the page are not acted on (no input to set).
"""

from __future__ import annotations

import re
from urllib.parse import quote

from curate_operators.agent.converters import _form_page as form
from curate_operators.agent.converters._events import Unconvertible, api, trajectory, unnamed_obs, web_obs

NEEDS = "the lxml package (pip install 'curate[adp]'): the pages after each action are its HTML parser's"

TASKS_URL = "https://turkingbench.github.io/tasks/"
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# Record field -> the trajectory's details key.
_DETAILS = {"Task": "task", "Title": "title", "Description": "task_description", "Keywords": "keywords"}


def _text(value, where: str) -> str:
    """A field or answer value as page text: strings as they are, numbers as Python writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise Unconvertible(f"{where} is a {type(value).__name__}, not text")


def _filled(record: dict) -> str:
    def value(m: re.Match) -> str:
        return _text(record[m[1]], f"field {m[1]!r}") if m[1] in record else m[0]

    return _PLACEHOLDER.sub(value, record["Template"])


def convert(record: dict, fallback_id: str) -> dict:
    answers = record.get("Answer")
    if not all(isinstance(record.get(k), str) for k in (*_DETAILS, "Template")) or not isinstance(answers, dict):
        raise Unconvertible("record needs string Task, Title, Description, Keywords and Template, and an Answer object")
    traj_id = str(record.get("_id") if record.get("_id") is not None else fallback_id)
    url = TASKS_URL + quote(traj_id)
    page = _filled(record)
    events = [unnamed_obs(f"Go to {url} and follow the instructions on the page"), api("goto", {"url": url}, None),
              web_obs(html=page, url=url)]
    root = form.parse(page)
    for name, inputs in form.fields(root).items():
        if name in answers:
            for action in form.answer(root, name, inputs, _text(answers[name], f"Answer[{name!r}]")):
                events += [api(action.function, action.kwargs, None), web_obs(html=form.serialized(root))]
    return trajectory(traj_id, events, {key: record[field] for field, key in _DETAILS.items()})
