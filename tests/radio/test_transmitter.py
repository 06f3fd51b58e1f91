"""The transmitter's timing with a stepped clock: keying on demand, the hang time, the TX
time-out and its hold-off (node.radio.transmitter), and the carrier's on-delay
(node.radio.squelch)."""

from __future__ import annotations

from node.radio.squelch import Squelch
from node.radio.transmitter import PttChange, Transmitter


def test_keys_on_audio_and_releases_one_hang_time_after_it_stops() -> None:
    tx = Transmitter(hang_s=1.5, timeout_s=180)
    assert tx.demand(True, 10.0) == PttChange(True)
    assert tx.next_deadline() == 190.0  # the TX time-out, nothing else yet
    assert tx.demand(False, 12.0) is None  # the hang time starts
    assert tx.next_deadline() == 13.5
    assert tx.timer(13.4) is None and tx.keyed
    assert tx.timer(13.5) == PttChange(False, "hang time (1500 ms) over")
    assert not tx.keyed and tx.next_deadline() is None


def test_audio_within_the_hang_time_keeps_one_transmission() -> None:
    tx = Transmitter(hang_s=1.0, timeout_s=180)
    tx.demand(True, 0.0)
    tx.demand(False, 1.0)
    assert tx.demand(True, 1.9) is None  # still keyed: no second key-up
    assert tx.next_deadline() == 180.0
    tx.demand(False, 3.0)
    assert tx.timer(3.9) is None
    assert tx.timer(4.0) is not None


def test_no_hang_time_releases_with_the_audio() -> None:
    tx = Transmitter(hang_s=0, timeout_s=180)
    tx.demand(True, 0.0)
    assert tx.demand(False, 2.0) == PttChange(False, "the conference went quiet")


def test_the_tx_time_out_cuts_and_holds_off_until_the_audio_stops() -> None:
    tx = Transmitter(hang_s=0.5, timeout_s=60)
    tx.demand(True, 0.0)
    assert tx.timeout_remaining(20.0) == 40.0
    cut = tx.timer(60.0)
    assert cut == PttChange(False, "TX time-out after 60 s", timed_out=True)
    assert tx.timed_out and tx.next_deadline() is None
    # The stuck source talks on: its next spurts do not key again.
    tx.demand(False, 61.0)
    assert not tx.timed_out  # the audio stopped: the next transmission may key
    assert tx.demand(True, 61.2) == PttChange(True)


def test_a_time_out_in_the_hang_time_does_not_hold_off() -> None:
    tx = Transmitter(hang_s=5.0, timeout_s=10)
    tx.demand(True, 0.0)
    tx.demand(False, 8.0)
    assert tx.timer(10.0) == PttChange(False, "TX time-out after 10 s", timed_out=True)
    assert not tx.timed_out
    assert tx.demand(True, 10.5) == PttChange(True)


def test_release_is_for_shutdown_only_when_keyed() -> None:
    tx = Transmitter(hang_s=1.0, timeout_s=10)
    assert tx.release("node shutting down") is None
    tx.demand(True, 0.0)
    assert tx.release("node shutting down") == PttChange(False, "node shutting down")


def test_the_squelch_opens_after_the_on_delay_and_closes_with_the_carrier() -> None:
    sq = Squelch(on_delay_s=0.2)
    assert sq.carrier(True, 1.0) is None and sq.next_deadline() == 1.2
    assert sq.timer(1.19) is None
    assert sq.timer(1.2) is True and sq.open
    assert sq.carrier(True, 1.5) is None  # no edge, no new deadline
    assert sq.carrier(False, 2.0) is False and not sq.open


def test_a_carrier_shorter_than_the_on_delay_never_opens() -> None:
    sq = Squelch(on_delay_s=0.3)
    sq.carrier(True, 0.0)
    assert sq.carrier(False, 0.1) is None
    assert sq.next_deadline() is None and not sq.open
    assert Squelch(0).carrier(True, 0.0) is True
