"""pii_redact: replaces e-mail addresses, IP addresses, phone numbers and card numbers with tokens.

Each kind is a regular expression plus, where one exists, a check that the match really is one:
IP addresses must parse (Python's ipaddress: octets up to 255, valid IPv6), card numbers must
pass the Luhn checksum (13-19 digits, optionally grouped by spaces or dashes). Phone numbers
need separators between digit groups and end in a group of four digits (a bare run of digits,
or a list of numbers such as "2024 404 404", is not taken for one); number lists ending in four
digits ("2024 2024 2024") remain a false positive, as for any regex. Kinds run in
the order cards, e-mails, IPs, phones, so a card number is not redacted as a phone.

Rows are never removed, so no original value reaches the trace; the manifest's step entry
counts the redactions per kind (`counts`), not what was redacted.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, Literal

import pyarrow as pa
from pydantic import Field

from curate.columns import put, text_array
from curate.ops import Map, Params, reads_column

Kind = Literal["credit_card", "email", "ip_address", "phone"]

EMAIL = re.compile(r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
                   r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}\b")
IPV4 = r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)"
IPV6 = r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])"
IP = re.compile(f"{IPV4}|{IPV6}")
CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# Not part of a longer run of digit groups (a card number, a list of numbers).
PHONE = re.compile(r"(?<![\w+,])(?<!\d[ .-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?|\d{2,4}[ .-])\d{2,4}[ .-]\d{4}"
                   r"(?![\w-])(?![ .-]\d)")

ORDER: tuple[Kind, ...] = ("credit_card", "email", "ip_address", "phone")
TOKENS = {"credit_card": "<CREDIT_CARD>", "email": "<EMAIL>", "ip_address": "<IP_ADDRESS>", "phone": "<PHONE>"}


def luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


CHECKS: dict[Kind, tuple[re.Pattern, Callable[[str], bool]]] = {
    "credit_card": (CARD, lambda m: luhn(re.sub(r"[ -]", "", m))),
    "email": (EMAIL, lambda m: True),
    "ip_address": (IP, _is_ip),
    "phone": (PHONE, lambda m: sum(c.isdigit() for c in m) >= 7),
}


class PiiRedactParams(Params):
    kinds: list[Kind] = Field(list(ORDER), description="What to redact: credit_card, email, ip_address, phone.")
    tokens: dict[Kind, str] = Field(TOKENS, description="The replacement of each kind.")
    columns: list[str] | None = reads_column(None, "Text columns to redact; null: the recipe's text column.",
                                             instead_of_text=True)


class PiiRedact(Map):
    """Replaces personal data in text with a token per kind, counting the replacements."""

    name = "pii_redact"
    Params = PiiRedactParams

    def __init__(self, params=None, *, seed: int = 0, text_column: str = "text"):
        super().__init__(params, seed=seed, text_column=text_column)
        self.kinds = [k for k in ORDER if k in self.params.kinds]
        self.tokens = {**TOKENS, **self.params.tokens}
        self.counts = dict.fromkeys(self.kinds, 0)

    def redact(self, text: str) -> str:
        for kind in self.kinds:
            pattern, valid = CHECKS[kind]

            def replace(match: re.Match, kind=kind, valid=valid) -> str:
                if not valid(match.group()):
                    return match.group()
                self.counts[kind] += 1
                return self.tokens[kind]

            text = pattern.sub(replace, text)
        return text

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        for name in self.requires:
            column = text_array(batch, name, self.name)
            redacted = [None if t is None else self.redact(t) for t in column.to_pylist()]
            batch = put(batch, name, redacted, column.type)
        return batch

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = self.counts, dict.fromkeys(self.kinds, 0)
        return {f"redacted_{kind}": n for kind, n in counts.items() if n}
