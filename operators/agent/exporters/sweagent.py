"""ADP -> SWE-agent SFT conversations (`{from: human|gpt, value}`).

SWE-agent has the tools `bash`, `str_replace_editor` and `submit`. Thoughts go in
`<think>` blocks; bash code runs as is, python code as `python -c $'...'`, API calls of a
python API as their call text in bash; the finish message becomes `submit`. Observations
that answer an action are prefixed with `OBSERVATION:`. Web data and code in other
languages cannot be rendered and are skipped with the reason.
"""

from __future__ import annotations

from curate_operators.agent.environments import Environment, api_intro
from curate_operators.agent.exporters._common import (Skip, Turns, observation_text, call_source, finish_text, function_block, is_action,
                                              literal)

NATIVE_TOOLS = {"bash", "str_replace_editor", "submit"}
_SUBMIT = "<function=submit>\n</function>"


def _think(thought: str | None) -> str:
    return f"<think>\n{thought}\n</think>\n\n" if thought else ""


def python_command(code: str) -> str:
    # The reference wraps the code in $'...' as is, without escaping quotes inside it.
    return f"python -c $'{code}'"


def _action(i: int, event: dict, env: Environment) -> str:
    if event["class_"] == "code_action":
        lang, code = event["language"], event["content"]
        if lang in ("bash", "sh", "shell"):
            return function_block("bash", {"command": code})
        if lang in ("python", "ipython"):
            return function_block("bash", {"command": python_command(code)})
        raise Skip(f"event {i}: SWE-agent cannot run {lang} code")
    fn, kwargs = event["function"], event["kwargs"]
    if fn == "submit":
        return _SUBMIT
    if fn in NATIVE_TOOLS:
        return function_block(fn, {k: literal(v) for k, v in kwargs.items()})
    if env.tool == "execute_bash":
        raise Skip(f"event {i}: shell function {fn!r} has no SWE-agent tool")
    return function_block("bash", {"command": call_source(fn, kwargs)})


def render(traj: dict, env: Environment) -> list[dict]:
    if env.web:
        raise Skip("web-browsing data has no SWE-agent rendering")
    events = traj["content"]
    turns = Turns(env.separate_turns)
    say = turns.say
    for i, e in enumerate(events):
        cls = e["class_"]
        if cls == "text_observation":
            if e["source"] == "agent":
                say("gpt", e["content"])
            else:
                after_action = i > 0 and is_action(events[i - 1])
                say("human", ("OBSERVATION:\n" if after_action else "") + observation_text(e, env.strip_observations))
        elif cls in ("web_observation", "image_observation"):
            raise Skip(f"event {i}: {cls} has no SWE-agent rendering")
        elif is_action(e):
            say("gpt", _think(e.get("description")) + _action(i, e, env))
        else:
            said = finish_text(e)
            description = e.get("description")
            if said is None:
                say("gpt", _think(description) + e["content"])
            else:
                # The reference's spacing: no blank line before submit, three newlines before a final answer.
                think = f"<think>\n{description}\n</think>" if description else ""
                say("gpt", think + ("\n\n\n" if think and said else "") + said + _SUBMIT)
    head = ""
    if env.tool != "execute_bash":
        docs = env.sweagent_docs if env.sweagent_docs is not None else env.docs
        head = api_intro(env, "bash", traj["id"], also=False, docs=docs)
    return turns.records(head)
