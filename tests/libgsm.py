"""libgsm (Debian `libgsm1`, the GSM 06.10 codec Asterisk and SvxLink use) through ctypes: the
reference our Rust codec must match bit for bit, and the peer its bench runs against."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import numpy as np

__all__ = ["FRAME_BYTES", "FRAME_SAMPLES", "LibGsm", "load"]

FRAME_BYTES = 33
FRAME_SAMPLES = 160
_PATHS = ("/usr/lib/x86_64-linux-gnu/libgsm.so.1", "/usr/lib/aarch64-linux-gnu/libgsm.so.1")


def load() -> ctypes.CDLL | None:
    """The library, or None where it is not installed."""
    for path in (*_PATHS, ctypes.util.find_library("gsm")):
        if path and (Path(path).exists() or not path.startswith("/")):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            lib.gsm_create.restype = ctypes.c_void_p
            lib.gsm_destroy.argtypes = [ctypes.c_void_p]
            lib.gsm_encode.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.gsm_decode.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.gsm_decode.restype = ctypes.c_int
            return lib
    return None


class LibGsm:
    """One libgsm state (an encoder or a decoder: libgsm keeps one state per direction)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._state = lib.gsm_create()
        self._pcm = (ctypes.c_int16 * FRAME_SAMPLES)()
        self._frame = (ctypes.c_uint8 * FRAME_BYTES)()

    def __del__(self) -> None:
        if getattr(self, "_state", None):
            self._lib.gsm_destroy(self._state)

    def encode(self, pcm: bytes) -> bytes:
        """One frame: 160 native-endian int16 samples to 33 bytes."""
        ctypes.memmove(self._pcm, pcm, FRAME_SAMPLES * 2)
        self._lib.gsm_encode(self._state, self._pcm, self._frame)
        return bytes(self._frame)

    def decode(self, frame: bytes) -> bytes:
        """One 33-byte frame to 160 samples (ValueError when libgsm refuses it)."""
        ctypes.memmove(self._frame, frame, FRAME_BYTES)
        if self._lib.gsm_decode(self._state, self._frame, self._pcm) != 0:
            raise ValueError("libgsm refused the frame")
        return bytes(self._pcm)

    def encode_all(self, pcm: np.ndarray) -> bytes:
        """Every whole frame of int16 `pcm`, concatenated."""
        n = len(pcm) // FRAME_SAMPLES
        raw = np.ascontiguousarray(pcm[: n * FRAME_SAMPLES], dtype=np.int16).tobytes()
        step = FRAME_SAMPLES * 2
        return b"".join(self.encode(raw[i * step : (i + 1) * step]) for i in range(n))

    def decode_all(self, frames: bytes) -> np.ndarray:
        """Every 33-byte frame of `frames`, decoded and concatenated."""
        n = len(frames) // FRAME_BYTES
        out = b"".join(
            self.decode(frames[i * FRAME_BYTES : (i + 1) * FRAME_BYTES]) for i in range(n)
        )
        return np.frombuffer(out, dtype=np.int16)
