"""node._core tone rendering and the DTMF detector through the binding: CW, tones and DTMF
rendered to PCM, and detection of the project's digits and of sox's."""

from __future__ import annotations

import numpy as np
import pytest

from node._core import (
    CodecError,
    DtmfDetector,
    ToneError,
    cw_pcm,
    dtmf_pcm,
    resample_pcm,
    tone_pcm,
)
from tests.audio import digit_tones, espeak


def pcm(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, dtype=np.int16)


def peak_dbfs(x: np.ndarray) -> float:
    return float(20 * np.log10(np.abs(x.astype(np.float64)).max() / 32767))


@pytest.mark.parametrize("rate", [8000, 16000])
def test_cw_has_paris_timing_and_its_level(rate: int) -> None:
    # "PARIS " is 50 dots; a dot is 1200/wpm ms: 3000 ms at 20 wpm.
    x = pcm(cw_pcm(rate, "PARIS ", 20, 1000.0, -20.0))
    assert len(x) == 3 * rate
    assert peak_dbfs(x) == pytest.approx(-20.0, abs=0.05)
    # Keyed ("E" is one dot: 60 ms at half amplitude) then silent.
    e = pcm(cw_pcm(rate, "E", 20, 800.0, -20.0)).astype(np.float64)
    above = np.flatnonzero(np.abs(e) > 0.5 * np.abs(e).max())
    assert (above[-1] - above[0]) / rate * 1000 == pytest.approx(60, abs=2)


def test_a_tone_lasts_its_duration_between_ramps() -> None:
    x = pcm(tone_pcm(8000, 1000.0, 200, -6.0))
    assert len(x) == 1600 + 40  # the 5 ms ramp-down follows the 200 ms
    assert peak_dbfs(x) == pytest.approx(-6.0, abs=0.05)
    spectrum = np.abs(np.fft.rfft(x[200:1400] * np.hanning(1200)))
    assert np.fft.rfftfreq(1200, 1 / 8000)[spectrum.argmax()] == pytest.approx(1000, abs=7)


@pytest.mark.parametrize("rate", [8000, 16000])
def test_generated_and_sox_digits_are_detected(rate: int) -> None:
    ours = pcm(dtmf_pcm(rate, "0123456789*#ABCD", -10.0, 60, 60))
    detector = DtmfDetector(rate)
    events = detector.process(ours)
    assert [d for kind, d in events if kind == "pressed"] == list("0123456789*#ABCD")
    assert [d for kind, d in events if kind == "released"] == list("0123456789*#ABCD")
    assert detector.current is None and detector.stats()["presses"] == 16

    detector = DtmfDetector(rate)
    theirs = digit_tones(rate, "*32000#", on_ms=50, off_ms=50)
    # Any split of the stream gives the same events.
    got = []
    for start in range(0, len(theirs), 97):
        got += detector.process(theirs[start : start + 97].tobytes())
    assert [d for kind, d in got if kind == "pressed"] == list("*32000#")


def test_speech_is_not_a_digit() -> None:
    detector = DtmfDetector(8000)
    speech = espeak("Seven four three two one. Node two thousand connected. Testing.", 8000)
    assert detector.process(speech.tobytes()) == []
    stats = detector.stats()
    assert stats["hits"] == 0 and stats["windows"] > 100


def test_bad_parameters_are_tone_errors() -> None:
    with pytest.raises(ToneError, match="not a DTMF digit"):
        dtmf_pcm(8000, "12E", -10.0)
    with pytest.raises(ToneError, match="wpm"):
        cw_pcm(8000, "W1AW", 0, 800.0, -20.0)
    with pytest.raises(ToneError, match="level"):
        tone_pcm(8000, 1000.0, 100, 3.0)
    with pytest.raises(ToneError, match="frequency"):
        tone_pcm(8000, 5000.0, 100, -3.0)
    with pytest.raises(ToneError, match="longer than"):
        tone_pcm(8000, 1000.0, 3_600_000, -3.0)
    with pytest.raises(ToneError, match="8000 or 16000"):
        DtmfDetector(48000)
    with pytest.raises(CodecError, match="even byte count"):
        DtmfDetector(8000).process(b"\x00\x01\x02")
    with pytest.raises(CodecError, match="upsampling by"):
        resample_pcm(b"\x00\x00", 22051, 8000)
    with pytest.raises(CodecError, match="outside"):
        resample_pcm(b"\x00\x00", 22050, 1000)


@pytest.mark.parametrize("rate", [8000, 16000])
def test_tts_speech_resampled_to_the_station_rate_keeps_its_spectrum(rate: int) -> None:
    """espeak-ng's 22050 Hz speech through our 160/441 (320/441) converter against sox's."""
    import subprocess

    from tests.conftest import require_tool

    require_tool("espeak-ng")
    wav = subprocess.run(
        ["espeak-ng", "--stdout", "Station identification. Node two thousand."],
        check=True,
        capture_output=True,
    ).stdout
    # espeak-ng writes a 44-byte RIFF header and 16-bit mono at 22050 Hz.
    raw = wav[44:]
    ours = pcm(resample_pcm(raw, 22050, rate))
    theirs = espeak("Station identification. Node two thousand.", rate)
    assert abs(len(ours) - len(theirs)) <= 2
    n = min(len(ours), len(theirs))
    a, b = ours[:n].astype(np.float64), theirs[:n].astype(np.float64)
    # The same audio: the difference is far below the signal (both filters are transparent in
    # the passband; what differs is the transition band, near the output's Nyquist).
    residual_db = 10 * np.log10(np.sum((a - b) ** 2) / np.sum(b**2))
    assert residual_db < -25, residual_db
