"""The sound card edge from Python: the 48 kHz converters, the engine's device port, and the
bridge's audio status (rust/polyphase.rs, rust/device.rs, rust/binding/device.rs)."""

from __future__ import annotations

import itertools
import socket
import time

import numpy as np
import pytest

from node._core import (
    CodecError,
    Decimator,
    DeviceError,
    Downsampler,
    DtmfDecoded,
    DtmfDetector,
    Engine,
    EngineError,
    FullVoiceNeeded,
    Interpolator,
    dtmf_pcm,
    resample_pcm,
    ulaw_decode,
    ulaw_encode,
)
from node.errors import CommandError
from node.media.bridge import MediaBridge, Topology
from tests.signals import AMP, amplitude, db, tone

FORMAT_ULAW = 0x4


def pcm(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.int16)


def mini_payloads(peer: socket.socket) -> list[bytes]:
    """The µ-law payloads of the mini frames waiting on a call's socket (non-blocking)."""
    payloads = []
    while True:
        try:
            data = peer.recv(2048)
        except BlockingIOError:
            return payloads
        if len(data) == 164 and not data[0] & 0x80:
            payloads.append(data[4:])


# --- the converters -----------------------------------------------------------------------------


@pytest.mark.parametrize(("factor", "rate"), [(6, 8000), (3, 16000)])
def test_a_1khz_tone_keeps_its_level_through_48k_down_and_back_up(factor: int, rate: int) -> None:
    x = tone(1000, 48000, 1.2)
    down, up = Decimator(factor), Interpolator(factor)
    low = pcm(down.process(x.tobytes()))
    back = pcm(up.process(low.tobytes()))
    assert low.size == x.size // factor and back.size == x.size
    assert abs(db(amplitude(low[-rate:], 1000, rate) / AMP)) < 0.5
    assert abs(db(amplitude(back[-48000:], 1000, 48000) / AMP)) < 0.5
    # Both ways, the tone comes back delayed by the two filters (N - 1 taps) and nothing else.
    delay = round(down.delay * factor + up.delay)
    assert delay == {6: 239, 3: 143}[factor]
    assert np.abs(back[delay + 2000 :].astype(int) - x[2000 : x.size - delay]).max() <= 3


def test_5khz_at_48k_is_rejected_going_to_8k_at_least_as_well_as_by_the_halfband() -> None:
    # A 1 kHz tone beside the 5 kHz one keeps the rounding busy (alone, the alias is under
    # half an LSB and the output is exactly silent).
    x = tone(5000, 48000, 1.2) + tone(1000, 48000, 1.2, 8000)
    y = pcm(Decimator(6).process(x.tobytes()))
    ours = -db(amplitude(y[-8000:], 3000, 8000) / AMP)
    x16 = tone(5000, 16000, 1.2) + tone(1000, 16000, 1.2, 8000)
    y16 = pcm(Downsampler().process(x16.tobytes()))
    halfband = -db(amplitude(y16[-8000:], 3000, 8000) / AMP)
    assert halfband >= 80  # the 2:1 resampler's own figure (docs/media.md: 84.8 dB)
    assert ours >= halfband, (ours, halfband)


def test_streaming_in_odd_pieces_equals_one_call() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-20000, 20000, 5000).astype(np.int16)
    for factor in (3, 6):
        whole = Decimator(factor).process(x.tobytes())
        d = Decimator(factor)
        cuts = [0, 1, 7, 480, 481, 1999, 5000]
        parts = b"".join(d.process(x[a:b].tobytes()) for a, b in itertools.pairwise(cuts))
        assert parts == whole
        low = x[:800]
        whole = Interpolator(factor).process(low.tobytes())
        u = Interpolator(factor)
        assert u.process(low[:333]) + u.process(low[333:].tobytes()) == whole


def test_converters_refuse_other_factors_and_odd_buffers() -> None:
    with pytest.raises(CodecError, match=r"factor of 4 \(accepted: \[3, 6\]\)"):
        Decimator(4)
    with pytest.raises(CodecError):
        Interpolator(2)
    with pytest.raises(CodecError, match="even byte count"):
        Decimator(6).process(b"\x00\x01\x02")
    assert repr(Decimator(6)) == "Decimator(48000 -> 8000, delay=19.916666666666668)"
    assert Interpolator(3).delay == 71.5 and Interpolator(3).factor == 3


# --- the device port ----------------------------------------------------------------------------


