"""Writes `vectors.bin`, the GSM 06.10 vectors `cargo test` checks the Rust codec against
(rust/gsm/tests.rs), made by libgsm (Debian `libgsm1`) through ctypes.

Run from the repository root: `python3 tests/data/gsm/make_vectors.py`. The file holds two
sections, each a little-endian u32 frame count then the frames:

1. encoder: per frame 160 int16 LE input samples, then libgsm's 33 bytes (one encoder state
   across the section: espeak-ng speech, then full-scale random samples, then silence);
2. decoder: per frame 33 input bytes (random, with the 0xD signature), then libgsm's 160 int16
   LE samples (one decoder state across the section).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.audio import espeak  # noqa: E402
from tests.libgsm import FRAME_SAMPLES, LibGsm, load  # noqa: E402


def main() -> None:
    lib = load()
    if lib is None:
        raise SystemExit("libgsm1 is not installed")
    rng = np.random.default_rng(30)
    speech = espeak("Echo link test, one two three.", 8000)[: 60 * FRAME_SAMPLES]
    noise = rng.integers(-32768, 32768, 20 * FRAME_SAMPLES, dtype=np.int16)
    quiet = np.zeros(4 * FRAME_SAMPLES, dtype=np.int16)
    pcm = np.concatenate([speech, noise, quiet]).astype("<i2")
    enc = LibGsm(lib)
    out = [struct.pack("<I", len(pcm) // FRAME_SAMPLES)]
    for i in range(len(pcm) // FRAME_SAMPLES):
        block = pcm[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES].tobytes()
        out += [block, enc.encode(block)]
    dec = LibGsm(lib)
    frames = rng.integers(0, 256, (40, 33), dtype=np.uint8)
    frames[:, 0] = 0xD0 | (frames[:, 0] & 0x0F)
    out.append(struct.pack("<I", len(frames)))
    for f in frames:
        pcm_out = np.frombuffer(dec.decode(f.tobytes()), np.int16).astype("<i2")
        out += [f.tobytes(), pcm_out.tobytes()]
    Path(__file__).with_name("vectors.bin").write_bytes(b"".join(out))


if __name__ == "__main__":
    main()
