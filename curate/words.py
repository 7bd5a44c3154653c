"""Counted nouns in messages: "1 task", "2 tasks"; "once", "3 times"; sizes: "12.5 MB"."""


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def size(n: float) -> str:
    """Bytes for a person to read: 512 B, 12.5 MB, 3.0 TB (units of 1024)."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n / 1024:.1f} TB"
