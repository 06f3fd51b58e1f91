"""The broad concealment bench (issue 29): many impairment seeds, several speakers, in parallel.

Not a pytest benchmark (nothing here is collected): a script over benches/pesq_speech.py,
whose run (`run_once`: talker -> impairment relay -> node -> listener, PESQ and both bounds per
run) it repeats for every speaker, condition, concealment and seed. A score on one seed says
how the buffer and the concealment fit that seed's losses and that sample's words; the mean
and the worst over many say whether they generalise.

    python benches/pesq_broad.py                       # 20 seeds x 3 speakers, -j 3
    python benches/pesq_broad.py --seeds 2 --speakers female -j 2     # a smoke test
    python benches/pesq_broad.py --repeat-seeds 1 2 --repeat 3        # spread on two seeds

Each speaker is another espeak-ng voice with its own text; one talks over background noise
(`pesq_speech.speech`'s `noise_dbfs`). For every condition and concealment the script reports
the mean, worst and quartiles of (score - bound) against both bounds (repeat-and-fade and
pitch), the added delay, and the spread between runs of one seed, against the issue's targets:
mean at or above the pitch bound minus 0.05, worst at or above the fade bound, spread under
0.05. With `--keep DIR` each run's recording is kept; `--worst N` then compares the N worst
runs of each cell frame by frame with their bound: the stretches where the node's output
differs, and what putting the bound's frames back there would gain.

Runs in parallel (`-j`): a node run is real time and light, but a host that falls behind skews
what the bench measures, so every run records the node's tick lateness and the talker's
pacing (both in the JSON); compare them with a `-j 1` run before trusting a larger `-j`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from node._core import conceal_frames
from pesq_speech import CONDITIONS, FRAME, RATE, run_once, score, speech


@dataclass(frozen=True)
class Speaker:
    voice: str
    text: str
    noise_dbfs: float | None = None


#: Other voices and other words than the seed-1 sample the buffer was tuned on
#: (pesq_speech.TEXT in `en-us`); one talks over white noise 19 dB below the speech.
SPEAKERS = {
    "us-male": Speaker(
        "en-us",
        "This is the weekly net of the valley repeater group. Stations with traffic, "
        "please call now. We have a report of high winds on the ridge, so keep your "
        "antennas secured and check your batteries before the storm.",
    ),
    "female": Speaker(
        "en+f3",
        "Good evening everyone, your signal is five by nine, full quieting into the hub. "
        "I will be mobile for the next hour, heading north on the highway, listening on "
        "the linked system.",
    ),
    "gb-male-noisy": Speaker(
        "en-gb+m3",
        "Roger that, the link to the coastal node dropped twice this morning. Engineering "
        "replaced the power supply at the site, and the audio levels should be steady now. "
        "Over to you for the weather.",
        noise_dbfs=-45.0,
    ),
}

#: The issue's targets, on (score - bound).
MEAN_VS_PITCH = -0.05
WORST_VS_FADE = 0.0
SPREAD = 0.05

#: A run the host skewed: its media clock or its talker fell behind by more than a loaded
#: 2-core host gives (tick p99 and pacing p99 stay under 2.5 and 4 ms at -j 4 on an idle
#: one). Such a run measures the host, so the summary leaves it out and `--redo` runs it again.
SKEWED_TICK_P99_US = 5000
SKEWED_PACING_P99_MS = 8.0


def skewed(r: dict) -> bool:
    return r["tick_p99_us"] > SKEWED_TICK_P99_US or r["talker_pacing_p99_ms"] > SKEWED_PACING_P99_MS


@dataclass(frozen=True)
class Job:
    speaker: str
    condition: str
    concealment: str
    seed: int
    repeat: int

    @property
    def name(self) -> str:
        return f"{self.speaker}-{self.condition}-{self.concealment}-s{self.seed}-r{self.repeat}"


def _run(job: Job, ref: np.ndarray, keep: str | None, target_extra_ms: int) -> dict:
    """One run in a worker process, in its own directory; a run whose setup fails (a port taken
    by a parallel run between picking and binding it) is retried."""
    for attempt in range(3):
        try:
            with tempfile.TemporaryDirectory(prefix="pesq-broad-") as tmp:
                result = run_once(
                    Path(tmp),
                    ref,
                    CONDITIONS[job.condition],
                    job.seed,
                    job.concealment,
                    target_extra_ms,
                    keep=Path(keep) / f"{job.name}.npz" if keep else None,
                )
            result.update(speaker=job.speaker, repeat=job.repeat, attempts=attempt + 1)
            return result
        except Exception:
            if attempt == 2:
                raise
            traceback.print_exc()
            time.sleep(1.0)
    raise AssertionError("unreachable")


def quartiles(x: list[float]) -> list[float]:
    return [round(float(q), 3) for q in np.percentile(x, [25, 50, 75])]


def summarise(results: list[dict]) -> list[dict]:
    """Per condition and concealment: (score - bound) against both bounds, the added delay,
    and the spread between runs of one seed, with the issue's targets marked."""
    out = []
    results = [r for r in results if not skewed(r)]
    cells = sorted({(r["condition"], r["concealment"]) for r in results})
    for cond, conc in cells:
        runs = [r for r in results if r["condition"] == cond and r["concealment"] == conc]
        # The distribution over seeds counts each (speaker, seed) once: its first run.
        first = [r for r in runs if r["repeat"] == 0]
        fade = [r["pesq"] - r["bound_fade"] for r in first]
        pitch = [r["pesq"] - r["bound_pitch"] for r in first]
        delay = [r["added_delay_ms"] for r in first]
        # The concealment's own part, apart from the buffer's: how the pitch bound stands to
        # the fade bound on the same losses.
        bounds = [r["bound_pitch"] - r["bound_fade"] for r in first]
        groups: dict[tuple[str, int], list[float]] = {}
        for r in runs:
            groups.setdefault((r["speaker"], r["seed"]), []).append(r["pesq"])
        spreads = [max(v) - min(v) for v in groups.values() if len(v) > 1]
        worst = min(first, key=lambda r: r["pesq"] - r["bound_fade"])
        cell = {
            "condition": cond,
            "concealment": conc,
            "runs": len(first),
            "speakers": sorted({r["speaker"] for r in first}),
            "seeds": len({r["seed"] for r in first}),
            "pesq_mean": round(float(np.mean([r["pesq"] for r in first])), 3),
            "bound_fade_mean": round(float(np.mean([r["bound_fade"] for r in first])), 3),
            "bound_pitch_mean": round(float(np.mean([r["bound_pitch"] for r in first])), 3),
            "vs_fade": {
                "mean": round(float(np.mean(fade)), 3),
                "worst": round(min(fade), 3),
                "quartiles": quartiles(fade),
            },
            "vs_pitch": {
                "mean": round(float(np.mean(pitch)), 3),
                "worst": round(min(pitch), 3),
                "quartiles": quartiles(pitch),
            },
            "pitch_bound_vs_fade_bound": {
                "mean": round(float(np.mean(bounds)), 3),
                "worst": round(min(bounds), 3),
                "below": sum(b < 0 for b in bounds),
            },
            "worst_run": f"{worst['speaker']} seed {worst['seed']}",
            "added_delay_ms": {
                "mean": round(float(np.mean(delay)), 1),
                "min": min(delay),
                "max": max(delay),
            },
            "spread": {
                "seeds": len(spreads),
                "runs": sum(len(v) for v in groups.values() if len(v) > 1),
                "max": round(max(spreads), 3) if spreads else None,
            },
            "tick_p99_us_max": max(r["tick_p99_us"] for r in runs),
            "talker_pacing_p99_ms_max": max(r["talker_pacing_p99_ms"] for r in runs),
        }
        # The targets are the node's, with its default concealment; "fade" is the comparison.
        cell["targets"] = (
            {
                "mean_vs_pitch": cell["vs_pitch"]["mean"] >= MEAN_VS_PITCH,
                "worst_vs_fade": cell["vs_fade"]["worst"] >= WORST_VS_FADE,
                "spread": None if not spreads else max(spreads) < SPREAD,
            }
            if conc == "pitch"
            else {"mean_vs_pitch": None, "worst_vs_fade": None, "spread": None}
        )
        out.append(cell)
    return out


