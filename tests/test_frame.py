"""The frame binding of `node._core`: build, parse, round trips, validation and repr."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node._core import (
    FrameError,
    FullFrame,
    MiniFrame,
    TrunkFrame,
    VideoFrame,
    compress_subclass,
    parse,
    uncompress_subclass,
)
from node.iax2.constants import IE, ControlSubclass, Format, FrameType, IaxSubclass

# Golden datagrams from research/iax2.md §7.3 (each was decoded as intended by tshark).
NEW = bytes.fromhex("800200000000000300000601 0b020002 010431303030 090400000004 08040000000c 3600")
ACK = bytes.fromhex("800200050000000c02020604")
VOICE = bytes.fromhex("800500020000002804020204") + b"\xff" * 160
MINI = bytes.fromhex("0005003c") + b"\xff" * 160
KEY = bytes.fromhex("80020005 00000064 0205040c")
REJECT = (
    bytes.fromhex("800600030000000800010606 1619")
    + b"Unable to negotiate codec"
    + bytes.fromhex("2a013a")
)
TRUNK = bytes.fromhex("00000101 000003e8 0003 0002 0014 aabbcc 0000 0007 0028")

calls = st.integers(0, 0x7FFF)
u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFF_FFFF)
payloads = st.binary(max_size=400)
raw_ies = st.lists(st.tuples(u8, st.binary(max_size=255)), max_size=8)
# Every subclass value the encoder accepts: raw bytes, single powers of two, and -1.
subclasses = st.one_of(st.integers(0, 0x7F), st.integers(7, 62).map(lambda b: 1 << b), st.just(-1))


@st.composite
def full_frames(draw: st.DrawFn) -> FullFrame:
    ftype = draw(st.one_of(st.just(int(FrameType.IAX)), st.sampled_from(list(FrameType)), u8))
    subclass = draw(subclasses)
    if ftype == FrameType.VIDEO and compress_subclass(subclass) & 0x40:
        subclass = int(Format.H264)
    iax = ftype == FrameType.IAX
    return FullFrame(
        ftype,
        subclass,
        scall=draw(calls),
        dcall=draw(calls),
        ts=draw(u32),
        oseq=draw(u8),
        iseq=draw(u8),
        retrans=draw(st.booleans()),
        ies=draw(raw_ies) if iax else None,
        payload=b"" if iax else draw(payloads),
    )


minis = st.builds(MiniFrame, st.integers(1, 0x7FFF), u16, payloads)
videos = st.builds(VideoFrame, calls, st.integers(0, 0x7FFF), st.booleans(), payloads)


@st.composite
def trunks(draw: st.DrawFn) -> TrunkFrame:
    timestamps = draw(st.booleans())
    ts16 = u16 if timestamps else st.none()
    entries = draw(st.lists(st.tuples(u16, ts16, st.binary(max_size=200)), max_size=6))
    return TrunkFrame(draw(u32), entries, timestamps)


any_frame = st.one_of(full_frames(), minis, videos, trunks())

# Bytes that look like each kind of datagram, so the fuzzing reaches every parser.
PREFIXES = (
    b"",
    b"\x00\x00",
    b"\x00\x00\x01\x00",
    b"\x00\x00\x01\x01",
    b"\x00\x00\x80",
    b"\x80\x01\x00\x00\x00\x00\x00\x00\x00\x00\x06\x01",
    b"\x80\x01\x00\x00\x00\x00\x00\x00\x00\x00\x02\x04",
)
prefixes = st.sampled_from(PREFIXES)
datagrams = st.builds(lambda p, b: p + b, prefixes, st.binary(max_size=300))


@given(any_frame)
@settings(max_examples=1500, deadline=None)
def test_build_then_parse_gives_an_equal_frame(frame: object) -> None:
    data = frame.to_bytes()  # type: ignore[attr-defined]
    again = parse(data)
    assert again == frame
    assert type(again) is type(frame)
    assert again.to_bytes() == data


def assert_refused_or_rebuilt(data: bytes) -> None:
    """`parse` either raises FrameError or gives a frame that builds back to `data` exactly."""
    try:
        frame = parse(data)
    except FrameError:
        return
    assert frame.to_bytes() == data


@given(datagrams)
@settings(max_examples=3000, deadline=None)
def test_parse_raises_only_frame_error_and_rebuilds_exactly(data: bytes) -> None:
    assert_refused_or_rebuilt(data)


def test_parse_100k_random_datagrams() -> None:
    """What `datagrams` draws, 100,000 times from a seeded generator: hypothesis at this count
    spent 80 s of the suite on its own bookkeeping; the shrinking search above stays."""
    rng = random.Random(100_000)
    accepted = 0
    for _ in range(100_000):
        data = rng.choice(PREFIXES) + rng.randbytes(rng.randrange(301))
        try:
            frame = parse(data)
        except FrameError:
            continue
        accepted += 1
        assert frame.to_bytes() == data
    assert accepted > 1000


def test_parse_100k_mutated_datagrams() -> None:
    """Truncations, bit flips and splices of real frames: only FrameError, never a crash."""
    rng = random.Random(5456)
    seeds = [
        NEW,
        ACK,
        VOICE,
        MINI,
        KEY,
        REJECT,
        TRUNK,
        bytes.fromhex("0000 8007 8010 dead"),
    ]
    accepted = rejected = 0
    for _ in range(100_000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(4)):
            op = rng.randrange(4)
            if op == 0 and data:
                del data[rng.randrange(len(data)) :]
            elif op == 1 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif op == 2:
                data += rng.randbytes(rng.randrange(8))
            elif data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            frame = parse(bytes(data))
        except FrameError:
            rejected += 1
            continue
        accepted += 1
        assert frame.to_bytes() == data
    assert accepted > 1000 and rejected > 1000


def test_golden_new() -> None:
    built = FullFrame(
        FrameType.IAX,
        IaxSubclass.NEW,
        scall=2,
        ts=3,
        ies=[
            (IE.VERSION, 2),
            (IE.CALLED_NUMBER, "1000"),
            (IE.FORMAT, Format.ULAW),
            (IE.CAPABILITY, Format.ULAW | Format.ALAW),
            (IE.CALLTOKEN, ""),
        ],
    )
    assert built.to_bytes() == NEW
    f = parse(NEW)
    assert f == built
    assert isinstance(f, FullFrame)
    assert (f.ftype, f.subclass, f.csub, f.scall, f.dcall, f.ts) == (6, 1, 1, 2, 0, 3)
    assert f.ie(IE.CALLED_NUMBER) == "1000"
    assert f.ie(IE.VERSION) == 2
    assert f.ie(IE.CAPABILITY) == Format.ULAW | Format.ALAW
    assert f.ie(IE.CALLTOKEN) == ""
    assert f.has_ie(IE.CALLTOKEN)
    assert not f.has_ie(IE.FORMAT2)
    assert f.ie(IE.FORMAT2) is None
    assert f.ies == [
        (11, b"\x00\x02"),
        (1, b"1000"),
        (9, b"\x00\x00\x00\x04"),
        (8, b"\x00\x00\x00\x0c"),
        (54, b""),
    ]
    assert f.payload == b""


def test_golden_ack_voice_key_reject() -> None:
    ack = FullFrame(FrameType.IAX, IaxSubclass.ACK, scall=2, dcall=5, ts=12, oseq=2, iseq=2)
    assert ack.to_bytes() == ACK
    voice = FullFrame(
        FrameType.VOICE, Format.ULAW, scall=5, dcall=2, ts=40, oseq=4, iseq=2, payload=b"\xff" * 160
    )
    assert voice.to_bytes() == VOICE
    assert voice.csub == 0x04
    key = FullFrame(
        FrameType.CONTROL, ControlSubclass.RADIO_KEY, scall=2, dcall=5, ts=100, oseq=2, iseq=5
    )
    assert key.to_bytes() == KEY
    reject = FullFrame(
        FrameType.IAX,
        IaxSubclass.REJECT,
        scall=6,
        dcall=3,
        ts=8,
        iseq=1,
        ies=[(IE.CAUSE, "Unable to negotiate codec"), (IE.CAUSECODE, 58)],
    )
    assert reject.to_bytes() == REJECT
    for frame, data in [(ack, ACK), (voice, VOICE), (key, KEY), (reject, REJECT)]:
        assert parse(data) == frame


def test_golden_mini_and_trunk() -> None:
    mini = MiniFrame(5, 60, b"\xff" * 160)
    assert mini.to_bytes() == MINI
    assert parse(MINI) == mini
    assert (mini.scall, mini.ts16, mini.payload) == (5, 60, b"\xff" * 160)
    trunk = parse(TRUNK)
    assert isinstance(trunk, TrunkFrame)
    assert (trunk.ts, trunk.timestamps) == (1000, True)
    assert trunk.entries == [(2, 20, b"\xaa\xbb\xcc"), (7, 40, b"")]
    assert trunk.minis() == [MiniFrame(2, 20, b"\xaa\xbb\xcc"), MiniFrame(7, 40, b"")]
    assert TrunkFrame(1000, [(2, 20, b"\xaa\xbb\xcc"), (7, 40, b"")], True).to_bytes() == TRUNK


def test_trunk_without_timestamps_uses_trunk_clock() -> None:
    t = TrunkFrame(0x12345, [(9, None, b"ab"), (0x8000, None, b"x"), (3, None, b"")], False)
    assert t.to_bytes() == bytes.fromhex(
        "0000010000012345 0009 0002 6162 8000 0001 78 0003 0000".replace(" ", "")
    )
    assert parse(t.to_bytes()) == t
    # Call number 0 (0x8000 masked) belongs to no call and is skipped.
    assert t.minis() == [MiniFrame(9, 0x2345, b"ab"), MiniFrame(3, 0x2345, b"")]


def test_video_mini_frame() -> None:
    v = VideoFrame(7, 0x10, True, b"\xde\xad")
    assert v.to_bytes() == bytes.fromhex("000080078010dead")
    assert parse(v.to_bytes()) == v
    assert (v.scall, v.ts15, v.marker, v.payload) == (7, 0x10, True, b"\xde\xad")


def test_parse_errors_name_the_problem() -> None:
    with pytest.raises(FrameError, match="full frame header at offset 0"):
        parse(ACK[:11])
    with pytest.raises(FrameError, match="IE 22 at offset 12"):
        parse(REJECT[:20])
    with pytest.raises(FrameError, match="meta command 2"):
        parse(b"\x00\x00\x02\x00\x00\x00\x00\x00")
    with pytest.raises(FrameError, match="trunk entry payload"):
        parse(TRUNK[:16])
    with pytest.raises(FrameError, match="frame header"):
        parse(b"")
    assert issubclass(FrameError, ValueError)


def test_parse_accepts_bytearray_but_not_str() -> None:
    assert parse(bytearray(ACK)) == parse(ACK)
    with pytest.raises(TypeError):
        parse("not bytes")  # type: ignore[arg-type]


def test_subclass_codec_forms() -> None:
    # Asterisk sends ulaw raw (0x04); RFC-style 0x82 must be read the same.
    rfc = parse(VOICE[:11] + b"\x82" + VOICE[12:])
    assert isinstance(rfc, FullFrame)
    assert (rfc.subclass, rfc.csub) == (Format.ULAW, 0x82)
    assert rfc.to_bytes() == VOICE[:11] + b"\x82" + VOICE[12:]
    slin16 = FullFrame(FrameType.VOICE, Format.SLIN16)
    assert (slin16.csub, slin16.subclass) == (0x8F, 0x8000)
    stop = FullFrame(FrameType.CONTROL, ControlSubclass.STOP_SOUNDS)
    assert (stop.csub, stop.subclass) == (0xFF, -1)
    assert compress_subclass(Format.G722) == 0x8C
    assert compress_subclass(Format.OPUS) == 0xA2
    assert uncompress_subclass(0xA2) == Format.OPUS
    for bad in (0x81, 3 << 10, -2):
        with pytest.raises(FrameError, match="subclass"):
            FullFrame(FrameType.VOICE, bad)


def test_video_full_frame_marker() -> None:
    f = parse(bytes.fromhex("80010000 00000000 000003d3"))
    assert isinstance(f, FullFrame)
    assert (f.ftype, f.subclass, f.video_marker) == (FrameType.VIDEO, Format.H263, True)
    assert not FullFrame(FrameType.VIDEO, Format.H263).video_marker
    with pytest.raises(FrameError):
        FullFrame(FrameType.VIDEO, 0x40)


def test_setters_validate_and_round_trip() -> None:
    f = FullFrame(FrameType.TEXT, 0, payload=b"!NEWKEY!\x00")
    f.scall, f.dcall, f.ts, f.oseq, f.iseq, f.retrans = 0x7FFF, 3, 2**32 - 1, 255, 7, True
    f.payload = bytearray(b"T 1999 COMPLETE\x00")
    assert parse(f.to_bytes()) == f
    assert f.payload == b"T 1999 COMPLETE\x00"
    assert f.to_bytes()[2] & 0x80, "R bit"
    for attr, value in [
        ("scall", 0x8000),
        ("dcall", -1),
        ("ts", 2**32),
        ("oseq", 256),
        ("iseq", "1"),
        ("scall", True),
        ("retrans", 1),
        ("payload", "text"),
    ]:
        with pytest.raises(FrameError):
            setattr(f, attr, value)
    for attr in ("ftype", "subclass", "csub", "ies"):
        with pytest.raises(AttributeError):
            setattr(f, attr, 1)


def test_constructor_validation() -> None:
    with pytest.raises(FrameError, match="IAX frames carry IEs"):
        FullFrame(FrameType.IAX, IaxSubclass.NEW, payload=b"x")
    with pytest.raises(FrameError, match="only IAX"):
        FullFrame(FrameType.VOICE, Format.ULAW, ies=[(IE.CAUSE, "x")])
    with pytest.raises(FrameError, match="ftype"):
        FullFrame(256, 0)
    with pytest.raises(FrameError):
        FullFrame(FrameType.IAX, 2**64)
    with pytest.raises(FrameError, match="scall"):
        FullFrame(FrameType.IAX, 1, scall=0x8000)
    with pytest.raises(FrameError):
        FullFrame(FrameType.IAX, 1, ies=[(IE.CAUSE,)])  # type: ignore[list-item]
    with pytest.raises(FrameError):
        FullFrame(FrameType.IAX, 1, ies=5)  # type: ignore[arg-type]
    with pytest.raises(FrameError, match="IE id"):
        FullFrame(FrameType.IAX, 1, ies=[(256, b"")])
    with pytest.raises(FrameError, match="255"):
        FullFrame(FrameType.IAX, 1, ies=[(IE.CAUSE, "x" * 256)])
    with pytest.raises(FrameError):
        MiniFrame(0, 0, b"")
    with pytest.raises(FrameError):
        MiniFrame(1, 0x10000, b"")
    with pytest.raises(FrameError):
        VideoFrame(1, 0x8000, False, b"")
    with pytest.raises(FrameError, match="timestamps"):
        TrunkFrame(0, [(1, None, b"")], True)
    with pytest.raises(FrameError, match="timestamps"):
        TrunkFrame(0, [(1, 5, b"")], False)
    with pytest.raises(FrameError):
        TrunkFrame(0, [(1, 5)], True)  # type: ignore[list-item]
    with pytest.raises(FrameError, match="65535"):
        TrunkFrame(0, [(1, None, bytes(65536))], False)


def test_equality_and_hashing() -> None:
    a = parse(ACK)
    b = parse(ACK)
    assert isinstance(b, FullFrame)
    assert a == b and a is not b
    assert a != parse(KEY)
    assert a != ACK
    b.iseq = 9
    assert a != b
    with pytest.raises(TypeError):
        hash(a)
    assert len({MiniFrame(1, 2, b"x"), MiniFrame(1, 2, b"x"), MiniFrame(1, 3, b"x")}) == 2
    assert hash(VideoFrame(1, 2, True, b"")) == hash(VideoFrame(1, 2, True, b""))
    assert hash(TrunkFrame(1, [], True)) == hash(parse(TrunkFrame(1, [], True).to_bytes()))


def test_repr_names_things_and_redacts_secrets() -> None:
    secret = "s3cr3t-value"
    f = FullFrame(
        FrameType.IAX,
        IaxSubclass.AUTHREP,
        scall=2,
        dcall=3,
        ies=[
            (IE.USERNAME, "radio"),
            (IE.PASSWORD, secret),
            (IE.MD5_RESULT, secret),
            (IE.RSA_RESULT, secret),
            (IE.ENCKEY, secret.encode()),
            (IE.CALLTOKEN, secret),
        ],
    )
    text = repr(f)
    assert secret not in text and secret.encode().hex() not in text
    assert "IAX AUTHREP" in text
    assert 'USERNAME="radio"' in text
    for name in ("PASSWORD", "MD5_RESULT", "RSA_RESULT", "ENCKEY", "CALLTOKEN"):
        assert f"{name}=<redacted>" in text
    assert secret not in str(f)
    assert 'CALLTOKEN=""' in repr(parse(NEW))
    assert "CONTROL RADIO_KEY" in repr(parse(KEY))
    assert "CONTROL STOP_SOUNDS" in repr(FullFrame(FrameType.CONTROL, -1))
    assert "VOICE ULAW" in repr(parse(VOICE)) and "payload=<160 bytes>" in repr(parse(VOICE))
    assert "csub 0x82" in repr(parse(VOICE[:11] + b"\x82" + VOICE[12:]))
    assert "DTMF_BEGIN '5'" in repr(FullFrame(FrameType.DTMF_BEGIN, ord("5")))
    assert "retrans=True" in repr(FullFrame(FrameType.IAX, 2, retrans=True))
    assert repr(MiniFrame(5, 60, b"abc")) == "MiniFrame(scall=5, ts16=60, payload=<3 bytes>)"
    assert repr(VideoFrame(1, 2, True, b"")) == (
        "VideoFrame(scall=1, ts15=2, marker=True, payload=<0 bytes>)"
    )
    assert repr(parse(TRUNK)) == (
        "TrunkFrame(ts=1000, timestamps=True, entries=[(2, 20, <3 bytes>), (7, 40, <0 bytes>)])"
    )
