import pyarrow as pa
import pytest
from hypothesis import example, given, strategies as st

from curate.errors import InputError
from curate_operators.text.pii_redact import PiiRedact, luhn


def redact(texts, **params):
    op = PiiRedact(PiiRedact.Params(**params))
    out = op.process(pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))
    return out.column("text").to_pylist(), op.take_counts()


def test_each_kind_is_replaced_and_counted():
    text = ("Write to jane.doe+news@mail.example.org or call +1 555-123-4567 / (030) 1234 5678. "
            "Server 192.168.10.254 and 2001:db8::8a2e:370:7334 logged card 4111 1111 1111 1111.")
    [out], counts = redact([text])
    assert out == ("Write to <EMAIL> or call <PHONE> / <PHONE>. "
                   "Server <IP_ADDRESS> and <IP_ADDRESS> logged card <CREDIT_CARD>.")
    assert counts == {"redacted_email": 1, "redacted_phone": 2, "redacted_ip_address": 2, "redacted_credit_card": 1}


@pytest.mark.parametrize("text", [
    "Version 1.2.3.4.5 is out.",          # not an IP address (five parts)
    "Octets 300.1.2.3 are too big.",      # fails ipaddress
    "Order 4111 1111 1111 1112 failed.",  # fails the Luhn check
    "It happened on 2021-10-12 at 10:30:00.",  # dates and times
    "Call extension 42 please.",
    "Use std::vector here.",
    "Codes 2024 404 404 and 12:30 again.",  # a number list, not a phone
])
def test_lookalikes_are_left_alone(text):
    assert redact([text]) == ([text], {})


def test_counts_are_taken_once_and_tokens_and_kinds_are_configurable():
    op = PiiRedact(PiiRedact.Params(kinds=["email"], tokens={"email": "[mail]"}))
    out = op.process(pa.RecordBatch.from_pydict({"text": ["a@b.co and 10.0.0.1", None]}))
    assert out.column("text").to_pylist() == ["[mail] and 10.0.0.1", None]
    assert op.take_counts() == {"redacted_email": 1}
    assert op.take_counts() == {}


def test_other_columns_and_type_errors():
    op = PiiRedact(PiiRedact.Params(columns=["title", "body"]))
    out = op.process(pa.RecordBatch.from_pydict({"title": ["x@y.org"], "body": ["ip 8.8.8.8"], "text": ["z@w.org"]}))
    assert out.to_pydict() == {"title": ["<EMAIL>"], "body": ["ip <IP_ADDRESS>"], "text": ["z@w.org"]}
    with pytest.raises(InputError, match="'text' must be text"):
        PiiRedact().process(pa.RecordBatch.from_pydict({"text": [1]}))


@given(st.from_regex(r"[0-9]{12,18}", fullmatch=True))
@example("4111111111111111")
def test_luhn_check_digit(prefix):
    digits = [int(d) for d in prefix]
    check = next(c for c in range(10) if luhn(prefix + str(c)))
    assert luhn(prefix + str(check)) and not luhn(prefix + str((check + 1) % 10))
    [out], _ = redact([f"card {prefix}{check} ok"], kinds=["credit_card"])
    assert out == "card <CREDIT_CARD> ok" or len(digits) + 1 > 19
