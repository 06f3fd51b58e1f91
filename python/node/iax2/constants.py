"""IAX2 wire numbers: frame types, subclasses, information elements and media format bits.

The values are Asterisk's (they are what the wire carries; see research/iax2.md §1-§3). They
mirror the Rust constants in `rust/frame.rs` and `rust/ie.rs`; `tests/test_ie.py` checks that
the two agree.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

__all__ = ["CODEC_NAMES", "IE", "ControlSubclass", "Format", "FrameType", "IaxSubclass"]


class FrameType(IntEnum):
    """Byte 10 of a full frame (Asterisk `enum ast_frame_type`)."""

    DTMF = 1
    """Digit complete; Asterisk calls it DTMF_END and sends DTMF_BEGIN first."""
    DTMF_END = 1
    VOICE = 2
    VIDEO = 3
    CONTROL = 4
    NULL = 5
    IAX = 6
    TEXT = 7
    IMAGE = 8
    HTML = 9
    CNG = 10
    MODEM = 11
    DTMF_BEGIN = 12


class IaxSubclass(IntEnum):
    """Subclass of IAX (type 6) frames (Asterisk `enum iax_frame_subclass`)."""

    NEW = 1
    PING = 2
    PONG = 3
    ACK = 4
    HANGUP = 5
    REJECT = 6
    ACCEPT = 7
    AUTHREQ = 8
    AUTHREP = 9
    INVAL = 10
    LAGRQ = 11
    LAGRP = 12
    REGREQ = 13
    REGAUTH = 14
    REGACK = 15
    REGREJ = 16
    REGREL = 17
    VNAK = 18
    DPREQ = 19
    DPREP = 20
    DIAL = 21
    TXREQ = 22
    TXCNT = 23
    TXACC = 24
    TXREADY = 25
    TXREL = 26
    TXREJ = 27
    QUELCH = 28
    UNQUELCH = 29
    POKE = 30
    PAGE = 31
    MWI = 32
    UNSUPPORT = 33
    TRANSFER = 34
    PROVISION = 35
    FWDOWNL = 36
    FWDATA = 37
    TXMEDIA = 38
    RTKEY = 39
    CALLTOKEN = 40


class ControlSubclass(IntEnum):
    """Subclass of CONTROL (type 4) frames (Asterisk `enum ast_control_frame_type`)."""

    HANGUP = 1
    RING = 2
    RINGING = 3
    ANSWER = 4
    BUSY = 5
    TAKEOFFHOOK = 6
    OFFHOOK = 7
    CONGESTION = 8
    FLASH = 9
    WINK = 10
    OPTION = 11
    RADIO_KEY = 12
    """Push-to-talk on (AllStarLink / app_rpt)."""
    RADIO_UNKEY = 13
    """Push-to-talk off."""
    PROGRESS = 14
    PROCEEDING = 15
    HOLD = 16
    UNHOLD = 17
    VIDUPDATE = 18
    SRCUPDATE = 20
    TRANSFER = 21
    CONNECTED_LINE = 22
    REDIRECTING = 23
    STOP_SOUNDS = -1
    """Sent as csub 0xFF; AllStarLink sends it right after ANSWER."""


class IE(IntEnum):
    """Information element ids (RFC 5456 §8.6 plus Asterisk's 54-57)."""

    CALLED_NUMBER = 1
    CALLING_NUMBER = 2
    CALLING_ANI = 3
    CALLING_NAME = 4
    CALLED_CONTEXT = 5
    USERNAME = 6
    PASSWORD = 7
    CAPABILITY = 8
    FORMAT = 9
    LANGUAGE = 10
    VERSION = 11
    ADSICPE = 12
    DNID = 13
    AUTHMETHODS = 14
    CHALLENGE = 15
    MD5_RESULT = 16
    RSA_RESULT = 17
    APPARENT_ADDR = 18
    REFRESH = 19
    DPSTATUS = 20
    CALLNO = 21
    CAUSE = 22
    IAX_UNKNOWN = 23
    MSGCOUNT = 24
    AUTOANSWER = 25
    MUSICONHOLD = 26
    TRANSFERID = 27
    RDNIS = 28
    PROVISIONING = 29
    AESPROVISIONING = 30
    DATETIME = 31
    DEVICETYPE = 32
    SERVICEIDENT = 33
    FIRMWAREVER = 34
    FWBLOCKDESC = 35
    FWBLOCKDATA = 36
    PROVVER = 37
    CALLINGPRES = 38
    CALLINGTON = 39
    CALLINGTNS = 40
    SAMPLINGRATE = 41
    CAUSECODE = 42
    ENCRYPTION = 43
    ENCKEY = 44
    CODEC_PREFS = 45
    RR_JITTER = 46
    RR_LOSS = 47
    RR_PKTS = 48
    RR_DELAY = 49
    RR_DROPPED = 50
    RR_OOO = 51
    VARIABLE = 52
    OSPTOKEN = 53
    CALLTOKEN = 54
    CAPABILITY2 = 55
    FORMAT2 = 56
    CALLINGANI2 = 57


class Format(IntFlag):
    """Media format bits (Asterisk `format_compatibility.h`).

    FORMAT/CAPABILITY carry the low 32 bits, FORMAT2/CAPABILITY2 all 64, and the subclass of a
    VOICE/VIDEO frame is one bit (compressed on the wire, see `compress_subclass`).
    """

    G723 = 1 << 0
    GSM = 1 << 1
    ULAW = 1 << 2
    ALAW = 1 << 3
    G726_AAL2 = 1 << 4
    """G.726 with AAL2 codeword packing (the RFC calls this bit plain "G.726")."""
    ADPCM = 1 << 5
    SLIN = 1 << 6
    """8 kHz 16-bit linear, big-endian on the wire."""
    LPC10 = 1 << 7
    G729 = 1 << 8
    SPEEX = 1 << 9
    ILBC = 1 << 10
    G726 = 1 << 11
    """G.726 with RFC 3551 packing."""
    G722 = 1 << 12
    SIREN7 = 1 << 13
    SIREN14 = 1 << 14
    SLIN16 = 1 << 15
    """16 kHz 16-bit linear, little-endian on the wire (Asterisk does not swap it)."""
    JPEG = 1 << 16
    PNG = 1 << 17
    H261 = 1 << 18
    H263 = 1 << 19
    H263P = 1 << 20
    H264 = 1 << 21
    MP4 = 1 << 22
    VP8 = 1 << 23
    T140_RED = 1 << 26
    T140 = 1 << 27
    G719 = 1 << 32
    SPEEX16 = 1 << 33
    OPUS = 1 << 34
    CODEC2 = 1 << 42
    TESTLAW = 1 << 47


#: The formats the node carries, by the names the snapshot, the logs and AMI give them.
CODEC_NAMES: dict[int | None, str] = {
    Format.ULAW: "ulaw",
    Format.ALAW: "alaw",
    Format.SLIN: "slin",
    Format.SLIN16: "slin16",
}