@pytest.fixture
def engine() -> Engine:
    e = Engine("127.0.0.1:0", rate=8000)
    yield e
    e.stop()


def test_the_port_refuses_rates_and_gains_it_cannot_take(engine: Engine) -> None:
    with pytest.raises(DeviceError, match=r"44100 Hz .* \(accepted device rates: 8000, 48000\)"):
        engine.open_device(44100)
    with pytest.raises(DeviceError, match="16000 Hz"):
        engine.open_device(16000)
    with pytest.raises(DeviceError, match=r"out of range \(accepted: -40 to \+20 dB\)"):
        engine.open_device(48000, rx_gain_db=25.0)
    port = engine.open_device(48000, rx_gain_db=-3.0, tx_gain_db=2.5)
    assert (port.device_rate, port.station_rate) == (48000, 8000)
    assert (port.rx_gain_db, port.tx_gain_db) == (-3.0, 2.5)
    with pytest.raises(DeviceError):
        port.set_gains(rx_gain_db=0.0, tx_gain_db=-41.0)
    assert (port.rx_gain_db, port.tx_gain_db) == (-3.0, 2.5)  # neither changed
    port.set_gains(tx_gain_db=0.0)
    assert (port.rx_gain_db, port.tx_gain_db) == (-3.0, 0.0)
    with pytest.raises(DeviceError, match="even byte count"):
        port.exchange(b"\x00" * 5)
    port.close()
    assert port.closed and repr(port) == "DevicePort(closed)"
    with pytest.raises(EngineError, match="closed"):
        port.exchange(b"\x00" * 480)


def test_the_port_meters_the_captured_audio_after_the_gain(engine: Engine) -> None:
    port = engine.open_device(48000)
    # ASL's calibration level: 1 kHz at 3 kHz deviation, about 7000 peak (-13.4 dBFS).
    x = tone(1000, 48000, 0.3, 7000).tobytes()
    block = 480  # bytes of one 5 ms block at 48 kHz
    for i in range(0, len(x), block):
        assert len(port.exchange(x[i : i + block])) == block
    rx = port.stats()["rx"]
    assert rx["peak_dbfs"] == pytest.approx(-13.4, abs=0.1)
    assert rx["rms_dbfs"] == pytest.approx(-13.4, abs=0.1)
    assert rx["frames"] == len(x) // 2 // 6 // 160
    port.set_gains(rx_gain_db=6.0)
    for i in range(0, len(x), block):
        port.exchange(x[i : i + block])
    rx = port.stats()["rx"]
    assert rx["peak_dbfs"] == pytest.approx(-7.4, abs=0.1)
    assert rx["gain_db"] == 6.0 and rx["clipped"] == 0
    port.close()


