"""EchoLink QSOs: opening with resends, keep-alive, time-out, BYE, and who may call us."""

from __future__ import annotations

from node.echolink import packets as p
from node.echolink import station as s
from node.echolink.directory import StationList, StationListed

SVX = StationListed("SV1AAA-L", "Athens", "ON", "111111", "10.0.0.2")
OTHER = StationListed("W1XYZ", "Boston", "ON", "7", "10.0.0.3")


def machine(**policy: object) -> s.Stations:
    listed = StationList((SVX, OTHER))
    return s.Stations(
        "N0CALL-L",
        "Test",
        policy=s.Policy(**policy),  # type: ignore[arg-type]
        directory=lambda: listed,
        welcome=("Welcome",),
    )


def sends(out: s.StationOutput) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for a in out.actions:
        if isinstance(a, s.SendControl):
            rows.append(("control", p.parse_control(a.data)))
        elif isinstance(a, s.SendText):
            rows.append(("text", p.parse_text(a.data)))
        else:
            rows.append((type(a).__name__, a.leg))
    return rows


def test_link_numbers() -> None:
    assert s.link_node("123456") == "3123456"
    assert s.link_node("7") == "3000007"
    assert s.node_of_link("3000007") == "7"
    assert s.node_of_link("2000") is None and s.node_of_link("4123456") is None


def test_outbound_resends_then_connects_and_keeps_alive() -> None:
    m = machine()
    out = m.connect("SV1AAA-L", "111111", SVX.ip, 0.0)
    assert sends(out) == [("control", p.Sdes("N0CALL-L", "Test"))]
    assert m.next_deadline() == s.OPEN_RESEND
    assert sends(m.timer(s.OPEN_RESEND)) == [("control", p.Sdes("N0CALL-L", "Test"))]
    assert m.next_deadline() == 2 * s.OPEN_RESEND
    out = m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 2.0)
    assert sends(out) == [("AddLeg", s.LEG_BASE)]
    assert out.events == (s.StationConnected("SV1AAA-L", "3111111", SVX.ip, True),)
    station = m.stations[SVX.ip]
    assert station.up and station.name == "Svx"
    assert m.next_deadline() == 2.0 + s.KEEPALIVE
    assert sends(m.timer(2.0 + s.KEEPALIVE)) == [("control", p.Sdes("N0CALL-L", "Test"))]


def test_unanswered_opening_gives_up_with_a_bye() -> None:
    m = machine()
    m.connect("SV1AAA-L", "111111", SVX.ip, 0.0)
    resends = 0
    while (t := m.next_deadline()) is not None and t < s.OPEN_TIMEOUT:
        resends += len(m.timer(t).actions)
    assert resends == int(s.OPEN_TIMEOUT / s.OPEN_RESEND) - (s.OPEN_TIMEOUT % s.OPEN_RESEND == 0)
    out = m.timer(s.OPEN_TIMEOUT)
    assert sends(out) == [("control", p.Bye("jan2002"))]
    assert out.events[0] == s.StationDisconnected(
        "SV1AAA-L", "3111111", SVX.ip, "unanswered", False
    )
    assert not m.stations


def test_inbound_listed_station_is_taken_and_welcomed() -> None:
    m = machine()
    out = m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 0.0)
    assert sends(out) == [
        ("control", p.Sdes("N0CALL-L", "Test")),
        ("AddLeg", s.LEG_BASE),
        ("text", p.Info(("Welcome",))),
    ]
    assert out.events == (s.StationConnected("SV1AAA-L", "3111111", SVX.ip, False),)
    # The second station gets the next leg id.
    m.control(p.build_sdes("W1XYZ", ""), OTHER.ip, 0.0)
    assert m.stations[OTHER.ip].leg == s.LEG_BASE + 1


