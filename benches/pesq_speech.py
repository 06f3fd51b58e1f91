"""Speech through a lossy network, scored as a listener hears it: PESQ (ITU-T P.862 narrowband).

Not a pytest benchmark (nothing here is collected): a script, like benches/link_outage.py.

    talker P --> [impairment relay] --> node (node serve) --> listener Q (clean path)

P streams about 10 s of synthetic speech (espeak-ng, 8 kHz, µ-law, silence sent as voice) into
the node through a userspace relay that delays every voice frame from a seeded distribution
(so frames reorder), loses them in bursts (a Gilbert-Elliott chain) and duplicates some. Q sits
in the same conference on a clean loopback path and records what the node sends it. The
recording is aligned with the reference and scored with PESQ narrowband.

For every condition the script also scores the *bound*: the reference with only the frames
the relay lost replaced by concealment (what a perfect jitter buffer would give), once with
each concealment the node has ("fade", the old repeat-and-fade, and "pitch"). The node runs
once per concealment (`[bridge] concealment`), with the same relay seed. It prints one line per
run: PESQ, the bound, the delay the node adds on top of the network's base delay, and the loss
rate the relay applied.

    python benches/pesq_speech.py                      # clean, moderate, harsh, seed 1
    python benches/pesq_speech.py --repeat 3           # the same seed three times (spread)
    python benches/pesq_speech.py --conditions harsh --seed 7 --concealment pitch
    python benches/pesq_speech.py --noise-dbfs -45     # a talker on a noisy line
    python benches/pesq_speech.py --conditions harsh --seed 2 --jitter-target-extra-ms 120

`--noise-dbfs` adds steady background noise to the talker's audio (reference included), as a
noisy phone or a radio link's hiss does: the pauses between words are then the noise, not
silence, and the node must find them above it. `--jitter-target-extra-ms` runs the node with
that `[bridge] jitter_target_extra_ms` (the buffer's margin; 40 by default).

Needs espeak-ng and the `pesq` package (in the `test` extras).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.interop.harness import running_node, wait_until  # noqa: E402
from tests.interop.impair import Condition, ImpairmentRelay  # noqa: E402
from tests.interop.softphone import Softphone  # noqa: E402

from node._core import (  # noqa: E402
    conceal_frames,
    ulaw_decode,
    ulaw_encode,
)

RATE = 8000
FRAME = 160
TEXT = (
    "The quick brown fox jumps over the lazy dog. "
    "Amateur radio operators link their repeaters across the world. "
    "Please stand by while the net control station checks in the next caller. "
    "Seven, three, and good listening."
)
#: Silence the talker sends before the speech (as voice frames, as many phones do).
LEAD_IN_S = 0.4


CONDITIONS = {
    "clean": Condition("clean"),
    "moderate": Condition("moderate", base_ms=40, sd_ms=15, loss=0.01),
    "harsh": Condition(
        "harsh", base_ms=80, sd_ms=40, spike_every=250, spike_ms=150, loss=0.03, duplicate=0.01
    ),
}


def speech(
    workdir: Path, noise_dbfs: float | None = None, voice: str = "en-us", text: str = TEXT
) -> np.ndarray:
    """`text` spoken by espeak-ng's `voice` (about 10 s for TEXT) at 8 kHz, at -26 dBov active
    level, after LEAD_IN_S of silence, padded to whole frames; with `noise_dbfs`, over
    background noise of that level (white, seeded, from the first sample to the last)."""
    from scipy.signal import resample_poly

    wav = workdir / f"speech-{voice}.wav"
    subprocess.run(
        ["espeak-ng", "-v", voice, "-s", "150", "-w", str(wav), text],
        check=True,
        capture_output=True,
    )
    with wave.open(str(wav)) as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
    x = resample_poly(x, RATE, rate)
    active = x[np.abs(x) > 0.01 * np.abs(x).max()]
    x *= (32768 * 10 ** (-26 / 20)) / np.sqrt(np.mean(active**2))
    x = np.concatenate([np.zeros(int(LEAD_IN_S * RATE)), x, np.zeros(int(0.3 * RATE))])
    x = np.pad(x, (0, -len(x) % FRAME))
    if noise_dbfs is not None:
        noise = np.random.default_rng(0).normal(0.0, 1.0, len(x))
        x += noise * 32768 * 10 ** (noise_dbfs / 20)
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def ulaw_round_trip(pcm: np.ndarray) -> np.ndarray:
    return np.frombuffer(ulaw_decode(ulaw_encode(pcm.tobytes())), dtype=np.int16)


def received(phone: Softphone, callno: int) -> tuple[np.ndarray, dict[int, float], int]:
    """Q's recording on the node's timeline (frames the node did not send are zeros), the
    arrival time of each frame by timestamp, and the first timestamp."""
    rec = phone.recording(callno)
    with phone._lock:
        frames, arrived = dict(rec.frames), dict(rec.arrived)
    first, last = min(frames), max(frames)
    out = np.zeros((last - first) // 20 * FRAME + FRAME, dtype=np.int16)
    for ts, pcm in frames.items():
        at = (ts - first) // 20 * FRAME
        chunk = np.frombuffer(pcm, dtype=np.int16)[:FRAME]
        out[at : at + len(chunk)] = chunk
    return out, arrived, first


def align(ref: np.ndarray, deg: np.ndarray) -> tuple[np.ndarray, int]:
    """`deg` cut to `ref`'s length at the lag that best matches it, and that lag (samples of
    `deg` before the reference's first sample; negative when `deg` starts later)."""
    n = len(ref) + len(deg)
    size = 1 << (n - 1).bit_length()
    r = np.fft.rfft(ref.astype(np.float64), size)
    d = np.fft.rfft(deg.astype(np.float64), size)
    corr = np.fft.irfft(d * np.conj(r), size)
    # Circular correlation: index i is a lag of i, and size - i a lag of -i (the node sent
    # nothing for the reference's first frames).
    lags = np.concatenate([np.arange(len(deg)), np.arange(-len(ref) + 1, 0)])
    values = np.concatenate([corr[: len(deg)], corr[size - len(ref) + 1 :]])
    lag = int(lags[int(np.argmax(values))])
    cut = deg[max(0, lag) : lag + len(ref)]
    cut = np.pad(cut, (max(0, -lag), 0))
    return np.pad(cut, (0, len(ref) - len(cut)))[: len(ref)], lag


