"""Demo input for recipes/agent-sft.yaml: raw agent trajectories in the AgentInstruct OS format (the
recipe's default source, agenttuning_os), made up here so the recipe runs with no download and no
third-party data.

Each record is a short shell session: a task, `Think:` / `Act: bash` turns answered by the OS's
output, and a closing `Act: answer(...)` or `Act: finish`; the answer is what the commands printed.
Planted, like the text demo: copies of earlier sessions under new ids (exact_dedup removes them)
and records whose conversation is empty (adp_convert traces them as unconvertible).
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from curate.errors import CurateError

COPY_RATE = 0.05
EMPTY_RATE = 0.02

# Our own wording of the task prompt; the converter keeps what follows "Now, my problem is:".
INSTRUCTIONS = (
    "You are an assistant working in a Linux (Ubuntu) shell for me. In each turn, first think about what to "
    'do, then take exactly one action: "bash" to run commands, "answer" to answer my question, or "finish" '
    "when a task that needs no answer is done. Reply like this:\n\nThink: your thought.\n\nAct: bash\n\n"
    "```bash\n# your commands\n```\n\nor\n\nThink: your thought.\n\nAct: answer(your answer)\n\nor\n\n"
    "Think: your thought.\n\nAct: finish\n\nNow, my problem is:\n\n"
)
DIRS = ("/var/log", "/etc", "/usr/share/doc", "/home/user/projects", "/opt/data", "/srv/www", "/tmp/build")
NAMES = ("report", "backup", "access", "notes", "events", "build", "config", "metrics", "invoice", "draft")
EXTENSIONS = ("log", "txt", "csv", "json", "conf", "md")
WORDS = ("error", "warning", "timeout", "failed", "denied", "GET", "POST", "retry")


def _file(rng: random.Random) -> str:
    return f"{rng.choice(DIRS)}/{rng.choice(NAMES)}-{rng.randint(1, 99)}.{rng.choice(EXTENSIONS)}"


# Task makers: rng -> (task, steps); a step is (thought, "bash", command, output), (thought, "answer",
# value) or (thought, "finish").
def _count_files(rng):
    d, n = rng.choice(DIRS), rng.randint(12, 480)
    listing = " ".join(f"{rng.choice(NAMES)}.{rng.choice(EXTENSIONS)}" for _ in range(8))
    return f'How many regular files are directly in the directory "{d}"?', [
        (f"To count the files in {d}, I first look at what it holds.", "bash", f"ls {d}",
         f"{listing} [truncated because the output is too long]"),
        ("The listing is truncated, so I count the regular files with a command instead.", "bash",
         f"find {d} -maxdepth 1 -type f | wc -l", str(n)),
        (f"The command printed {n}, so there are {n} regular files.", "answer", str(n)),
    ]


def _count_matches(rng):
    path, word, n = _file(rng), rng.choice(WORDS), rng.randint(0, 900)
    return f"How many lines of {path} contain the word '{word}'?", [
        (f"grep -c counts the lines of {path} that match '{word}'.", "bash", f"grep -c '{word}' {path}", str(n)),
        (f"{n} lines match.", "answer", str(n)),
    ]


def _largest_file(rng):
    d, ext = rng.choice(DIRS), rng.choice(EXTENSIONS)
    size, name = rng.randint(1_000, 90_000_000), f"{d}/{rng.choice(NAMES)}-{rng.randint(1, 99)}.{ext}"
    return f"Which .{ext} file under {d} is the largest? Give its path.", [
        (f"I list the .{ext} files under {d} with their sizes and keep the largest.", "bash",
         f"find {d} -type f -name '*.{ext}' -printf '%s %p\\n' | sort -n | tail -1", f"{size} {name}"),
        (f"The largest is {name} with {size} bytes.", "answer", name),
    ]


def _disk_usage(rng):
    d, mb = rng.choice(DIRS), rng.randint(1, 40_000)
    return f"How many megabytes does {d} use on disk, rounded up?", [
        (f"du -sm reports the size of {d} in megabytes, rounded up.", "bash", f"du -sm {d} | cut -f1", str(mb)),
        (f"{d} uses {mb} MB.", "answer", str(mb)),
    ]


def _make_file(rng):
    d = f"/home/user/{rng.choice(NAMES)}-{rng.randint(1, 999)}"
    name, text = f"{rng.choice(NAMES)}.txt", f"{rng.choice(WORDS)} {rng.randint(1, 10_000)}"
    return f'Create the directory {d} with a file {name} in it that holds the line "{text}".', [
        ("I create the directory and write the line into the file.", "bash",
         f"mkdir -p {d} && echo '{text}' > {d}/{name}", ""),
        ("Now I check that the file holds the line.", "bash", f"cat {d}/{name}", text),
        ("The file holds the line, so the task is done.", "finish"),
    ]


TASKS = (_count_files, _count_matches, _largest_file, _disk_usage, _make_file)


def _session(rng: random.Random) -> list[dict]:
    task, steps = rng.choice(TASKS)(rng)
    turns = [{"role": "user", "content": INSTRUCTIONS + task}]
    for thought, act, *rest in steps:
        if act == "bash":
            command, output = rest
            act_text = f"Think: {thought}\n\nAct: bash\n\n```bash\n{command}\n```"
            turns.append({"role": "assistant", "content": act_text})
            turns.append({"role": "user", "content": f"The output of the OS:\n{output}"})
        elif act == "answer":
            turns.append({"role": "assistant", "content": f"Think: {thought}\n\nAct: answer({rest[0]})"})
        else:
            turns.append({"role": "assistant", "content": f"Think: {thought}\n\nAct: finish"})
    return turns


def generate(out_dir: str | Path, trajectories: int = 200, seed: int = 0) -> Path:
    """Write `trajectories` sessions (plus planted copies and empty records) to `out_dir/os.jsonl`.

    The same (trajectories, seed) always gives the same bytes.
    """
    if trajectories < 1:
        raise CurateError(f"the agent demo needs trajectories >= 1, got {trajectories}")
    rng = random.Random(seed)
    records: list[dict] = []
    sessions: list[list[dict]] = []
    for i in range(trajectories):
        sessions.append(_session(rng))
        records.append({"id": f"os_demo_{i}", "conversations": sessions[-1]})
        if rng.random() < COPY_RATE:
            records.append({"id": f"os_demo_{i}_copy", "conversations": rng.choice(sessions)})
        if rng.random() < EMPTY_RATE:
            records.append({"id": f"os_demo_{i}_empty", "conversations": []})
    path = Path(out_dir) / "os.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path
