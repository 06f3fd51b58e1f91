"""MediaBridge over a real engine: the calls the controller makes reach the engine intact."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from node._core import (
    CommandFailed,
    ControlPlayed,
    Engine,
    EngineEvent,
    FullVoiceNeeded,
    MiniFrame,
    PlayFinished,
    PlayStarted,
    parse,
    ulaw_decode,
    ulaw_encode,
)
from node.errors import CommandError
from node.iax2.constants import ControlSubclass, Format
from node.media.bridge import MediaBridge, Topology


def test_a_radio_key_pushed_by_the_controller_plays_out_in_order_with_the_audio() -> None:
    # Regression: the controller passes (callno, "control", subclass, ts) for RADIO_KEY/UNKEY,
    # and the bridge used to take (callno, kind, ts) and forward a call the engine refuses: the
    # TypeError discarded the rest of the received batch (seen with a keying softphone in
    # tests/interop/test_two_nodes.py).
    engine = Engine("127.0.0.1:0")
    try:
        bridge = MediaBridge(engine, Topology())
        bridge.add_leg(7, 9, ("127.0.0.1", 9), int(Format.ULAW), 0)
        frame = ulaw_encode(b"\x00\x10" * 160)
        for i in range(10):
            bridge.push_voice(7, int(Format.ULAW), 20 + 20 * i, frame)
        bridge.push_control(7, "control", int(ControlSubclass.RADIO_KEY), 30)
        events: list[EngineEvent] = []
        for _ in range(250):
            events += engine.drain_events()
            if any(isinstance(e, ControlPlayed) for e in events):
                break
            time.sleep(0.02)
        controls = [e for e in events if isinstance(e, ControlPlayed)]
        assert controls == [ControlPlayed(7, "control", int(ControlSubclass.RADIO_KEY), 30, b"")]
        assert not [e for e in events if isinstance(e, CommandFailed)]
    finally:
        engine.stop()


def _received(sock: socket.socket, seconds: float) -> list[bytes]:
    got = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got.append(sock.recv(4096))
        except BlockingIOError:
            time.sleep(0.005)
    return got


def _voice(datagrams: list[bytes]) -> np.ndarray:
    """The µ-law audio of every mini frame received, in order (the engine hands full voice
    frames to Python instead of sending them)."""
    pcm = b""
    for data in datagrams:
        frame = parse(data)
        assert isinstance(frame, MiniFrame)
        pcm += ulaw_decode(frame.payload)
    return np.frombuffer(pcm, dtype=np.int16)


def test_announcements_reach_calls_and_links_only_as_asked() -> None:
    engine = Engine("127.0.0.1:0")
    call, link = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    try:
        for s in (call, link):
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
        bridge = MediaBridge(engine, Topology())
        bridge.add_leg(7, 9, call.getsockname(), int(Format.ULAW), 0)
        bridge.add_leg(8, 10, link.getsockname(), int(Format.ULAW), 0, keying="voice", link=True)
        ended: list[bool] = []
        clip = bridge.tone_pcm(1000.0, 200, -10.0)
        assert len(clip) == 2 * (1600 + 40)
        first = bridge.play(clip, "to_air", "event", on_ended=ended.append)
        heard_call, heard_link = _received(call, 0.6), _received(link, 0.05)
        events = engine.drain_events()
        # The full voice frames went to Python as events; the minis straight to the call.
        full = [e for e in events if isinstance(e, FullVoiceNeeded)]
        assert [e.callno for e in full] == [7]
        assert heard_link == []
        audio = np.concatenate(
            [np.frombuffer(ulaw_decode(full[0].payload), np.int16), _voice(heard_call)]
        )
        assert len(audio) == 160 * 11
        peak = 20 * np.log10(np.abs(audio.astype(float)).max() / 32767)
        assert abs(peak - -10.0) < 0.5
        plays = [e for e in events if isinstance(e, (PlayStarted, PlayFinished))]
        assert plays == [PlayStarted(first), PlayFinished(first, True)]
        assert bridge.playback_event(True, first) == "event"
        assert bridge.playback_event(False, first, True) == "event"
        assert ended == [True]
        assert bridge.playback_event(False, first, True) is None

        # Asked for: the links hear it too (and are keyed by it).
        second = bridge.play(clip, "to_air_and_links", "event")
        assert len(_voice(_received(link, 0.6))) > 0
        engine.drain_events()
        # Cut short: ends not completed.
        third = bridge.play(clip * 20, "to_monitor", "id", on_ended=ended.append)
        time.sleep(0.1)
        bridge.stop_playing(third)
        time.sleep(0.1)
        finished = [e for e in engine.drain_events() if isinstance(e, PlayFinished)]
        assert finished == [PlayFinished(third, False)]
        assert bridge.playback_event(False, third, False) == "id" and ended == [True, False]
        assert second != third
        with pytest.raises(CommandError, match="to_air_and_links"):
            bridge.play(clip, "everywhere", "event")  # type: ignore[arg-type]
    finally:
        engine.stop()
        call.close()
        link.close()


def test_the_jitter_buffer_size_reaches_the_engine_and_is_checked_there() -> None:
    # The config refuses such values first; the engine names the field all the same.
    with pytest.raises(ValueError, match="max_jitterbuf_ms must be at least frame_ms"):
        Engine("127.0.0.1:0", jitter_max_ms=10)
    with pytest.raises(ValueError, match=r"target_extra_ms must be 0\.\.=10000"):
        Engine("127.0.0.1:0", jitter_target_extra_ms=20_000)
    Engine("127.0.0.1:0", jitter_target_extra_ms=1000, jitter_max_ms=4000).stop()
