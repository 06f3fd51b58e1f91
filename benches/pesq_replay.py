"""The broad concealment bench replayed offline: the same speakers, conditions and seeds as
benches/pesq_broad.py, through the media path's jitter buffer and concealment
(`node._core.jitter_replay`) instead of a real-time node run.

Not a pytest benchmark (nothing here is collected): a script. The relay's seeded draws
(`FateDrawer`) give each voice frame its fate exactly as the real relay does; the frame is
sent at 20 ms * its index and reaches the buffer after its drawn delay; the buffer is pulled
every 20 ms at a tick phase drawn from the seed. What comes out is scored with PESQ against
both bounds, as in pesq_broad. A replay has no host: it is deterministic, its spread is 0, and
120 runs take a minute, so it is where the buffer and the concealment are tuned; pesq_broad
then confirms on the real node.

    python benches/pesq_replay.py                         # 20 seeds x 3 speakers, pitch
    python benches/pesq_replay.py --concealment pitch fade --json replay.json
    python benches/pesq_replay.py --seeds 40 --target-extra-ms 60
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.interop.impair import FateDrawer

from node._core import jitter_replay
from pesq_broad import SPEAKERS, Speaker, by_speaker, speaker_table, summarise, table
from pesq_speech import CONDITIONS, FRAME, align, bound, score, speech, ulaw_round_trip

#: The talker's first voice timestamp (ms since its call started), as a softphone sends it.
FIRST_TS = 1000
#: Replay clock of the first frame's sending.
SENT_AT_MS = 1000


def replay_once(
    heard: np.ndarray,
    condition: str,
    seed: int,
    concealment: str,
    target_extra_ms: int = 40,
) -> dict:
    """One seeded run of `heard` (µ-law round trip of the speech) through the buffer."""
    cond = CONDITIONS[condition]
    rng = random.Random(seed)
    drawer = FateDrawer(cond, rng)
    n = len(heard) // FRAME
    arrivals, lost = [], set()
    for i in range(n):
        fate = drawer.draw()
        if fate.lost:
            lost.add(i)
            continue
        pcm = heard[i * FRAME : (i + 1) * FRAME].tobytes()
        sent = SENT_AT_MS + 20 * i
        arrivals.append((FIRST_TS + 20 * i, round(sent + 1000 * fate.delay_s), pcm))
        if fate.dup_delay_s is not None:
            arrivals.append((FIRST_TS + 20 * i, round(sent + 1000 * fate.dup_delay_s), pcm))
    # The node's clock runs at its own phase against the talker's.
    phase = random.Random(f"phase-{seed}").randrange(20)
    last = max(at for _, at, _ in arrivals)
    ticks = (last - SENT_AT_MS) // 20 + 60
    out, stats, _played = jitter_replay(
        arrivals, SENT_AT_MS + phase, ticks, 8000, concealment, target_extra_ms
    )
    deg = np.frombuffer(out, dtype=np.int16)
    cut, lag = align(heard, deg)
    added = phase + lag / 8 - cond.base_ms
    return {
        "condition": condition,
        "seed": seed,
        "concealment": concealment,
        "pesq": round(score(heard, cut), 3),
        "bound_fade": round(bound(heard, lost, "fade"), 3),
        "bound_pitch": round(bound(heard, lost, "pitch"), 3),
        "added_delay_ms": round(added, 1),
        "loss_pct": round(100 * len(lost) / n, 2),
        "buffer": {k: stats[k] for k in ("lost", "late", "dropped", "interpolated", "stretched")},
        "tick_p99_us": 0,
        "talker_pacing_p99_ms": 0.0,
        "repeat": 0,
    }


#: Each worker's speech by speaker (`keep_heard` fills it once per process).
HEARD: dict[str, np.ndarray] = {}


def keep_heard(heard: dict[str, np.ndarray]) -> None:
    HEARD.update(heard)


def heard_speech(speakers: Mapping[str, Speaker], names: Iterable[str]) -> dict[str, np.ndarray]:
    """Each named speaker's speech as the node hears it (µ-law round trip)."""
    with tempfile.TemporaryDirectory(prefix="pesq-replay-") as tmp:
        heard = {}
        for name in names:
            s = speakers[name]
            heard[name] = ulaw_round_trip(speech(Path(tmp), s.noise_dbfs, s.voice, s.text))
        return heard


def _job(args: tuple[str, str, int, str, int]) -> dict:
    speaker, condition, seed, concealment, extra = args
    r = replay_once(HEARD[speaker], condition, seed, concealment, extra)
    r["speaker"] = speaker
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--speakers", nargs="+", default=list(SPEAKERS), choices=list(SPEAKERS))
    ap.add_argument("--conditions", nargs="+", default=["moderate", "harsh"])
    ap.add_argument("--concealment", nargs="+", default=["pitch"], choices=["pitch", "fade"])
    ap.add_argument("--target-extra-ms", type=int, default=40)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--quiet", action="store_true", help="only the tables")
    a = ap.parse_args()
    heard = heard_speech(SPEAKERS, a.speakers)
    jobs = [
        (sp, c, seed, conc, a.target_extra_ms)
        for sp in a.speakers
        for c in a.conditions
        for conc in a.concealment
        for seed in range(a.first_seed, a.first_seed + a.seeds)
    ]
    with ProcessPoolExecutor(a.j, initializer=keep_heard, initargs=(heard,)) as pool:
        results = list(pool.map(_job, jobs, chunksize=4))
    if not a.quiet:
        for r in results:
            print(
                f"{r['speaker']:14} {r['condition']:8} {r['concealment']:5} s{r['seed']:<3} "
                f"pesq {r['pesq']:.3f} fade {r['bound_fade']:.3f} pitch {r['bound_pitch']:.3f} "
                f"delay {r['added_delay_ms']:6.1f} {r['buffer']}"
            )
    summary = summarise(results)
    print(table(summary))
    print()
    print(speaker_table(by_speaker(results)))
    if a.json:
        a.json.write_text(json.dumps({"results": results, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
