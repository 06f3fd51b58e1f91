"""Codec choice for IAX2 calls (sans-I/O, pure functions).

The node implements four audio formats (spec "codec_policy" rule 1): µ-law, A-law, slin (8 kHz
16-bit linear) and slin16 (16 kHz). A *policy* says which of them we offer and in which order.

Inbound (we are the callee) the spec's rules apply, which differ from Asterisk's default
`codecpriority=host` in one point (research/iax2.md §5): the caller's requested FORMAT wins
whenever it is in the common set, even if the caller's CAPABILITY lists other codecs and our
preference order would pick another. Otherwise the first codec of our preference order that the
caller can do is chosen. No codec in common means REJECT with CAUSE "Unable to negotiate codec"
and CAUSECODE 65 (the spec's value; Asterisk sends 58, BEARERCAPABILITY_NOTAVAIL, for the same
text, and 65 is BEARERCAPABILITY_NOTIMPL).

Outbound (we are the caller) our NEW carries FORMAT = our first preference, CAPABILITY = every
format we accept, and CODEC_PREFS in our order; the ACCEPT's format must be one we accept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from node.iax2.constants import Format

__all__ = [
    "CAUSECODE_NO_CODEC",
    "CAUSE_NO_CODEC",
    "CODEC_POLICIES",
    "CodecPolicy",
    "Offer",
    "PeerCodecs",
    "choose_format",
    "codec_prefs",
    "format_name",
    "policy",
    "single_format",
]

#: CAUSE text of a REJECT/HANGUP for a failed codec negotiation (same text as Asterisk).
CAUSE_NO_CODEC = "Unable to negotiate codec"
#: CAUSECODE the spec (Errors, rule 4) mandates for it. Asterisk itself sends 58.
CAUSECODE_NO_CODEC = 65

# Asterisk's `iax2_supported_formats[]` (codec_pref.c), in order. A format's CODEC_PREFS
# character is chr(ord('A') + its 1-based position in this list); generating the table from the
# list keeps it free of the off-by-one that a hand-written table invites. Bit values are those of
# format_compatibility.h; only the audio prefix up to slin16 matters to us.
_ASTERISK_PREF_ORDER: tuple[int, ...] = (
    0x1,  # g723
    0x2,  # gsm
    0x4,  # ulaw
    0x8,  # alaw
    0x800,  # g726 (RFC 3551 packing)
    0x20,  # adpcm
    0x40,  # slin
    0x80,  # lpc10
    0x100,  # g729
    0x200,  # speex
    1 << 33,  # speex16
    0x400,  # ilbc
    0x10,  # g726aal2
    0x1000,  # g722
    0x8000,  # slin16
)
_PREF_CHAR: dict[int, str] = {
    bit: chr(ord("A") + index) for index, bit in enumerate(_ASTERISK_PREF_ORDER, start=1)
}

_NAMES: dict[int, str] = {
    Format.ULAW: "ulaw",
    Format.ALAW: "alaw",
    Format.SLIN: "slin",
    Format.SLIN16: "slin16",
}


def format_name(fmt: int) -> str:
    """A short name for logs and events ("ulaw", "slin16", or the hex bits)."""
    return _NAMES.get(fmt, f"0x{fmt:x}")


@dataclass(frozen=True, slots=True)
class CodecPolicy:
    """One row of the spec's codec_policy table.

    `preferred` is what we offer, best first. `accept_extra` are formats we do not offer first
    but take when the peer wants them (allow_slin: slin); they rank after `preferred`.
    """

    name: str
    preferred: tuple[int, ...]
    accept_extra: tuple[int, ...] = ()

    @property
    def order(self) -> tuple[int, ...]:
        """Every accepted format, in the order we pick among them."""
        return self.preferred + self.accept_extra

    @property
    def capability(self) -> int:
        """Bitmask of every accepted format (what our NEW's CAPABILITY says)."""
        bits = 0
        for fmt in self.order:
            bits |= fmt
        return bits

    def accepts(self, fmt: int) -> bool:
        return fmt in self.order


CODEC_POLICIES: dict[str, CodecPolicy] = {
    "ulaw_only": CodecPolicy("ulaw_only", (Format.ULAW, Format.ALAW)),
    "allow_slin": CodecPolicy("allow_slin", (Format.ULAW, Format.ALAW), (Format.SLIN,)),
    "prefer_slin": CodecPolicy("prefer_slin", (Format.SLIN, Format.ULAW, Format.ALAW)),
    "prefer_slin16": CodecPolicy(
        "prefer_slin16", (Format.SLIN16, Format.SLIN, Format.ULAW, Format.ALAW)
    ),
}


def policy(name: str | CodecPolicy) -> CodecPolicy:
    """The policy called `name` (a `CodecPolicy` passes through)."""
    if isinstance(name, CodecPolicy):
        return name
    try:
        return CODEC_POLICIES[name]
    except KeyError:
        raise ValueError(
            f"unknown codec policy {name!r} (accepted: {', '.join(CODEC_POLICIES)})"
        ) from None


def codec_prefs(formats: Iterable[int]) -> str:
    """The CODEC_PREFS IE value for `formats` in preference order ('D' ulaw, 'P' slin16...)."""
    return "".join(_PREF_CHAR[int(fmt)] for fmt in formats)


def single_format(bits: int | None) -> int | None:
    """`bits` if it names exactly one format, else None (FORMAT must be a single bit)."""
    if bits is None or bits <= 0 or bits & (bits - 1):
        return None
    return bits


@dataclass(frozen=True, slots=True)
class PeerCodecs:
    """What a NEW said about codecs, after the 64-bit/32-bit and missing-IE rules.

    `requested` is FORMAT2 (else FORMAT), `capability` is CAPABILITY2 (else CAPABILITY, else
    `requested` when the peer sent no capability at all, as DroidStar-class clients do).
    """

    requested: int
    capability: int

    @classmethod
    def from_ies(
        cls,
        fmt: int | None,
        capability: int | None,
        format2: tuple[int, int] | None = None,
        capability2: tuple[int, int] | None = None,
    ) -> PeerCodecs:
        # FORMAT2/CAPABILITY2 are (version, u64); only version 0 is defined.
        if format2 is not None and format2[0] == 0:
            fmt = format2[1]
        if capability2 is not None and capability2[0] == 0:
            capability = capability2[1]
        requested = fmt or 0
        if capability is None:
            capability = requested
        return cls(requested, capability)


def choose_format(pol: CodecPolicy, peer: PeerCodecs) -> int | None:
    """The format an inbound call gets, or None when nothing is in common (REJECT 65).

    Rule 3 of the spec first: a single requested FORMAT in the common set wins. Then the first
    of our order the peer can do.
    """
    common = pol.capability & peer.capability
    requested = single_format(peer.requested)
    if requested is not None and requested & common:
        return requested
    for fmt in pol.order:
        if fmt & common:
            return int(fmt)
    return None


@dataclass(frozen=True, slots=True)
class Offer:
    """The codec IEs of an outbound NEW."""

    format: int
    capability: int
    prefs: str

    @classmethod
    def for_policy(cls, pol: CodecPolicy) -> Offer:
        return cls(int(pol.order[0]), pol.capability, codec_prefs(pol.order))
