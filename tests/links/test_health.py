"""Link health thresholds (`node.links.health`): degraded at once, recovered only after the
figures stayed well inside the limits for a while; the clock is a float the test steps."""

from __future__ import annotations

from node.links.health import (
    MIN_WINDOW_FRAMES,
    RECOVER_HOLD,
    RECOVER_RATIO,
    HealthChanged,
    HealthWatch,
    Sample,
    Thresholds,
)

LIMITS = Thresholds(loss_pct=5.0, rtt_ms=500)
NODE, CALL = "2000", 7
STEP = 5.0  # the controller checks every 5 s


class Feed:
    """One link's cumulative counters, advanced window by window as a check would see them."""

    def __init__(self, watch: HealthWatch) -> None:
        self.watch = watch
        self.now = 100.0
        self.rx_lost = self.rx_frames = 0
        self.rtt: int | None = 40

    def window(
        self, *, lost: int = 0, frames: int = 250, rtt: int | None = None
    ) -> HealthChanged | None:
        """One check after a window of `frames` received and `lost` lost (rtt: a new sample)."""
        self.now += STEP
        self.rx_lost += lost
        self.rx_frames += frames
        if rtt is not None:
            self.rtt = rtt
        sample = Sample(rtt_ms=self.rtt, rx_lost=self.rx_lost, rx_frames=self.rx_frames)
        return self.watch.check(NODE, CALL, sample, LIMITS, self.now)


def test_a_healthy_link_reports_nothing() -> None:
    feed = Feed(HealthWatch())
    assert [feed.window(lost=2) for _ in range(10)] == [None] * 10  # 0.8 %
    assert not feed.watch.degraded(NODE)


def test_loss_over_the_threshold_degrades_at_once_and_recovers_after_the_hold() -> None:
    feed = Feed(HealthWatch())
    assert feed.window() is None  # the first check only starts the window
    event = feed.window(lost=25, frames=225)  # 10 % of this window
    assert event is not None and event.degraded
    assert (event.node, event.callno, event.loss_pct, event.rtt_ms) == (NODE, CALL, 10.0, 40)
    assert event.thresholds == LIMITS and "loss 10 %" in event.reason
    assert feed.watch.degraded(NODE)
    # Back under the threshold but not under its recovery level (70 % of 5 % = 3.5 %): still
    # degraded, however long it lasts. This is what keeps a link on the edge from flapping.
    assert [feed.window(lost=10, frames=240) for _ in range(6)] == [None] * 6  # 4 %
    # Clean windows: recovered once RECOVER_HOLD seconds of them have passed, not before.
    clean_checks = int(RECOVER_HOLD // STEP)
    assert [feed.window() for _ in range(clean_checks)] == [None] * clean_checks
    event = feed.window()
    assert event is not None and not event.degraded and event.loss_pct == 0.0
    assert not feed.watch.degraded(NODE)


def test_a_bad_window_during_the_hold_restarts_it() -> None:
    feed = Feed(HealthWatch())
    feed.window()
    assert feed.window(lost=50, frames=200) is not None
    assert feed.window() is None and feed.window() is None
    assert feed.window(lost=10, frames=240) is None  # 4 %: over the recovery level
    results = [feed.window() for _ in range(int(RECOVER_HOLD // STEP) + 1)]
    assert results[:-1] == [None] * (len(results) - 1)
    assert results[-1] is not None and not results[-1].degraded


def test_rtt_over_the_threshold_degrades_and_recovers_under_its_level() -> None:
    feed = Feed(HealthWatch())
    event = feed.window(rtt=650)
    assert event is not None and event.degraded and event.rtt_ms == 650
    assert "RTT 650 ms" in event.reason
    # 400 ms is under 500 but not under 350 (70 %): no recovery.
    assert [feed.window(rtt=400) for _ in range(5)] == [None] * 5
    assert RECOVER_RATIO * LIMITS.rtt_ms == 350
    assert [feed.window(rtt=120) for _ in range(3)] == [None] * 3
    event = feed.window()
    assert event is not None and not event.degraded and event.rtt_ms == 120


def test_a_silent_link_keeps_its_last_loss_figure() -> None:
    """app_rpt sends no audio while unkeyed: a window without frames says nothing, so a link
    degraded by loss does not recover by falling silent."""
    feed = Feed(HealthWatch())
    feed.window()
    assert feed.window(lost=30, frames=220) is not None
    silent = [feed.window(frames=0) for _ in range(10)]
    assert silent == [None] * 10 and feed.watch.degraded(NODE)
    # A few frames are not a window either: they add up until there are enough.
    assert feed.window(frames=MIN_WINDOW_FRAMES - 1) is None
    assert feed.watch.degraded(NODE)


def test_the_peers_loss_counts_as_well() -> None:
    watch = HealthWatch()
    now = 10.0
    limits = Thresholds(loss_pct=2.0, rtt_ms=0)  # RTT check off

    def check(peer_lost: int, peer_packets: int, rtt: int) -> HealthChanged | None:
        sample = Sample(rtt_ms=rtt, peer_lost=peer_lost, peer_packets=peer_packets)
        return watch.check(NODE, CALL, sample, limits, now)

    assert check(0, 100, 5000) is None  # an RTT of 5 s is not judged with the check off
    now += STEP
    event = check(30, 370, 5000)  # 30 lost of 300 sent in this window: 10 %
    assert event is not None and event.degraded and event.loss_pct == 10.0


def test_a_new_call_to_the_same_node_starts_afresh() -> None:
    watch = HealthWatch()
    limits = LIMITS
    assert watch.check(NODE, CALL, Sample(rtt_ms=900), limits, 1.0) is not None
    assert watch.degraded(NODE)
    # The link dropped and came back on another call: its old state and counters are gone.
    assert watch.check(NODE, CALL + 1, Sample(rtt_ms=50, rx_frames=10), limits, 6.0) is None
    assert not watch.degraded(NODE)
    watch.forget(set())
    assert not watch.degraded(NODE)


def test_zero_thresholds_turn_the_checks_off() -> None:
    watch = HealthWatch()
    off = Thresholds(loss_pct=0, rtt_ms=0)
    watch.check(NODE, CALL, Sample(rtt_ms=9000), off, 1.0)
    assert watch.check(NODE, CALL, Sample(rtt_ms=9000, rx_lost=200, rx_frames=10), off, 6.0) is None
