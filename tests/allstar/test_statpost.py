"""The status-post core on a fake clock: scheduling, sequence numbers, the link list, keying."""

from __future__ import annotations

import pytest

from node.allstar.statpost import (
    LINK_CHANGE_DELAY,
    KeyStats,
    StatPoster,
    StatReport,
    link_list,
)

URL = "http://127.0.0.1:9/uhandler"


def test_first_post_at_once_then_every_interval_and_soon_after_a_link_change() -> None:
    poster = StatPoster(URL, 60, "1.0", now=100.0)
    report = StatReport(node="2000")
    assert poster.next_deadline() == 100.0
    out = poster.timer(100.0, 1e9, report)
    assert len(out.urls) == 1 and out.deadline == 160.0
    assert poster.timer(159.9, 1e9, report).urls == ()
    assert poster.links_changed(120.0).deadline == pytest.approx(120.0 + LINK_CHANGE_DELAY)
    out = poster.timer(120.2, 1e9, report)
    assert "seqno=2&nodes=" in out.urls[0] and out.deadline == pytest.approx(180.2)
    # A link change never postpones a post that is due sooner.
    assert poster.links_changed(180.1).deadline == pytest.approx(180.2)


def test_key_posts_share_the_sequence_and_leave_the_schedule_alone() -> None:
    poster = StatPoster(URL, 60, "1.0", now=0.0)
    poster.timer(0.0, 1e9, StatReport(node="2000"))
    out = poster.key_changed(1e9 + 5, StatReport(node="2000", keyed=True, key_changed_s=0.2))
    assert out.urls == (f"{URL}?node=2000&time=1000000005&seqno=2&keyed=1&keytime=0",)
    assert out.deadline == 60.0
    assert poster.skipped(30.0).deadline == 90.0


def test_link_list_letters_follow_app_rpt() -> None:
    links = [
        {"node": "2001", "mode": "transceive", "state": "up"},
        {"node": "2002", "mode": "monitor", "state": "up"},
        {"node": "2003", "mode": "connecting", "state": "connecting"},
        {"node": "2004", "mode": "transceive", "state": "retrying"},
    ]
    assert link_list(links) == ("T2001", "R2002", "C2003", "C2004")
    assert link_list([]) == ()


def test_key_stats_count_keyups_tx_time_and_time_outs() -> None:
    stats = KeyStats()
    report = stats.report("2000", (), now=10.0, uptime_s=10.0)
    assert (report.keyed, report.key_changed_s, report.keyups, report.tx_s) == (False, None, 0, 0)
    stats.keyed(10.0)
    stats.keyed(11.0)  # already keyed: not a second key-up
    report = stats.report("2000", (), now=12.5, uptime_s=12.5)
    assert report.keyed and report.keyups == 1
    assert report.key_changed_s == 2.5 and report.tx_s == 2.5
    stats.unkeyed(14.0)
    stats.unkeyed(15.0)  # not keyed: nothing changes
    stats.timeouts += 1
    report = stats.report("2000", ("T2001",), now=20.0, uptime_s=20.0)
    assert not report.keyed and report.key_changed_s == 6.0 and report.tx_s == 4.0
    assert report.timeouts == 1 and report.links == ("T2001",)
    poster = StatPoster(URL, 60, "1.0", now=0.0)
    assert poster.link_post(1e9, report).endswith(
        "&nodes=T2001&apprptvers=1.0&apprptuptime=20&totalkerchunks=0&totalkeyups=1"
        "&totaltxtime=4&timeouts=1&totalexecdcommands=0&keyed=0&keytime=6"
    )


def test_reports_are_validated() -> None:
    with pytest.raises(ValueError):
        StatReport(node="")
    with pytest.raises(ValueError):
        StatReport(node="2000", keyups=-1)


def test_odd_link_names_are_escaped_not_spliced_into_the_query() -> None:
    poster = StatPoster(URL, 60, "1.0", now=0.0)
    url = poster.link_post(1e9, StatReport(node="2000", links=("TW1AW web&x=1",)))
    assert "&nodes=TW1AW%20web%26x%3D1&" in url