def by_speaker(results: list[dict]) -> list[dict]:
    """Per condition, concealment and speaker (first runs): the bounds and (score - bound)."""
    out = []
    results = [r for r in results if not skewed(r)]
    for cond, conc, who in sorted(
        {(r["condition"], r["concealment"], r["speaker"]) for r in results}
    ):
        runs = [
            r
            for r in results
            if (r["condition"], r["concealment"], r["speaker"]) == (cond, conc, who)
            and r["repeat"] == 0
        ]

        def mean(key: str, runs: list[dict] = runs) -> float:
            return round(float(np.mean([r[key] for r in runs])), 3)

        fade = [r["pesq"] - r["bound_fade"] for r in runs]
        pitch = [r["pesq"] - r["bound_pitch"] for r in runs]
        out.append(
            {
                "condition": cond,
                "concealment": conc,
                "speaker": who,
                "runs": len(runs),
                "pesq_mean": mean("pesq"),
                "bound_fade_mean": mean("bound_fade"),
                "bound_pitch_mean": mean("bound_pitch"),
                "vs_fade_mean": round(float(np.mean(fade)), 3),
                "vs_fade_worst": round(min(fade), 3),
                "vs_pitch_mean": round(float(np.mean(pitch)), 3),
                "added_delay_ms_mean": mean("added_delay_ms"),
                "pitch_bound_below_fade_bound": sum(
                    r["bound_pitch"] < r["bound_fade"] for r in runs
                ),
            }
        )
    return out


