"""Benchmark harness: our kernels against their peers, as ratios from one pytest-benchmark run.

Conventions (research/perf.md §6):

- Files are `benches/bench_*.py` (collected by the hook below) and tests are named
  `test_<kernel>_<impl>`: `impl` is `ours` for node._core and the peer's name otherwise
  (`audioop`, `numpy`, `soxr`, ...). A test parametrized over several kernels is named
  `test_<anything>_<impl>` and each case's id is its kernel (`test_encode_ours[ulaw_encode]`, see
  `tones.kernels`).
  Define the `ours` test first in a module, so each peer test can compute its ratio when it runs.
- Each test checks correctness first, then times a call that cycles through >= 512 distinct
  frames (a repeated frame lets the branch predictor flatter branchy peers 2.5x), using the
  `bench` fixture: `bench(fn, per_call=512, samples=160)` times `fn` and records the time per
  unit (`per_call` units per call, `samples` samples per unit).
- A peer test marked `@pytest.mark.ratio_target(x)` states the goal "ours is >= x times faster
  than this peer". Ratios (peer time / our time) and targets go into `extra_info` and a table at
  the end of the run. With PERF_ENFORCE=1 a ratio below 70 % of its target (the noise margin
  of a shared 2-core VM) fails the session; otherwise benchmarks are measured, not asserted.

Run with the extension built in release mode (`maturin develop --release`):
`pytest benches` (timing) or `pytest benches --benchmark-disable` (correctness only).
"""

from __future__ import annotations

import os

# numpy's OpenBLAS worker threads spin after start-up and steal a core of this 2-core machine
# from the timed loop; benchmarks need none of them. Effective only before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ENFORCE_MARGIN = 0.7


@dataclass
class Result:
    kernel: str
    impl: str
    seconds_per_unit: float
    unit: str
    samples_per_unit: int
    target: float | None


_RESULTS: dict[tuple[str, str], Result] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ratio_target(x): our kernel must be >= x times faster than this peer"
    )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


MACHINE = {"machine": platform.machine(), "cpu": _cpu_model(), "nproc": os.cpu_count()}


def _split_name(node: pytest.Function) -> tuple[str, str]:
    kernel, _, impl = node.originalname.removeprefix("test_").rpartition("_")
    callspec = getattr(node, "callspec", None)
    if callspec is not None:
        kernel = callspec.id
    return kernel, impl


@pytest.fixture
def bench(benchmark: Any, request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Time `fn` with pytest-benchmark and record its cost per unit for the ratio table."""
    kernel, impl = _split_name(request.node)
    marker = request.node.get_closest_marker("ratio_target")
    target = float(marker.args[0]) if marker else None

    def run(
        fn: Callable[[], Any],
        *,
        per_call: int,
        samples: int,
        unit: str = "frame",
        extra: dict[str, Any] | None = None,
    ) -> Any:
        benchmark.extra_info.update(extra or {})
        out = benchmark(fn)
        if benchmark.disabled or benchmark.stats is None:
            return out
        per_unit = benchmark.stats.stats.median / per_call
        result = Result(kernel, impl, per_unit, unit, samples, target)
        _RESULTS[(kernel, impl)] = result
        info = benchmark.extra_info
        info.update(MACHINE)
        info.update(
            {
                f"ns_per_{unit}": round(per_unit * 1e9, 1),
                "ns_per_sample": round(per_unit * 1e9 / samples, 3),
            }
        )
        ours = _RESULTS.get((kernel, "ours"))
        if impl != "ours" and ours is not None:
            info["ratio"] = round(per_unit / ours.seconds_per_unit, 2)
            info["target"] = target
        return out

    return run


@pytest.fixture(scope="session")
def speech() -> Callable[[int, float], np.ndarray]:
    """Deterministic speech-like int16 signal: two tones, a 1.3 Hz envelope and noise."""

    def make(rate: int, seconds: float) -> np.ndarray:
        t = np.arange(round(rate * seconds)) / rate
        rng = np.random.default_rng(20261122)
        env = 0.6 + 0.4 * np.sin(2 * np.pi * 1.3 * t)
        x = env * (6000 * np.sin(2 * np.pi * 440 * t) + 3000 * np.sin(2 * np.pi * 1170 * t))
        x += rng.normal(0, 600, t.size)
        return np.clip(np.round(x), -32768, 32767).astype(np.int16)

    return make


@pytest.fixture(scope="session")
def speech_frames(speech: Callable[[int, float], np.ndarray]) -> Callable[..., list[bytes]]:
    """`speech_frames(rate, ms=20)`: 512 consecutive `ms` ms frames of `speech`, as bytes."""

    def make(rate: int, ms: int = 20, count: int = 512) -> list[bytes]:
        n = rate * ms // 1000
        x = speech(rate, count * ms / 1000)
        return [x[i * n : (i + 1) * n].tobytes() for i in range(count)]

    return make


@pytest.fixture(scope="session")
def speech_blocks(speech: Callable[[int, float], np.ndarray]) -> Callable[[int], list[np.ndarray]]:
    """`speech_blocks(rate)`: 8 consecutive 1 s blocks of `speech`."""

    def make(rate: int, count: int = 8) -> list[np.ndarray]:
        x = speech(rate, count)
        return [x[i * rate : (i + 1) * rate] for i in range(count)]

    return make


def _rows() -> list[tuple[str, str, float, float, float, float | None, str]]:
    rows = []
    for (kernel, impl), peer in sorted(_RESULTS.items()):
        ours = _RESULTS.get((kernel, "ours"))
        if impl == "ours" or ours is None:
            continue
        ratio = peer.seconds_per_unit / ours.seconds_per_unit
        verdict = "-"
        if peer.target is not None:
            verdict = "ok" if ratio >= peer.target else "BELOW"
        rows.append(
            (
                kernel,
                impl,
                ours.seconds_per_unit * 1e9,
                peer.seconds_per_unit * 1e9,
                ratio,
                peer.target,
                verdict,
            )
        )
    return rows


def pytest_terminal_summary(terminalreporter: Any) -> None:
    rows = _rows()
    if not rows:
        return
    tr = terminalreporter
    tr.section("kernel ratios (peer time / our time, same run)")
    tr.write_line(f"{MACHINE['machine']}, {MACHINE['cpu']}, {MACHINE['nproc']} CPUs")
    tr.write_line(
        f"{'kernel':<16}{'peer':<10}{'ours ns':>12}{'peer ns':>12}{'ratio':>9}{'target':>9}  "
    )
    for kernel, impl, ours_ns, peer_ns, ratio, target, verdict in rows:
        tgt = f"{target:.1f}x" if target is not None else "-"
        tr.write_line(
            f"{kernel:<16}{impl:<10}{ours_ns:>12.1f}{peer_ns:>12.1f}{ratio:>8.2f}x{tgt:>9}  "
            f"{verdict}"
        )
    units = sorted({(r.kernel, r.unit) for r in _RESULTS.values()})
    tr.write_line("units: " + ", ".join(f"{k} ns per {u}" for k, u in units))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("PERF_ENFORCE") != "1":
        return
    failing = [r for r in _rows() if r[5] is not None and r[4] < float(r[5]) * ENFORCE_MARGIN]
    if failing and session.exitstatus == 0:
        session.exitstatus = 1
