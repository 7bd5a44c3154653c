"""ADP -> OpenHands SFT conversations (`{from: human|gpt, value}`).

Actions become OpenHands function calls: bash code -> `execute_bash`, python (and other
languages, wrapped as `lang("...")`) -> `execute_ipython_cell`, API calls -> a call of
the dataset's API inside the environment's tool (`browser` for web data), the finish
message -> `finish`. Observations that answer an action are prefixed with
`EXECUTION RESULT of [tool]:`; web observations are rendered as OpenHands browser output.
"""

from __future__ import annotations

from curate_operators.agent.environments import Environment, api_intro
from curate_operators.agent.exporters._common import (Skip, Turns, observation_text, call_source, finish_text, function_block, is_action,
                                              literal, with_thought)

# Tools OpenHands has natively: their calls keep their own name and parameters.
NATIVE_TOOLS = {"str_replace_editor", "execute_bash", "execute_ipython_cell", "browser", "think"}
# BrowserGym actions: outside web datasets they still run in OpenHands' browser tool.
BROWSER_ACTIONS = {
    "goto", "click", "dblclick", "fill", "type", "hover", "press", "keyboard_press", "scroll", "go_back",
    "go_forward", "new_tab", "tab_close", "close_tab", "tab_focus", "select_option", "noop", "focus", "clear",
    "drag_and_drop", "upload_file", "mouse_click", "mouse_move",
}


def _language_note(lang: str) -> str:
    up = lang.upper()
    return (f"In the execute_ipython_cell code environment, you can execute {lang} code by wrapping it in the "
            f"following format: {lang}('YOUR {up} CODE')\nThe {lang} code must be provided as a quoted string "
            f"inside the {lang}(...) function. Ensure 'YOUR {up} CODE' is valid {lang} code.\n\n")


def _web_observation(event: dict, focused: str | None) -> str:
    return (f"[Current URL: {event.get('url')}]\n[Focused element bid: {focused}]\n\n[Action executed successfully.]\n"
            f"============== BEGIN accessibility tree ==============\n{event.get('axtree') or ''}\n"
            f"============== END accessibility tree ==============\n")


def _api_tool(env: Environment) -> str:
    """The tool that runs the dataset's API functions."""
    return env.tool or ("browser" if env.web else "execute_ipython_cell")


def _action(event: dict, env: Environment) -> tuple[str, str]:
    """(tool name, rendered call) of an api_action or code_action."""
    if event["class_"] == "code_action":
        lang, code = event["language"], event["content"]
        if lang in ("bash", "sh", "shell"):
            return "execute_bash", function_block("execute_bash", {"command": code})
        if lang in ("python", "ipython"):
            return "execute_ipython_cell", function_block("execute_ipython_cell", {"code": code})
        return "execute_ipython_cell", function_block("execute_ipython_cell", {"code": f'{lang}("{code}")'})
    fn, kwargs = event["function"], event["kwargs"]
    documented = bool(env.docs) and f"\n{fn}(" in f"\n{env.docs}"
    if fn in NATIVE_TOOLS and not documented:
        return fn, function_block(fn, {k: literal(v) for k, v in kwargs.items()})
    tool = "browser" if env.web or (fn in BROWSER_ACTIONS and not documented) else _api_tool(env)
    param = "command" if tool == "execute_bash" else "code"
    return tool, function_block(tool, {param: call_source(fn, kwargs)})


def render(traj: dict, env: Environment) -> list[dict]:
    events = traj["content"]
    turns = Turns(env.separate_turns)
    say = turns.say
    last_tool = None
    focused = None  # bid the previous action acted on, shown with the next page
    for i, e in enumerate(events):
        cls = e["class_"]
        after_action = i > 0 and is_action(events[i - 1])
        prefix = f"EXECUTION RESULT of [{last_tool}]:\n" if after_action else ""
        if cls == "text_observation":
            if e["source"] == "agent":
                say("gpt", e["content"])
            else:
                say("human", prefix + observation_text(e, env.strip_observations))
        elif cls == "web_observation":
            # Browser output is shown as the page itself, without an execution-result header.
            say("human", _web_observation(e, focused))
        elif cls == "image_observation":
            raise Skip(f"event {i}: a bare image_observation has no OpenHands rendering")
        elif is_action(e):
            last_tool, call = _action(e, env)
            focused = e["kwargs"].get("bid") if e["class_"] == "api_action" else None
            say(env.call_role, with_thought(e.get("description"), call))
        else:  # message_action
            said = finish_text(e)
            if said is None:
                say("gpt", with_thought(e.get("description"), e["content"]))
            else:
                call = function_block("finish", {"message": said, "task_completed": "true"})
                say(env.call_role, with_thought(e.get("description"), call))
    # Code in other languages runs through wrapper functions, documented before the task.
    langs = list(dict.fromkeys(e["language"] for e in events if e["class_"] == "code_action"
                               and e["language"] not in ("bash", "sh", "shell", "python", "ipython")))
    head = api_intro(env, _api_tool(env), traj["id"], also=env.also) + "".join(_language_note(x) for x in langs)
    return turns.records(head)