def score(ref: np.ndarray, deg: np.ndarray) -> float:
    from pesq import pesq

    return float(pesq(RATE, ref.astype(np.float64), deg.astype(np.float64), "nb"))


def bound(ref: np.ndarray, lost: set[int], method: str) -> float:
    """PESQ of the reference with only the lost frames concealed by `method`."""
    mask = [i in lost for i in range(len(ref) // FRAME)]
    pcm = np.frombuffer(conceal_frames(ref.tobytes(), mask, RATE, method), dtype=np.int16)
    return score(ref, pcm)


def run_once(
    workdir: Path,
    ref: np.ndarray,
    cond: Condition,
    seed: int,
    concealment: str,
    target_extra_ms: int = 40,
    keep: Path | None = None,
) -> dict[str, object]:
    """One node run; with `keep`, the reference as heard, the aligned recording, the relay's
    losses and per-frame delays are saved there (npz) for a frame-by-frame look."""
    sections = (
        f'[bridge]\nconcealment = "{concealment}"\njitter_target_extra_ms = {target_extra_ms}\n'
    )
    with running_node(
        workdir,
        f"pesq-{cond.name}-{concealment}",
        codec_policy="ulaw_only",
        listener='auth = "off"',
        sections=sections,
    ) as node:
        relay = ImpairmentRelay(node.udp_addr, cond, seed)
        with relay, Softphone(name="P") as talker, Softphone(name="Q") as listener:
            q = listener.dial(node.udp_addr, "1")
            assert listener.wait_for(lambda s: s.answered(q))
            p = talker.dial(relay.front_addr, "1")
            assert talker.wait_for(lambda s: s.answered(p))
            time.sleep(0.3)
            started = time.monotonic()
            talker.send_pcm(p, ref)
            wait_until("the talker to finish", lambda: not talker.sending(p), 60)
            time.sleep(1.0 + 2 * cond.base_ms / 1000 + cond.spike_ms / 1000)
            stats = node.get("/stats").json()
            legs = stats["legs"].values()
            deg, arrived, first = received(listener, q)
            talker.hangup(p)
            listener.hangup(q)
    heard = ulaw_round_trip(ref)
    cut, lag = align(heard, deg)
    # Mouth-to-ear: when Q heard each frame minus when P sent the same audio, less the
    # network's own base delay.
    delays = []
    for ts, at in arrived.items():
        k = ((ts - first) // 20 * FRAME - lag) / FRAME
        if 0 <= k < len(ref) // FRAME:
            delays.append(at - (started + k * 0.02))
    added = 1000 * float(np.median(delays)) - cond.base_ms if delays else float("nan")
    fates = relay.fates
    # The talker's leg is the one that received voice; its buffer's own account.
    leg = max(legs, key=lambda s: s["frames_in"])
    keys = ("lost", "late", "dropped", "interpolated", "stretched", "duplicate")
    buffer = {k: leg[k] for k in keys}
    # The talker's own pacing as the relay saw it (a loaded host shows here first), and the
    # node's media clock: a bench that skews either measures the host, not the buffer.
    sent = np.array([at - k * 0.02 for k, at in sorted(fates.arrived.items())])
    pacing = 1000 * float(np.percentile(sent - sent.min(), 99)) if len(sent) else float("nan")
    tick = stats["tick"]
    if keep is not None:
        n = len(ref) // FRAME
        np.savez_compressed(
            keep,
            heard=heard,
            cut=cut,
            lost=np.array([i in fates.lost for i in range(n)]),
            net_delay_ms=np.array([fates.delay_ms.get(i, np.nan) for i in range(n)]),
        )
    return {
        "condition": cond.name,
        "seed": seed,
        "concealment": concealment,
        "pesq": round(score(heard, cut), 3),
        "bound_fade": round(bound(heard, fates.lost, "fade"), 3),
        "bound_pitch": round(bound(heard, fates.lost, "pitch"), 3),
        "added_delay_ms": round(added, 1),
        "loss_pct": round(100 * len(fates.lost) / max(1, fates.voice), 2),
        "frames_sent": len(ref) // FRAME,
        "frames_heard": len(arrived),
        "duplicated": fates.duplicated,
        "buffer": buffer,
        "talker_pacing_p99_ms": round(pacing, 2),
        "tick_p99_us": tick["p99_us"],
        "tick_max_us": tick["max_us"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="runs of the same seed")
    parser.add_argument(
        "--concealment", nargs="+", default=["fade", "pitch"], choices=["fade", "pitch"]
    )
    parser.add_argument(
        "--noise-dbfs", type=float, default=None, help="background noise under the speech"
    )
    parser.add_argument(
        "--jitter-target-extra-ms", type=int, default=40, help="the jitter buffer's margin"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pesq-") as tmp:
        work = Path(tmp)
        ref = speech(work, args.noise_dbfs)
        for name in args.conditions:
            for concealment in args.concealment:
                for _ in range(args.repeat):
                    result = run_once(
                        work,
                        ref,
                        CONDITIONS[name],
                        args.seed,
                        concealment,
                        args.jitter_target_extra_ms,
                    )
                    result["noise_dbfs"] = args.noise_dbfs
                    result["target_extra_ms"] = args.jitter_target_extra_ms
                    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
