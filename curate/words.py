"""Counted nouns in messages: "1 task", "2 tasks"."""


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