def test_audio_flows_both_ways_between_a_48k_card_and_a_call(engine: Engine) -> None:
    """The radio's receiver reaches the call at 8 kHz; the call reaches the transmitter at 48 kHz.

    The test plays the sound card: it calls the port once per 10 ms of audio, paced by the
    clock, as PortAudio would.
    """
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.setblocking(False)
    bridge = MediaBridge(engine, Topology(mode="handset"))
    port = engine.open_device(48000)
    try:
        bridge.add_leg(1, 2, peer.getsockname(), FORMAT_ULAW, 0)
        # The call sends a 700 Hz tone for 1.5 s, one frame per 20 ms.
        call_tone = tone(700, 8000, 1.5, 10000)
        radio = tone(1000, 48000, 2.0, 8000).tobytes()
        played = []
        received = []
        start = time.monotonic()
        for i in range(200):
            if i % 2 == 0 and i // 2 < 75:
                k = i // 2
                frame = ulaw_encode(call_tone[k * 160 : (k + 1) * 160].tobytes())
                bridge.push_voice(1, FORMAT_ULAW, 20 + 20 * k, frame)
            played.append(port.exchange(radio[i * 960 : (i + 1) * 960]))
            received += mini_payloads(peer)
            wait = start + (i + 1) * 0.010 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        stats = port.stats()
    finally:
        port.close()
        peer.close()
    # To the call: the radio's 1 kHz at 8 kHz µ-law, at its level (8000 peak) within 0.5 dB.
    levels = sorted(amplitude(pcm(ulaw_decode(f)), 1000, 8000) for f in received)
    assert len(levels) >= 20
    assert abs(db(levels[len(levels) // 2] / 8000)) < 0.5, levels
    # To the radio: the call's 700 Hz at 48 kHz. A late frame leaves a gap of silence, so take
    # the longest stretch of 5 ms blocks at full level and measure 100 ms (70 periods) of it.
    out = pcm(b"".join(played))
    blocks = out[: out.size // 240 * 240].reshape(-1, 240).astype(np.float64)
    full = np.sqrt((blocks**2).mean(axis=1)) > 0.9 * 10000 / np.sqrt(2)
    best, run, end = 0, 0, 0
    for k, ok in enumerate(full):
        run = run + 1 if ok else 0
        if run > best:
            best, end = run, k + 1
    assert best >= 20, full.astype(int)
    stretch = blocks[end - 20 : end].ravel()
    assert abs(db(amplitude(stretch, 700, 48000) / 10000)) < 0.5
    assert stats["rx"]["frames"] > 0 and stats["tx"]["frames"] > 0


# --- the bridge's audio status -----------------------------------------------------------------


def test_the_bridge_opens_the_null_device_at_48k_and_reports_both_directions(
    engine: Engine,
) -> None:
    bridge = MediaBridge(engine, Topology(), device_rate=48000, rx_gain_db=-6.0)
    assert bridge.audio() == {
        "backend": "none",
        "running": False,
        "rx": {"gain_db": -6.0},
        "tx": {"gain_db": 0.0},
    }
    bridge.start_audio()
    try:
        audio = bridge.audio()
        # Its port is open with the converters and gains, but the null device trades no
        # blocks (it has no clock of its own): nothing is counted or metered.
        assert (audio["rate"], audio["device_rate"], audio["block_ms"]) == (8000, 48000, None)
        assert audio["filter_delay_ms"] == 2.49 and audio["rx"]["frames"] == 0
        assert audio["blocks"] == 0 and audio["tx"]["frames"] == 0
        assert audio["rx"]["gain_db"] == -6.0 and audio["rx"]["peak_dbfs"] == -100.0
        assert audio["rx"]["overflows"] == 0 and audio["tx"]["underflows"] == 0
        assert bridge.set_gains(tx_gain_db=3.0) == {"rx_gain_db": -6.0, "tx_gain_db": 3.0}
        assert bridge.audio()["tx"]["gain_db"] == 3.0
        with pytest.raises(CommandError, match="rx_gain_db must be a number from -40 to 20"):
            bridge.set_gains(rx_gain_db=21.0)
        # A live device switch keeps the gains and the counters.
        frames = bridge.audio()["rx"]["frames"]
        bridge.set_devices()
        audio = bridge.audio()
        assert audio["rx"]["gain_db"] == -6.0 and audio["tx"]["gain_db"] == 3.0
        assert audio["rx"]["frames"] == frames == 0
    finally:
        bridge.close()
    assert bridge.audio()["running"] is False


def test_dtmf_on_the_radios_receiver_is_decoded_and_kept_off_the_call(engine: Engine) -> None:
    """In-band DTMF on the local radio: tones captured by a 48 kHz card reach the engine's
    detector at 8 kHz (events with call None) and the call on the conference hears none of
    them. The test plays the sound card, paced by the clock."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.setblocking(False)
    bridge = MediaBridge(engine, Topology(mode="handset"))
    bridge.set_local_dtmf(True)
    port = engine.open_device(48000)
    try:
        bridge.add_leg(1, 2, peer.getsockname(), FORMAT_ULAW, 0)
        tones = dtmf_pcm(8000, "*70#", -10.0, 80, 80)
        radio = resample_pcm(b"\x00\x00" * 800 + tones + b"\x00\x00" * 2400, 8000, 48000)
        events, heard = [], []
        start = time.monotonic()
        for i in range(len(radio) // 480):
            port.exchange(radio[i * 480 : (i + 1) * 480])
            events += engine.drain_events()
            heard += [pcm(ulaw_decode(p)) for p in mini_payloads(peer)]
            wait = start + (i + 1) * 0.005 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        time.sleep(0.1)
        events += engine.drain_events()
    finally:
        port.close()
        peer.close()
    assert [e for e in events if isinstance(e, DtmfDecoded)] == [
        DtmfDecoded(None, d) for d in "*70#"
    ]
    # The call heard the radio while it sent tones (muted: silence, not gaps), and no digit.
    # Each spurt's first frame is a full voice frame the engine hands to Python.
    heard += [pcm(ulaw_decode(e.payload)) for e in events if isinstance(e, FullVoiceNeeded)]
    assert len(heard) >= 16
    detector = DtmfDetector(8000)
    assert detector.process(np.concatenate(heard).tobytes()) == []
