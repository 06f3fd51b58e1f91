"""Codec policy table, CODEC_PREFS characters and the inbound codec choice (spec rules 1-5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.iax2.constants import Format
from node.iax2.negotiate import (
    CAUSE_NO_CODEC,
    CAUSECODE_NO_CODEC,
    CODEC_POLICIES,
    CodecPolicy,
    Offer,
    PeerCodecs,
    choose_format,
    codec_prefs,
    format_name,
    policy,
    single_format,
)

ULAW, ALAW, SLIN, SLIN16 = Format.ULAW, Format.ALAW, Format.SLIN, Format.SLIN16
GSM, ADPCM, G722 = 0x2, 0x20, 0x1000


def test_policy_table_is_the_spec_table() -> None:
    assert {name: p.order for name, p in CODEC_POLICIES.items()} == {
        "ulaw_only": (ULAW, ALAW),
        "allow_slin": (ULAW, ALAW, SLIN),
        "prefer_slin": (SLIN, ULAW, ALAW),
        "prefer_slin16": (SLIN16, SLIN, ULAW, ALAW),
    }
    # allow_slin offers only G.711 first; slin is an extra it takes when asked.
    assert CODEC_POLICIES["allow_slin"].preferred == (ULAW, ALAW)
    assert CODEC_POLICIES["prefer_slin16"].capability == 0x8000 | 0x40 | 0x4 | 0x8


def test_cause_is_the_spec_value() -> None:
    assert (CAUSE_NO_CODEC, CAUSECODE_NO_CODEC) == ("Unable to negotiate codec", 65)


def test_codec_pref_characters_follow_asterisk() -> None:
    # research/iax2.md §2: ulaw 'D', alaw 'E', slin 'H', slin16 'P' (gsm 'C', g722 'O').
    assert codec_prefs([ULAW, ALAW, SLIN, SLIN16]) == "DEHP"
    assert codec_prefs([GSM, G722]) == "CO"
    # The ASL capture's "DGC" = ulaw, adpcm, gsm.
    assert codec_prefs([ULAW, ADPCM, GSM]) == "DGC"


def test_offer_of_each_policy() -> None:
    assert Offer.for_policy(policy("prefer_slin16")) == Offer(SLIN16, 0x804C, "PHDE")
    assert Offer.for_policy(policy("ulaw_only")) == Offer(ULAW, 0xC, "DE")
    assert Offer.for_policy(policy("allow_slin")) == Offer(ULAW, 0x4C, "DEH")
    assert Offer.for_policy(policy("prefer_slin")) == Offer(SLIN, 0x4C, "HDE")


def test_unknown_policy_name() -> None:
    with pytest.raises(ValueError, match="accepted: ulaw_only"):
        policy("opus_please")
    p = CodecPolicy("custom", (ALAW,))
    assert policy(p) is p


@pytest.mark.parametrize(
    ("pol", "fmt", "cap", "fmt2", "cap2", "expected"),
    [
        # Rule 3: a µ-law caller gets µ-law on a prefer_slin16 node even though it can do slin16.
        ("prefer_slin16", ULAW, ULAW | ALAW | SLIN16, None, None, ULAW),
        # The real ASL NEW (FORMAT ulaw, CAPABILITY gsm|ulaw|adpcm).
        ("prefer_slin16", ULAW, GSM | ULAW | ADPCM, None, None, ULAW),
        ("ulaw_only", ULAW, GSM | ULAW | ADPCM, None, None, ULAW),
        # Requested format not ours: first of our order in common.
        ("prefer_slin16", GSM, GSM | SLIN | ALAW, None, None, SLIN),
        ("ulaw_only", SLIN16, SLIN16 | ALAW, None, None, ALAW),
        ("prefer_slin16", SLIN16, SLIN16 | ULAW, None, None, SLIN16),
        # Rule 2 of Asterisk: no CAPABILITY means CAPABILITY = FORMAT (DroidStar-style clients).
        ("prefer_slin16", ULAW, None, None, None, ULAW),
        ("ulaw_only", SLIN16, None, None, None, None),
        # FORMAT2/CAPABILITY2 override the 32-bit IEs.
        ("prefer_slin16", ULAW, ULAW, (0, SLIN16), (0, SLIN16 | ULAW), SLIN16),
        ("prefer_slin16", GSM, ULAW, None, (0, ALAW | GSM), ALAW),
        # ...but only version 0 is understood.
        ("prefer_slin16", ULAW, ULAW, (1, SLIN16), (1, SLIN16), ULAW),
        # allow_slin: slin when asked for, G.711 first otherwise, slin as a last resort.
        ("allow_slin", SLIN, SLIN | ULAW, None, None, SLIN),
        ("allow_slin", ULAW, SLIN | ULAW, None, None, ULAW),
        ("allow_slin", GSM, SLIN | GSM, None, None, SLIN),
        ("ulaw_only", SLIN, SLIN, None, None, None),
        ("prefer_slin", GSM, ULAW | ALAW | SLIN, None, None, SLIN),
        # A multi-bit FORMAT is no request; the capability decides.
        ("prefer_slin16", ULAW | ALAW, None, None, None, ULAW),
        # Nothing in common: the call is refused with cause 65.
        ("prefer_slin16", GSM, GSM | G722, None, None, None),
        ("prefer_slin16", None, None, None, None, None),
    ],
)
def test_choice_matrix(pol, fmt, cap, fmt2, cap2, expected) -> None:
    peer = PeerCodecs.from_ies(fmt, cap, fmt2, cap2)
    assert choose_format(policy(pol), peer) == expected


@given(
    st.sampled_from(sorted(CODEC_POLICIES)),
    st.integers(0, 0xFFFF),
    st.one_of(st.none(), st.integers(0, 0xFFFF)),
)
def test_choice_is_always_common_and_none_only_without_overlap(name, fmt, cap) -> None:
    pol = policy(name)
    peer = PeerCodecs.from_ies(fmt, cap)
    chosen = choose_format(pol, peer)
    if chosen is None:
        assert pol.capability & peer.capability == 0
    else:
        assert pol.accepts(chosen)
        assert chosen & peer.capability
        requested = single_format(peer.requested)
        if requested is not None and requested & pol.capability & peer.capability:
            assert chosen == requested


def test_single_format_and_names() -> None:
    assert single_format(ULAW) == ULAW
    assert single_format(ULAW | ALAW) is None
    assert single_format(0) is None
    assert single_format(None) is None
    assert [format_name(f) for f in (ULAW, ALAW, SLIN, SLIN16, GSM)] == [
        "ulaw",
        "alaw",
        "slin",
        "slin16",
        "0x2",
    ]