def speaker_table(rows: list[dict]) -> str:
    out = [
        "| condition | concealment | speaker | runs | PESQ mean | bound fade / pitch (mean) "
        "| vs fade: mean, worst | vs pitch: mean | added delay mean "
        "| seeds whose pitch bound is below the fade bound |",
        "|" + "---|" * 10,
    ]
    for r in rows:
        out.append(
            f"| {r['condition']} | {r['concealment']} | {r['speaker']} | {r['runs']} "
            f"| {r['pesq_mean']:.3f} | {r['bound_fade_mean']:.3f} / {r['bound_pitch_mean']:.3f} "
            f"| {r['vs_fade_mean']:+.3f}, {r['vs_fade_worst']:+.3f} | {r['vs_pitch_mean']:+.3f} "
            f"| {r['added_delay_ms_mean']:.0f} ms | {r['pitch_bound_below_fade_bound']} |"
        )
    return "\n".join(out)


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT met")


def _dist(d: dict) -> str:
    return f"{d['mean']:+.3f}, {d['worst']:+.3f}, " + " / ".join(
        f"{q:+.3f}" for q in d["quartiles"]
    )


def table(summary: list[dict]) -> str:
    """The summary as a Markdown table (what docs/jitter.md shows)."""
    head = (
        "| condition | concealment | runs | PESQ mean | bound fade / pitch (mean) "
        "| vs fade: mean, worst, quartiles | vs pitch: mean, worst, quartiles "
        "| added delay mean (range) | spread (seeds) | mean ≥ pitch - 0.05 | worst ≥ fade "
        "| spread < 0.05 |"
    )
    rows = [head, "|" + "---|" * 12]
    for c in summary:
        f, p, d, s = c["vs_fade"], c["vs_pitch"], c["added_delay_ms"], c["spread"]
        t = c["targets"]
        spread = "-" if s["max"] is None else f"{s['max']:.3f}"
        rows.append(
            f"| {c['condition']} | {c['concealment']} | {c['runs']} | {c['pesq_mean']:.3f} "
            f"| {c['bound_fade_mean']:.3f} / {c['bound_pitch_mean']:.3f} "
            f"| {_dist(f)} | {_dist(p)} "
            f"| {d['mean']:.0f} ms ({d['min']:.0f}-{d['max']:.0f}) "
            f"| {spread} ({s['seeds']}) "
            f"| {_mark(t['mean_vs_pitch'])} | {_mark(t['worst_vs_fade'])} | {_mark(t['spread'])} |"
        )
    return "\n".join(rows)


