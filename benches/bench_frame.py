"""Parsing cost: `node._core.parse` against a straightforward pure-Python `struct` parser.

Each benchmark round parses the same 512 distinct datagrams (a realistic mix: IAX control
frames with IEs, voice, control, text; or mini voice frames). Both parsers classify the
datagram first, as `parse` does, and build one object per frame (the Python one a `__slots__`
class, IEs walked into a list of (id, bytes)). Before timing, both must agree on every frame.

The `parse_and_read` pair also reads every header field and the IEs or payload, which is where
our lazily built attributes pay their cost.

Run: `pytest benches/bench_frame.py --benchmark-only` (after `maturin develop --release`).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from node._core import FullFrame, MiniFrame, parse
from node.iax2.constants import IE, ControlSubclass, Format, FrameType, IaxSubclass
from tones import loop

N_FRAMES = 512
_HEADER = struct.Struct(">HHIBBBB")
_MINI = struct.Struct(">HH")


class StructFullFrame:
    __slots__ = (
        "csub",
        "dcall",
        "ftype",
        "ies",
        "iseq",
        "oseq",
        "payload",
        "retrans",
        "scall",
        "ts",
    )

    def __init__(self, data: bytes) -> None:
        s, d, self.ts, self.oseq, self.iseq, self.ftype, self.csub = _HEADER.unpack_from(data)
        self.scall = s & 0x7FFF
        self.dcall = d & 0x7FFF
        self.retrans = bool(d & 0x8000)
        if self.ftype == 6:
            ies = []
            pos, end = 12, len(data)
            while pos < end:
                if pos + 2 > end:
                    raise ValueError("truncated IE header")
                ie_id, length = data[pos], data[pos + 1]
                pos += 2
                if pos + length > end:
                    raise ValueError("IE overruns the frame")
                ies.append((ie_id, data[pos : pos + length]))
                pos += length
            self.ies = ies
            self.payload = b""
        else:
            self.ies = []
            self.payload = data[12:]


class StructMiniFrame:
    __slots__ = ("payload", "scall", "ts16")

    def __init__(self, data: bytes) -> None:
        self.scall, self.ts16 = _MINI.unpack_from(data)
        self.payload = data[4:]


def struct_parse(data: bytes) -> StructFullFrame | StructMiniFrame:
    """Classify like Asterisk (meta, full, mini) and parse; meta frames are not benchmarked."""
    if len(data) < 2:
        raise ValueError("short datagram")
    first = (data[0] << 8) | data[1]
    if first == 0:
        raise ValueError("meta frames are not part of this benchmark")
    if first & 0x8000:
        if len(data) < 12:
            raise ValueError("short full frame")
        return StructFullFrame(data)
    if len(data) < 4:
        raise ValueError("short mini frame")
    return StructMiniFrame(data)


def full_datagrams() -> list[bytes]:
    rng = random.Random(2024)
    out: set[bytes] = set()
    while len(out) < N_FRAMES:
        call = rng.randrange(2, 0x7FFF)
        ts = rng.randrange(1 << 32)
        head = {"scall": call, "dcall": rng.randrange(2, 0x7FFF), "ts": ts}
        head |= {"oseq": rng.randrange(256), "iseq": rng.randrange(256)}
        kind = rng.randrange(6)
        if kind == 0:
            ies = [
                (IE.VERSION, 2),
                (IE.CALLED_NUMBER, str(rng.randrange(1000, 9999))),
                (IE.CODEC_PREFS, "PDE"),
                (IE.CALLING_NUMBER, str(rng.randrange(1000, 9999))),
                (IE.USERNAME, "radio"),
                (IE.FORMAT, Format.ULAW),
                (IE.FORMAT2, (0, Format.ULAW)),
                (IE.CAPABILITY, 0xFFFF),
                (IE.CAPABILITY2, (0, 0xFFFF)),
                (IE.DATETIME, (2026, 11, 22, 3, 51, 46)),
                (IE.CALLTOKEN, ""),
            ]
            frame = FullFrame(FrameType.IAX, IaxSubclass.NEW, ies=ies, **head)
        elif kind == 1:
            rr = [(i, rng.randrange(1 << 16)) for i in range(IE.RR_JITTER, IE.RR_OOO + 1)]
            frame = FullFrame(FrameType.IAX, IaxSubclass.PONG, ies=rr, **head)
        elif kind == 2:
            frame = FullFrame(FrameType.IAX, IaxSubclass.ACK, **head)
        elif kind == 3:
            payload = rng.randbytes(160)
            frame = FullFrame(FrameType.VOICE, Format.ULAW, payload=payload, **head)
        elif kind == 4:
            key = rng.choice([ControlSubclass.RADIO_KEY, ControlSubclass.RADIO_UNKEY])
            frame = FullFrame(FrameType.CONTROL, key, **head)
        else:
            text = f"L T{rng.randrange(1000, 9999)}\x00".encode()
            frame = FullFrame(FrameType.TEXT, 0, payload=text, **head)
        out.add(frame.to_bytes())
    return sorted(out)


def mini_datagrams() -> list[bytes]:
    rng = random.Random(4569)
    out = {
        MiniFrame(rng.randrange(2, 0x7FFF), rng.randrange(1 << 16), rng.randbytes(160)).to_bytes()
        for _ in range(N_FRAMES)
    }
    return sorted(out)


FULL = full_datagrams()
MINI = mini_datagrams()


def check_agreement(datagrams: list[bytes]) -> None:
    assert len(datagrams) >= N_FRAMES
    for data in datagrams:
        ours = parse(data)
        theirs = struct_parse(data)
        if isinstance(ours, FullFrame):
            assert isinstance(theirs, StructFullFrame)
            assert (ours.scall, ours.dcall, ours.retrans, ours.ts) == (
                theirs.scall,
                theirs.dcall,
                theirs.retrans,
                theirs.ts,
            )
            assert (ours.oseq, ours.iseq, ours.ftype, ours.csub) == (
                theirs.oseq,
                theirs.iseq,
                theirs.ftype,
                theirs.csub,
            )
            assert ours.ies == theirs.ies
            assert ours.payload == theirs.payload
        else:
            assert isinstance(ours, MiniFrame) and isinstance(theirs, StructMiniFrame)
            assert (ours.scall, ours.ts16, ours.payload) == (
                theirs.scall,
                theirs.ts16,
                theirs.payload,
            )


def read_fields(frame: Any) -> None:
    """What a protocol machine typically touches after parsing a full frame."""
    _ = (frame.scall, frame.dcall, frame.ts, frame.oseq, frame.iseq, frame.ftype, frame.csub)
    _ = frame.ies if frame.ftype == 6 else frame.payload


def parse_and_read(parser: Callable[[bytes], object], datagrams: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        for data in datagrams:
            read_fields(parser(data))

    return run


@pytest.fixture(scope="module", autouse=True)
def parsers_agree() -> None:
    check_agreement(FULL)
    check_agreement(MINI)


PARSERS = {"ours": parse, "struct": struct_parse}
DATAGRAMS = {"full": FULL, "mini": MINI}


@pytest.mark.parametrize("parser", PARSERS.values(), ids=PARSERS.keys())
@pytest.mark.parametrize("datagrams", DATAGRAMS.values(), ids=DATAGRAMS.keys())
def test_parse(benchmark: BenchmarkFixture, datagrams: list[bytes], parser: Callable) -> None:
    benchmark(loop(parser, datagrams))


@pytest.mark.parametrize("parser", PARSERS.values(), ids=PARSERS.keys())
def test_parse_and_read_full(benchmark: BenchmarkFixture, parser: Callable) -> None:
    benchmark(parse_and_read(parser, FULL))
