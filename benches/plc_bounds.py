"""The concealment alone, scored (issue 29): pitch bound against fade bound on many loss patterns.

Not a pytest benchmark (nothing here is collected): a script. For every speaker, condition and
seed it draws the relay's losses exactly as benches/pesq_replay.py `replay_once` does
(`FateDrawer(cond, random.Random(seed))`, one draw per frame, `.lost`), then scores the two
*bounds* of pesq_speech (`bound(heard, lost, method)`: the µ-law reference with only the lost
frames concealed) and reports, per condition and per speaker, the mean of (pitch - fade), the
worst, how many runs the pitch concealment loses, and the mean pitch bound. No jitter buffer
runs here: this is the concealment on its own, in seconds per configuration.

    python benches/plc_bounds.py                            # tuning set: seeds 1-20, 3 speakers
    python benches/plc_bounds.py --first-seed 21            # held-out seeds 21-40
    python benches/plc_bounds.py --speakers us-m7 --seeds 40   # the held-out speaker
    python benches/plc_bounds.py --json out.json --worst 5  # the runs pitch loses most

`us-m7` (espeak-ng `en-us+m7`, its own text) is a speaker no concealment was tuned on; keep it
out of tuning so it stays a check.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.interop.impair import FateDrawer

from pesq_broad import SPEAKERS as BROAD
from pesq_broad import Speaker
from pesq_replay import HEARD, heard_speech, keep_heard
from pesq_speech import CONDITIONS, FRAME, bound

#: The broad bench's speakers plus one held out of all tuning.
SPEAKERS = dict(BROAD)
SPEAKERS["us-m7"] = Speaker(
    "en-us+m7",
    "Net control, this is the emergency coordinator. The shelter at the high school is open "
    "and needs two more operators for the night shift. Bring a handheld, spare batteries and "
    "a headset, and check in on the simplex frequency when you arrive.",
)


def lost_frames(n: int, condition: str, seed: int) -> set[int]:
    """The frames the relay loses for `seed` (the draws of pesq_replay.replay_once)."""
    drawer = FateDrawer(CONDITIONS[condition], random.Random(seed))
    return {i for i in range(n) if drawer.draw().lost}


def _job(args: tuple[str, str, int]) -> dict:
    speaker, condition, seed = args
    heard = HEARD[speaker]
    lost = lost_frames(len(heard) // FRAME, condition, seed)
    fade = bound(heard, lost, "fade") if lost else float("nan")
    pitch = bound(heard, lost, "pitch") if lost else float("nan")
    return {
        "speaker": speaker,
        "condition": condition,
        "seed": seed,
        "lost": sorted(lost),
        "fade": round(fade, 4),
        "pitch": round(pitch, 4),
    }


def summary_rows(results: list[dict]) -> list[str]:
    rows = [
        "| condition | speaker | runs | pitch - fade mean | worst | below 0 | fade mean "
        "| pitch mean |",
        "|---|---|---|---|---|---|---|---|",
    ]
    conds = sorted({r["condition"] for r in results}, reverse=True)
    for c in conds:
        cell = [r for r in results if r["condition"] == c and r["lost"]]
        groups = [*sorted({r["speaker"] for r in cell}), "all"]
        for sp in groups:
            rs = [r for r in cell if sp == "all" or r["speaker"] == sp]
            d = np.array([r["pitch"] - r["fade"] for r in rs])
            rows.append(
                f"| {c} | {sp} | {len(rs)} | {d.mean():+.4f} | {d.min():+.4f} | "
                f"{int((d < 0).sum())} | {np.mean([r['fade'] for r in rs]):.4f} | "
                f"{np.mean([r['pitch'] for r in rs]):.4f} |"
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--speakers", nargs="+", default=list(BROAD), choices=list(SPEAKERS))
    ap.add_argument("--conditions", nargs="+", default=["moderate", "harsh"])
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worst", type=int, default=0, help="list the N runs pitch loses most")
    a = ap.parse_args()
    heard = heard_speech(SPEAKERS, a.speakers)
    jobs = [
        (sp, c, seed)
        for sp in a.speakers
        for c in a.conditions
        for seed in range(a.first_seed, a.first_seed + a.seeds)
    ]
    if a.j > 1:
        with ProcessPoolExecutor(a.j, initializer=keep_heard, initargs=(heard,)) as pool:
            results = list(pool.map(_job, jobs, chunksize=4))
    else:
        keep_heard(heard)
        results = [_job(j) for j in jobs]
    print("\n".join(summary_rows(results)))
    if a.worst:
        print()
        for r in sorted(results, key=lambda r: r["pitch"] - r["fade"])[: a.worst]:
            print(
                f"{r['speaker']:14} {r['condition']:8} s{r['seed']:<3} fade {r['fade']:.3f} "
                f"pitch {r['pitch']:.3f} ({r['pitch'] - r['fade']:+.3f}) lost {r['lost']}"
            )
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