def test_silent_station_times_out_and_bye_closes() -> None:
    m = machine()
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 0.0)
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 30.0)  # keeps it
    out = m.timer(30.0 + s.SILENCE_TIMEOUT)
    assert ("RemoveLeg", s.LEG_BASE) in sends(out)
    assert out.events[-1].reason == "timeout"  # type: ignore[attr-defined]
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 100.0)
    out = m.control(p.build_bye(), SVX.ip, 101.0)
    assert sends(out) == [("RemoveLeg", s.LEG_BASE)]
    assert out.events[0].reason == "bye"  # type: ignore[attr-defined]


def test_disconnect_all_says_bye_to_each() -> None:
    m = machine()
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 0.0)
    m.control(p.build_sdes("W1XYZ", ""), OTHER.ip, 0.0)
    out = m.disconnect_all(1.0)
    byes = [a.ip for a in out.actions if isinstance(a, s.SendControl)]
    assert byes == [SVX.ip, OTHER.ip] and len(out.events) == 2 and not m.stations


def test_local_disconnect_sends_one_bye() -> None:
    m = machine()
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 0.0)
    out = m.disconnect(SVX.ip, 1.0)
    assert sends(out) == [("control", p.Bye("jan2002")), ("RemoveLeg", s.LEG_BASE)]
    assert m.next_deadline() is None


def test_refused_as_chan_echolink_refuses() -> None:
    m = machine()
    # Listed, but at another address: refused, remembered, no answer yet.
    out = m.control(p.build_sdes("SV1AAA-L", "Svx"), "10.9.9.9", 0.0)
    assert out.actions == ()
    assert out.events == (
        s.StationRefused("SV1AAA-L", "10.9.9.9", "not in the directory at this address"),
    )
    # Asking again too soon: still nothing; after AUTH_RETRY: the BYEs.
    assert m.control(p.build_sdes("SV1AAA-L", "Svx"), "10.9.9.9", 1.0).actions == ()
    out = m.control(p.build_sdes("SV1AAA-L", "Svx"), "10.9.9.9", s.AUTH_RETRY)
    assert sends(out) == [("control", p.Bye("UN-AUTHORIZED"))] * s.REFUSAL_COPIES
    assert not m.stations and m.counters.refused == 1


def test_allow_deny_and_max_stations() -> None:
    m = machine(allow=("SV*",), deny=())
    refused = m.control(p.build_sdes("W1XYZ", ""), OTHER.ip, 0.0).events
    assert refused == (s.StationRefused("W1XYZ", OTHER.ip, "denied"),)
    m = machine(deny=("sv1aaa-*",))
    assert m.control(p.build_sdes("SV1AAA-L", ""), SVX.ip, 0.0).events[0].reason == "denied"  # type: ignore[attr-defined]
    m = machine(max_stations=1)
    m.control(p.build_sdes("SV1AAA-L", ""), SVX.ip, 0.0)
    assert m.control(p.build_sdes("W1XYZ", ""), OTHER.ip, 0.0).events[0].reason == "full"  # type: ignore[attr-defined]


def test_text_in_and_out_and_malformed_counted() -> None:
    m = machine()
    m.control(p.build_sdes("SV1AAA-L", "Svx"), SVX.ip, 0.0)
    out = m.text(p.build_chat("SV1AAA-L", "hi"), SVX.ip, 1.0)
    assert out.events == (s.TextReceived("SV1AAA-L", "3111111", "hi"),)
    assert sends(m.send_text(SVX.ip, "back")) == [("text", p.Chat("N0CALL-L", "back"))]
    m.text(b"junk", SVX.ip, 1.0)
    info = m.text(p.build_info(["SvxLink", "QTH"]), SVX.ip, 1.0)
    assert info.events == (s.InfoReceived("SV1AAA-L", "3111111", ("SvxLink", "QTH")),)
    m.text(p.build_chat("X", "y"), "10.1.1.1", 1.0)
    m.control(b"\x00\x01", SVX.ip, 1.0)
    c = m.counters
    assert (c.text_bad, c.unknown, c.control_bad) == (1, 1, 1)
