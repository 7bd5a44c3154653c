"""Toucan-1.5M (tool-use chats over MCP servers, OpenAI `function_call` messages) -> ADP.

Tool names carry their MCP server's name as a prefix (`exa-search-web_search_exa`); the reference
drops it, in the calls, the results and the tool declarations of the system prompt. The system
prompt is an environment observation named "system", user turns user observations, assistant
text messages, a `function_call` an api_action (JSON arguments as kwargs) and a `function`
message its named result; a final assistant text is the finish message.
"""

from __future__ import annotations

import json

from curate_operators.agent.converters._events import Unconvertible, api, message, text_obs, trajectory, turns
from curate_operators.agent.converters.openai_chat import mark_finish
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")


def _servers(record: dict) -> list[str]:
    servers = (record.get("metadata") or {}).get("mcp_servers") or []
    return [s["server_name"] for s in servers if isinstance(s, dict) and isinstance(s.get("server_name"), str)]


def _tool_names(record: dict, servers: list[str]) -> dict[str, str]:
    """Each prefixed tool name of the record -> its name without the server prefix."""
    names = {}
    for tool in record.get("available_tools") or []:
        name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
        for server in servers:
            if isinstance(name, str) and name.startswith(server + "-"):
                names[name] = name[len(server) + 1:]
    return names


def _unprefix(name: str, servers: list[str]) -> str:
    for server in servers:
        if name.startswith(server + "-"):
            return name[len(server) + 1:]
    return name


def _declarations(text: str, names: dict[str, str]) -> str:
    for full, short in names.items():
        text = text.replace(json.dumps(full), json.dumps(short))
    return text


def _call(call: dict, servers: list[str], i: int) -> dict:
    name, args = call.get("name"), call.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise Unconvertible(f"messages[{i}]: function_call arguments are not JSON") from None
    if not isinstance(name, str) or not isinstance(args, dict):
        raise Unconvertible(f"messages[{i}]: function_call needs a name and object arguments")
    return api(_unprefix(name, servers), args, None)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    servers = _servers(record)
    events = []
    for i, m in enumerate(conv):
        role, text = m.get("role"), m["content"]
        if role == "system":
            events.append(text_obs(_declarations(text, _tool_names(record, servers)), "environment", "system"))
        elif role == "user":
            events.append(text_obs(text))
        elif role == "assistant":
            if isinstance(m.get("function_call"), dict):
                if text:
                    events.append(message(text))
                events.append(_call(m["function_call"], servers, i))
            else:
                events.append(message(text))
        elif role in ("function", "tool"):
            name = m.get("name")
            events.append(text_obs(text, "environment", _unprefix(name, servers) if isinstance(name, str) else None))
        else:
            raise Unconvertible(f"messages[{i}] has unknown role {role!r}")
    traj_id = str(record.get("id") if record.get("id") is not None else record.get("uuid") or fallback_id)
    return trajectory(traj_id, mark_finish(events))