#: How far (frames) one utterance of the recording may sit from the global alignment.
MAX_SHIFT = 10


def realigned(
    heard: np.ndarray, bound_pcm: np.ndarray, cut: np.ndarray
) -> tuple[np.ndarray, list[int]]:
    """`cut` with each utterance and each pause moved, by whole frames, to where it matches the
    bound best. The buffer may move the timeline by a frame in any pause (PESQ aligns each
    utterance by itself, so in silence that costs nothing); compared against one global
    alignment, every utterance after such a step would differ whole. A move inside an
    utterance still shows, as a long stretch that differs from the move on. Also returns the
    frames where the shift changes (the seams, where a frame is missing or doubled)."""
    n = len(heard) // FRAME
    frames = heard[: n * FRAME].astype(np.float64).reshape(n, FRAME)
    level = 10 * np.log10(np.mean(frames**2, 1) + 1)
    active = level > np.percentile(level, 10) + 10

    # Utterances: active frames joined across fewer than 3 quiet ones (the buffer's pause);
    # the segments are the utterances and the pauses between them.
    def runs() -> list[tuple[int, int]]:
        edges = [0, *(i for i in range(1, n) if active[i] != active[i - 1]), n]
        return list(itertools.pairwise(edges))

    for lo, hi in runs():
        if not active[lo] and hi - lo < 3 and lo > 0 and hi < n:
            active[lo:hi] = True
    merged = runs()
    pad = MAX_SHIFT * FRAME
    src = np.pad(cut.astype(np.float64), (pad, pad))
    ref = bound_pcm.astype(np.float64)
    shift = np.zeros(n, dtype=int)
    previous = 0
    for lo, hi in merged:
        seg = ref[lo * FRAME : hi * FRAME]

        def error(m: int, lo: int = lo, hi: int = hi, seg: np.ndarray = seg) -> float:
            at = pad + (lo + m) * FRAME
            return float(np.sum((src[at : at + (hi - lo) * FRAME] - seg) ** 2))

        # A silent pause matches at any shift: it keeps the one before.
        best = min(range(-MAX_SHIFT, MAX_SHIFT + 1), key=lambda m: (error(m), abs(m - previous)))
        shift[lo:hi] = previous = best
    out = np.zeros(n * FRAME, dtype=np.int16)
    for i in range(n):
        at = pad + (i + shift[i]) * FRAME
        out[i * FRAME : (i + 1) * FRAME] = src[at : at + FRAME]
    seams = [i for i in range(1, n) if shift[i] != shift[i - 1]]
    return np.concatenate([out, cut[n * FRAME :]]), seams


def costly_frames(path: Path, concealment: str, added_ms: float, base_ms: float) -> dict:
    """Where a run's recording differs from its bound (the same losses concealed by the same
    method, nothing else changed): its score with each utterance and pause realigned (what the
    timeline's moves cost), and, in stretches of frames, each with what putting the bound's
    frames back there gains, its lost frames, and the latest network delay in it against the
    playout delay (base + added): frames that arrived after it were concealed by the node but
    not by the bound."""
    data = np.load(path)
    heard, cut, lost = data["heard"], data["cut"], data["lost"]
    net = data["net_delay_ms"]
    bound_pcm = np.frombuffer(
        conceal_frames(heard.tobytes(), [bool(x) for x in lost], RATE, concealment), np.int16
    )
    n = len(heard) // FRAME
    heard_score = score(heard, cut)
    cut, seams = realigned(heard, bound_pcm, cut)
    a = cut[: n * FRAME].astype(np.float64).reshape(n, FRAME)
    b = bound_pcm[: n * FRAME].astype(np.float64).reshape(n, FRAME)
    # µ-law decodes and re-encodes losslessly, so frames the node passed untouched are equal;
    # the floor ignores a sample's rounding in a gain or a mix.
    differs = np.sqrt(np.mean((a - b) ** 2, axis=1)) > 30.0
    stretches: list[list[int]] = []
    for i in np.flatnonzero(differs):
        if stretches and i - stretches[-1][1] <= 3:
            stretches[-1][1] = int(i)
        else:
            stretches.append([int(i), int(i)])
    base = score(heard, cut)
    playout = base_ms + added_ms
    out = []
    for lo, hi in stretches:
        patched = cut.copy()
        patched[lo * FRAME : (hi + 1) * FRAME] = bound_pcm[lo * FRAME : (hi + 1) * FRAME]
        seg = net[lo : hi + 1]
        latest = float(np.nanmax(seg)) if np.isfinite(seg).any() else float("nan")
        out.append(
            {
                "frames": [lo, hi],
                "differing": int(differs[lo : hi + 1].sum()),
                "gain": round(score(heard, patched) - base, 3),
                "lost": int(lost[lo : hi + 1].sum()),
                "latest_net_delay_ms": round(latest, 1),
                "late": bool(latest > playout),
                "seam": any(lo - 1 <= i <= hi + 1 for i in seams),
            }
        )
    out.sort(key=lambda s: -s["gain"])
    every = cut.copy()
    for lo, hi in stretches:
        every[lo * FRAME : (hi + 1) * FRAME] = bound_pcm[lo * FRAME : (hi + 1) * FRAME]
    return {
        "pesq": round(heard_score, 3),
        "realigned": round(base, 3),
        "all_patched": round(score(heard, every), 3),
        "playout_ms": round(playout, 1),
        "stretches": out,
    }


