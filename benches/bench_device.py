"""The sound card edge: one device block through node._core.DevicePort against the same work
done with soxr and numpy. The 48 kHz <-> 8/16 kHz conversions alone are in bench_resample.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from node import _core
from tones import loop

soxr = pytest.importorskip("soxr")

N_FRAMES = 512
DEVICE = 48000


# --- one 5 ms device block each way, as the audio callback makes it ---------------------------


@pytest.fixture(scope="module")
def device_blocks(speech_frames: Callable[..., list[bytes]]) -> list[bytes]:
    return speech_frames(DEVICE, ms=5)


def test_exchange_ours(bench, device_blocks) -> None:
    """DevicePort.exchange: 48 kHz -> 8 kHz with gain and meter, frames to and from the engine,
    8 kHz -> 48 kHz with gain and meter; one Rust call."""
    engine = _core.Engine("127.0.0.1:0", rate=8000)
    try:
        port = engine.open_device(DEVICE, rx_gain_db=-3.0, tx_gain_db=1.0)
        assert all(len(port.exchange(b)) == len(b) for b in device_blocks[:8])
        bench(
            loop(port.exchange, device_blocks),
            per_call=N_FRAMES,
            samples=240,
            unit="5 ms block",
        )
        port.close()
    finally:
        engine.stop()


def test_exchange_soxr(bench, device_blocks) -> None:
    """The same block's work in Python: two soxr streams, numpy gains and a peak/RMS meter."""
    down = soxr.ResampleStream(DEVICE, 8000, 1, dtype="float32", quality="HQ")
    up = soxr.ResampleStream(8000, DEVICE, 1, dtype="float32", quality="HQ")
    rx_gain, tx_gain = np.float32(10 ** (-3 / 20)), np.float32(10 ** (1 / 20))
    speaker = np.zeros(40, np.float32)
    meter = [0.0, 0.0]

    def step(block: bytes) -> bytes:
        mic = down.resample_chunk(np.frombuffer(block, np.int16).astype(np.float32)) * rx_gain
        mic16 = np.clip(np.round(mic), -32768, 32767).astype(np.int16)
        meter[0] = max(meter[0], float(np.abs(mic16).max(initial=0)))
        meter[1] += float(np.dot(mic16, mic16.astype(np.float64)))
        out = up.resample_chunk(speaker * tx_gain)
        out16 = np.zeros(240, np.int16)
        n = min(out.size, 240)
        out16[:n] = np.clip(np.round(out[:n]), -32768, 32767)
        return out16.tobytes()

    assert all(len(step(b)) == len(b) for b in device_blocks[:8])
    bench(loop(step, device_blocks), per_call=N_FRAMES, samples=240, unit="5 ms block")


# --- the local radio in real time: a USRP radio against the sound card path --------------------
#
# Neither path's cost is one call: the sound card's is a callback every 5 ms on the device's
# thread, the USRP radio's a thread of the engine (socket, 20 ms clock, reorder, resample, meter,
# packets). Both run here in real time at a 16 kHz station, both directions busy, and the CPU
# each path's own thread used is read per second of audio: the sound card thread from
# time.thread_time, the engine's USRP thread from the kernel's schedstat.

REALTIME_S = 4.0
DISABLED_S = 0.6


def _thread_cpu_ns(name: str) -> int:
    """CPU time (ns) of this process's thread called `name` (the kernel's schedstat); the
    thread names itself once it runs, so it is looked for a little while."""
    import os
    import time

    for _ in range(100):
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    if f.read().strip() != name:
                        continue
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    return int(f.read().split()[0])
            except OSError:
                continue
        time.sleep(0.01)
    raise AssertionError(f"no thread named {name!r}")


def _record(benchmark, path: str, cpu_s: float, audio_s: float, extra: dict) -> float:  # type: ignore[no-untyped-def]
    per_s = cpu_s / audio_s
    benchmark.extra_info.update({f"{path}_cpu_ms_per_audio_s": round(per_s * 1000, 3), **extra})
    print(f"\n{path}: {per_s * 1000:.3f} ms CPU per second of audio ({per_s:.4%} of a core)")
    return per_s


def test_realtime_cpu_usrp_vs_soundcard(benchmark, device_blocks) -> None:  # type: ignore[no-untyped-def]
    """One run, both paths: the USRP radio's engine thread with a peer streaming keyup voice
    both ways, then a sound card's 5 ms callbacks at 48 kHz (DevicePort.exchange)."""
    import socket
    import struct
    import threading
    import time

    seconds = DISABLED_S if benchmark.disabled else REALTIME_S
    engine = _core.Engine("127.0.0.1:0", rate=16000)
    try:
        peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        peer.bind(("127.0.0.1", 0))
        peer.setblocking(False)
        listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        listen.bind(("127.0.0.1", 0))
        port_no = listen.getsockname()[1]
        listen.close()
        port = engine.open_usrp(
            f"127.0.0.1:{port_no}", f"127.0.0.1:{peer.getsockname()[1]}", {"rx_gain_db": -3.0}
        )
        port.set_keyed(True)  # the transmitter keyed throughout: a packet out every 20 ms
        t = np.arange(160)
        frames = [
            struct.pack(
                "<160h",
                *np.round(6000 * np.sin(2 * np.pi * 1000 * (t + 160 * k) / 8000)).astype(int),
            )
            for k in range(50)
        ]
        cpu0 = _thread_cpu_ns("usrp")
        start, sent, got = time.monotonic(), 0, 0
        while (now := time.monotonic()) - start < seconds:
            if sent < (now - start) / 0.02:
                head = b"USRP" + struct.pack(">7I", sent, 0, 1, 0, 0, 0, 0)
                peer.sendto(head + frames[sent % 50], ("127.0.0.1", port_no))
                sent += 1
            try:
                while True:
                    peer.recvfrom(2048)
                    got += 1
            except BlockingIOError:
                time.sleep(0.002)
        usrp_cpu = (_thread_cpu_ns("usrp") - cpu0) / 1e9
        stats = port.stats()
        port.close()
        peer.close()
        assert stats["rx"]["voice"] >= sent - 5 and got >= 0.8 * seconds * 50, (stats, got)
        ours = _record(benchmark, "usrp", usrp_cpu, seconds, {"usrp_packets_in": sent})

        # The sound card path in the same run: 5 ms blocks at 48 kHz, paced like a callback.
        card = engine.open_device(DEVICE, rx_gain_db=-3.0, tx_gain_db=1.0)
        result: dict[str, float] = {}

        def callback_thread() -> None:
            t0 = time.thread_time()
            begin, k = time.monotonic(), 0
            while time.monotonic() - begin < seconds:
                card.exchange(device_blocks[k % len(device_blocks)])
                k += 1
                delay = begin + k * 0.005 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            result["cpu"] = time.thread_time() - t0

        th = threading.Thread(target=callback_thread, name="soundcard")
        th.start()
        th.join()
        card.close()
        theirs = _record(benchmark, "soundcard", result["cpu"], seconds, {})
        benchmark.extra_info["usrp_over_soundcard"] = round(ours / theirs, 3)
    finally:
        engine.stop()
    # The figures are the extra info above; pytest-benchmark's own timing has nothing to time.
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
