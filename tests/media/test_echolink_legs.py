"""EchoLink legs in the engine's conference, on real loopback UDP: a "station" socket sends GSM
packets made by libgsm and records what the engine sends back (decoded by libgsm), an IAX2 peer
socket talks and listens through a µ-law leg; a tone crosses each way with its frequency, and
audio from an address with no leg is counted and dropped."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from node._core import (
    CommandFailed,
    Engine,
    MiniFrame,
    RxKeyed,
    parse,
    ulaw_decode,
    ulaw_encode,
)
from tests.conftest import require_tool
from tests.libgsm import FRAME_BYTES, FRAME_SAMPLES, LibGsm, load

#: Loopback addresses of their own, away from the 127.0.0.2/.3 the SvxLink tests use.
NODE_IP = "127.0.0.51"
STATION_IP = "127.0.0.52"
STRANGER_IP = "127.0.0.53"
LEG = 32768 + 9
CALLNO, PEER_CALLNO = 5, 6
ULAW = 0x4
LIB = load()


def udp(ip: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, 0))
    s.setblocking(False)
    return s


def tone(freq: float, frames: int, first: int = 0) -> np.ndarray:
    n = np.arange(first * FRAME_SAMPLES, (first + frames) * FRAME_SAMPLES)
    return (8000 * np.sin(2 * np.pi * freq * n / 8000)).astype(np.int16)


def dominant_hz(pcm: np.ndarray) -> float:
    x = pcm.astype(np.float64) * np.hanning(len(pcm))
    return float(np.argmax(np.abs(np.fft.rfft(x))) * 8000 / len(pcm))


def wait_until(cond: Callable[[], bool], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def drain(s: socket.socket) -> Iterator[bytes]:
    while True:
        try:
            yield s.recv(2048)
        except BlockingIOError:
            return


@pytest.fixture(params=[8000, 16000], ids=["8k", "16k"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    require_tool("libgsm1", lambda: LIB is not None)
    e = Engine(f"{NODE_IP}:0", rate=request.param)
    yield e
    e.stop()


def test_a_tone_crosses_both_ways_between_a_station_and_an_iax2_link(engine: Engine) -> None:
    station, iax_peer = udp(STATION_IP), udp("127.0.0.1")
    (_, audio_port), _ = engine.echolink_open(NODE_IP, 0, 0)
    engine.add_echolink_leg(LEG, STATION_IP, port=station.getsockname()[1])
    engine.add_leg(CALLNO, PEER_CALLNO, iax_peer.getsockname(), ULAW, keying="always", link=True)
    to_station = LibGsm(LIB)  # type: ignore[arg-type]
    from_station = LibGsm(LIB)  # type: ignore[arg-type]
    station_gsm = to_station.encode_all(tone(800, 60))
    iax_pcm = tone(1300, 60)
    heard_by_station: list[bytes] = []
    heard_by_iax: list[bytes] = []
    events = []
    start = time.monotonic()
    for n in range(75):
        if n < 60:
            frame = ulaw_encode(iax_pcm[n * FRAME_SAMPLES : (n + 1) * FRAME_SAMPLES].tobytes())
            if n == 0:  # the first voice of a call is a full frame, which Python hands over
                engine.push_voice(CALLNO, ULAW, 0, frame)
            else:
                mini = MiniFrame(PEER_CALLNO, n * 20, frame).to_bytes()
                iax_peer.sendto(mini, engine.local_addr)
        if n % 4 == 0 and n < 60:
            seq = n // 4
            frames = station_gsm[seq * 4 * FRAME_BYTES : (seq + 1) * 4 * FRAME_BYTES]
            packet = struct.pack(">BBH", 0xC0, 0x03, seq) + bytes(8) + frames
            station.sendto(packet, (NODE_IP, audio_port))
        time.sleep(max(0.0, start + (n + 1) * 0.02 - time.monotonic()))
        heard_by_station += drain(station)
        heard_by_iax += drain(iax_peer)
        events += engine.drain_events()
    time.sleep(0.3)
    heard_by_station += drain(station)
    heard_by_iax += drain(iax_peer)
    events += engine.drain_events()
    station.close()
    iax_peer.close()

    # The station heard the IAX2 link's 1300 Hz, in whole GSM packets numbered from 0.
    assert heard_by_station, "nothing reached the station"
    seqs = [struct.unpack(">H", p[2:4])[0] for p in heard_by_station]
    assert seqs == list(range(len(seqs)))
    assert all(len(p) == 144 and p[:2] == b"\xc0\x03" for p in heard_by_station)
    pcm = from_station.decode_all(b"".join(p[12:] for p in heard_by_station))
    assert abs(dominant_hz(pcm[len(pcm) // 4 :]) - 1300) < 20

    # The IAX2 link heard the station's 800 Hz (mini frames; the first of a spurt goes to
    # Python as a full frame, which this test does not send).
    minis = [parse(d) for d in heard_by_iax]
    pcm_iax = np.frombuffer(b"".join(ulaw_decode(m.payload) for m in minis), np.int16)
    assert len(pcm_iax) > 30 * FRAME_SAMPLES
    assert abs(dominant_hz(pcm_iax[len(pcm_iax) // 4 :]) - 800) < 20

    # The station keyed the conference like a linked node, under its leg id.
    keyed = [e.keyed for e in events if isinstance(e, RxKeyed) and e.callno == LEG]
    assert keyed[:1] == [True]
    assert not [e for e in events if isinstance(e, CommandFailed)]

    # The legs' figures are published every half second.
    def published() -> bool:
        stats, jitter = engine.echolink_leg_stats(LEG), engine.leg_jitter_stats(LEG)
        return (
            stats is not None
            and jitter is not None
            and (stats["packets_in"], stats["frames_in"]) == (15, 60)
            and stats["packets_out"] == len(seqs)
            and jitter["frames_in"] == 60
        )

    assert wait_until(published), (engine.echolink_leg_stats(LEG), engine.leg_jitter_stats(LEG))
    assert engine.echolink_counters()["audio_out"] == len(seqs)


def test_audio_from_an_address_without_a_leg_is_counted_and_dropped(engine: Engine) -> None:
    (_, audio_port), _ = engine.echolink_open(NODE_IP, 0, 0)
    station, stranger = udp(STATION_IP), udp(STRANGER_IP)
    engine.add_echolink_leg(LEG, STATION_IP, port=station.getsockname()[1])
    packet = b"\xc0\x03\x00\x00" + bytes(8) + LibGsm(LIB).encode_all(tone(500, 4))  # type: ignore[arg-type]
    stranger.sendto(packet, (NODE_IP, audio_port))
    station.sendto(packet[:100], (NODE_IP, audio_port))
    assert wait_until(lambda: engine.echolink_counters()["audio_in"] == 2)
    station.close()
    stranger.close()
    c = engine.echolink_counters()
    assert (c["audio_unrouted"], c["audio_malformed"]) == (1, 1)
    # The leg's counters are published every half second.
    assert wait_until(lambda: (engine.echolink_leg_stats(LEG) or {}).get("packets_malformed") == 1)
    stats = engine.echolink_leg_stats(LEG)
    assert stats is not None and stats["packets_in"] == 0
    assert not [e for e in engine.drain_events() if isinstance(e, RxKeyed)]


def test_leg_ids_are_checked_and_a_leg_goes(engine: Engine) -> None:
    with pytest.raises(ValueError, match="IAX2 call number"):
        engine.add_echolink_leg(32767, STATION_IP)
    engine.add_echolink_leg(LEG, STATION_IP)
    engine.add_echolink_leg(LEG + 1, STATION_IP)
    deadline = time.monotonic() + 5
    failed: list[CommandFailed] = []
    while not failed and time.monotonic() < deadline:
        failed = [e for e in engine.drain_events() if isinstance(e, CommandFailed)]
        time.sleep(0.01)
    assert "already has a leg" in failed[0].message
    assert wait_until(lambda: engine.echolink_leg_stats(LEG) is not None)
    assert engine.echolink_leg_stats(LEG + 1) is None
    with pytest.raises(ValueError, match="IAX2 call number"):
        engine.remove_echolink_leg(CALLNO)
    engine.remove_echolink_leg(LEG)
    assert wait_until(lambda: engine.echolink_leg_stats(LEG) is None)
