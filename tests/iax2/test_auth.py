"""MD5 challenge/response (vectors from research/iax2.md §4.2 and the captures) and call tokens."""

from __future__ import annotations

import pytest

from node.iax2.auth import (
    TOKEN_LIFETIME,
    CallTokens,
    check_md5,
    make_challenge,
    md5_response,
    reveal,
)


class _Secret:
    """Stands for node.secrets.Secret: hides its value behind reveal()."""

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret(***)"


@pytest.mark.parametrize(
    ("challenge", "secret", "expected"),
    [
        # iaxmodem in the lab (research/iax2.md §4.2).
        ("123456789", "password", "3682b0cc7fdb7b896de5987895b999be"),
        ("214748364", "s3cret", "0c5b82d1f207f433199e2c3652d875d7"),
        # ASL3 capture (interop/asl3/README.md).
        ("129315407", "aslpeer-secret", "821d4b0b8252f25b8324273857ef0fb4"),
        # interop/pcaps/asterisk-call_token.pcap (user astartest).
        ("159541092", "supersecret", "c79ed973a07906e37255e208c72cf1d4"),
    ],
)
def test_md5_vectors(challenge: str, secret: str, expected: str) -> None:
    assert md5_response(challenge, secret) == expected
    assert md5_response(challenge, _Secret(secret)) == expected
    assert check_md5(challenge, secret, expected)
    assert check_md5(challenge, _Secret(secret), expected.upper())  # Asterisk ignores case


def test_check_md5_refusals() -> None:
    good = md5_response("42", "pw")
    assert not check_md5("42", "other", good)
    assert not check_md5("43", "pw", good)
    assert not check_md5("42", "pw", None)
    assert not check_md5("42", "pw", "")
    assert not check_md5("42", "pw", good[:-1])
    assert not check_md5("42", "pw", "é" * 32)  # non-ASCII must not crash the compare
    # Unknown user: nothing matches, not even the digest of an empty secret.
    assert not check_md5("42", None, md5_response("42", ""))
    assert not check_md5("42", None, good)


def test_reveal() -> None:
    assert reveal(None) is None
    assert reveal("x") == "x"
    assert reveal(_Secret("y")) == "y"


def test_challenge_is_decimal_from_the_injected_source() -> None:
    asked: list[int] = []

    def randbelow(n: int) -> int:
        asked.append(n)
        return 159541092

    assert make_challenge(randbelow) == "159541092"
    assert asked == [2**31]


KEY = bytes(range(32))
ADDR = ("192.0.2.7", 4569)


def test_token_round_trip_and_lifetime() -> None:
    tokens = CallTokens(KEY)
    token = tokens.issue(ADDR, 1000.4)
    epoch, _, mac = token.partition("?")
    assert epoch == "1000" and len(mac) == 40 and mac == mac.lower()
    assert tokens.verify(ADDR, token, 1000.9)
    assert tokens.verify(ADDR, token, 1000 + TOKEN_LIFETIME + 0.99)
    assert not tokens.verify(ADDR, token, 1000 + TOKEN_LIFETIME + 1)
    assert not tokens.verify(ADDR, token, 999.0)  # from the future


def test_token_is_bound_to_address_and_key() -> None:
    tokens = CallTokens(KEY)
    token = tokens.issue(ADDR, 50.0)
    assert not tokens.verify(("192.0.2.7", 4570), token, 50.0)
    assert not tokens.verify(("192.0.2.8", 4569), token, 50.0)
    assert not CallTokens(bytes(32)).verify(ADDR, token, 50.0)
    v6 = ("2001:db8::1", 4569)
    t6 = tokens.issue(v6, 50.0)
    assert tokens.verify(v6, t6, 51.0) and not tokens.verify(ADDR, t6, 51.0)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "?",
        "50",
        "50?",
        "x50?" + "0" * 40,
        "50?" + "0" * 39,
        "50?" + "g" * 40,
        "-5?" + "a" * 40,
        "٥٠?" + "a" * 40,
        "1" * 13 + "?" + "a" * 40,
    ],
)
def test_malformed_tokens_fail(bad: str) -> None:
    assert not CallTokens(KEY).verify(ADDR, bad, 50.0)


def test_tampered_token_fails() -> None:
    tokens = CallTokens(KEY)
    token = tokens.issue(ADDR, 50.0)
    flipped = token[:-1] + ("0" if token[-1] != "0" else "1")
    assert not tokens.verify(ADDR, flipped, 50.0)
    assert not tokens.verify(ADDR, "51" + token[2:], 51.0)  # epoch moved, MAC kept


def test_key_stays_private() -> None:
    tokens = CallTokens(KEY)
    assert KEY.hex() not in repr(tokens) and str(KEY) not in repr(tokens)
    with pytest.raises(ValueError, match="16 bytes"):
        CallTokens(b"short")