def _cause(s: dict) -> str:
    if s["seam"]:
        return "the timeline moved here (a frame dropped or doubled)"
    if s["differing"] > 25:
        return "shift (a long stretch: the timeline moved)"
    if s["late"]:
        return "late frames concealed"
    return "other (a stretch, a drop or the concealment's join)"


def worst_frames(results: list[dict], keep: Path, count: int, pool: ProcessPoolExecutor) -> list:
    """`costly_frames` for the `count` runs furthest below their own concealment's bound in
    each cell."""
    jobs = []
    for cond, conc in sorted({(r["condition"], r["concealment"]) for r in results}):
        runs = [
            r
            for r in results
            if (r["condition"], r["concealment"]) == (cond, conc) and not skewed(r)
        ]
        runs.sort(key=lambda r: r["pesq"] - r[f"bound_{conc}"])
        for r in runs[:count]:
            name = Job(r["speaker"], cond, conc, r["seed"], r["repeat"]).name
            path = keep / f"{name}.npz"
            if path.exists():
                args = (path, conc, r["added_delay_ms"], CONDITIONS[cond].base_ms)
                jobs.append((r, pool.submit(costly_frames, *args)))
    out = []
    for r, fut in jobs:
        found = fut.result()
        keys = ("speaker", "condition", "concealment", "seed", "repeat")
        found.update({k: r[k] for k in keys}, bound=r[f"bound_{r['concealment']}"])
        # Moving each utterance and pause back to the bound's timeline, as PESQ saw it.
        causes: dict[str, float] = {
            "moves (realigned - recorded)": found["realigned"] - found["pesq"]
        }
        for s in found["stretches"]:
            causes[_cause(s)] = round(causes.get(_cause(s), 0.0) + s["gain"], 3)
        found["gain_by_cause"] = {k: round(v, 3) for k, v in causes.items()}
        out.append(found)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds 1..N per speaker")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--speakers", nargs="+", default=list(SPEAKERS), choices=SPEAKERS)
    parser.add_argument(
        "--conditions", nargs="+", default=["moderate", "harsh"], choices=CONDITIONS
    )
    parser.add_argument(
        "--concealment", nargs="+", default=["fade", "pitch"], choices=["fade", "pitch"]
    )
    parser.add_argument("--repeat-seeds", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each repeat seed")
    parser.add_argument("-j", "--jobs", type=int, default=3, help="runs at once")
    parser.add_argument("--jitter-target-extra-ms", type=int, default=40)
    parser.add_argument("--json", type=Path, help="write every run and the summary here")
    parser.add_argument("--keep", type=Path, help="keep each run's recording here (npz)")
    parser.add_argument("--worst", type=int, default=0, help="frame-by-frame look at N per cell")
    parser.add_argument(
        "--from-json", type=Path, help="summarise the runs of an earlier --json, run nothing"
    )
    parser.add_argument(
        "--redo", action="store_true", help="with --from-json: run its skewed runs again"
    )
    args = parser.parse_args()
    earlier: list[dict] = []
    if args.from_json:
        # An earlier --json, or the JSON lines a run printed (a run cut short).
        text = args.from_json.read_text()
        try:
            earlier = json.loads(text)["runs"]
        except json.JSONDecodeError:
            earlier = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    if args.from_json and not args.redo:
        results = earlier
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
            frames = worst_frames(results, args.keep, args.worst, pool) if args.keep else []
        report(results, frames, args.json, {"jobs": args.jobs})
        return

    with tempfile.TemporaryDirectory(prefix="pesq-broad-ref-") as tmp:
        refs = {
            name: speech(Path(tmp), s.noise_dbfs, s.voice, s.text)
            for name, s in SPEAKERS.items()
            if name in args.speakers
        }
    for name, ref in refs.items():
        print(f"# {name}: {len(ref) / RATE:.1f} s", file=sys.stderr)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    jobs = [
        Job(speaker, cond, conc, seed, rep)
        for seed in seeds
        for rep in range(args.repeat if seed in args.repeat_seeds else 1)
        for cond in args.conditions
        for speaker in args.speakers
        for conc in args.concealment
    ]
    if args.redo:
        bad = [r for r in earlier if skewed(r)]
        jobs = [
            Job(r["speaker"], r["condition"], r["concealment"], r["seed"], r["repeat"]) for r in bad
        ]
        earlier = [r for r in earlier if not skewed(r)]
    # Repeats last, so a cut-short run still has every seed once.
    jobs.sort(key=lambda j: j.repeat)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    keep = str(args.keep) if args.keep else None
    print(f"# {len(jobs)} runs, -j {args.jobs}", file=sys.stderr)
    started = time.monotonic()
    results: list[dict] = list(earlier)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
        futures = {
            pool.submit(_run, j, refs[j.speaker], keep, args.jitter_target_extra_ms): j
            for j in jobs
        }
        for fut in as_completed(futures):
            try:
                result = fut.result()
            except Exception as e:
                print(f"# {futures[fut].name} failed: {e!r}", file=sys.stderr)
                continue
            results.append(result)
            print(json.dumps(result), flush=True)
        frames = worst_frames(results, args.keep, args.worst, pool) if args.keep else []
    elapsed = time.monotonic() - started
    print(f"# {len(results)} of {len(jobs)} runs in {elapsed / 60:.1f} min", file=sys.stderr)
    report(results, frames, args.json, {"jobs": args.jobs, "minutes": round(elapsed / 60, 1)})


def report(results: list[dict], frames: list[dict], path: Path | None, meta: dict) -> None:
    """Print the tables and the worst runs' costly frames; write everything to `path`."""
    summary = summarise(results)
    speakers = by_speaker(results)
    left_out = [r for r in results if skewed(r)]
    if left_out:
        print(f"# {len(left_out)} of {len(results)} runs skewed by the host, left out")
    print(table(summary))
    print()
    print(speaker_table(speakers))
    for f in frames:
        top = ", ".join(
            f"{s['frames'][0]}-{s['frames'][1]} {s['gain']:+.3f}"
            + (" late" if s["late"] else "")
            + (" move" if s["seam"] else "")
            + (f" lost {s['lost']}" if s["lost"] else "")
            for s in f["stretches"][:4]
        )
        print(
            f"# {f['condition']} {f['concealment']} {f['speaker']} seed {f['seed']}: "
            f"{f['pesq']:.3f} (its bound {f['bound']:.3f}), realigned "
            f"{f['realigned']:.3f}, all patched {f['all_patched']:.3f}; {top}"
        )
    if path:
        used = {r["speaker"] for r in results}
        path.write_text(
            json.dumps(
                {
                    **meta,
                    "speakers": {k: vars(v) for k, v in SPEAKERS.items() if k in used},
                    "summary": summary,
                    "by_speaker": speakers,
                    "worst_frames": frames,
                    "runs": results,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
