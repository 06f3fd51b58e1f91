"""The status page in a real browser against a real `node serve`: a live call, registration
changes, a restart of the node.

How fast the page shows an event is measured against an SSE client of the test reading the same
stream on loopback: the client notes the wall-clock time (`time.time()`) each event arrives; an
observer injected into the page (`StatusPage.watch`, a MutationObserver) notes the wall-clock time
(`performance.timeOrigin + performance.now()`) at which the DOM first showed the change. Both
clocks are the host's realtime clock, so the difference is the page's lag behind a plain client:
the browser's own receipt of the event plus its handler and render. It can be negative when the
browser read the event first.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

from tests.interop.harness import EventWatcher, free_udp_port, running_node
from tests.interop.registrar import Registrar
from tests.interop.softphone import Softphone
from tests.node_process import NodeProcess, free_port, write_config
from tests.page.browser import StatusPage, expect

PASSWORD = "canary-page-registrar-pass-3f1d"
#: The page must show an event this soon after a plain SSE client received it.
LAG_LIMIT_MS = 100.0


def lag_ms(view: StatusPage, mark: str, sse: EventWatcher, event: dict[str, Any]) -> float:
    return view.mark(mark) - sse.arrival(event) * 1000


def assert_prompt(lags: dict[str, float]) -> None:
    """Print the page's lag per change and hold each to `LAG_LIMIT_MS`."""
    shown = {what: round(lag, 1) for what, lag in lags.items()}
    print("page lag behind an SSE client (ms):", shown)
    for what, lag in lags.items():
        assert lag < LAG_LIMIT_MS, f"the page showed '{what}' {lag:.1f} ms late"


def test_page_shows_a_live_call_and_registration_changes_at_once(
    browser: Any, tmp_path: Path
) -> None:
    with Registrar({"1999": PASSWORD}) as registrar:
        host, port = registrar.addr
        sections = (
            f'[register]\npeer = "{host}:{port}"\nnode_id = "1999"\n\n'
            '[secrets]\nsource = "control"\n'
        )
        with running_node(tmp_path, "page", listener='auth = "off"', sections=sections) as node:
            sse = EventWatcher(node)
            view = StatusPage(browser, node.base_url).open()
            try:
                loc = view.page.locator
                expect(loc("#conn")).to_have_text("Live")
                expect(loc("#node-id")).to_have_text("1999")
                expect(loc("#reg")).to_have_text("Not registered (IAX2)")
                lags: dict[str, float] = {}

                # A wrong secret: the registrar refuses, the page says so with the reason.
                view.watch("register_failed", "#reg", "Registration failed (IAX2)")
                start = len(sse.events)
                r = node.post("/secrets", json={"username": "1999", "secret": "not-the-password"})
                assert r.status_code == 200
                failed = sse.wait_for(lambda e: e["event"] == "register_failed", since=start)
                lags["register_failed"] = lag_ms(view, "register_failed", sse, failed)
                assert failed["reason"]
                expect(loc("#reg-failure")).to_have_text(failed["reason"])
                expect(loc('#events li[data-event="register_failed"]').first).to_have_text(
                    re.compile(re.escape(f"Registration failed: {failed['reason']}") + "$")
                )

                # The right one: registered.
                # The registrar saw us at our IAX2 socket's address.
                seen = f"127.0.0.1:{node.udp_addr[1]}"
                view.watch("registered", "#reg", f"Registered (IAX2), seen as {seen}")
                start = len(sse.events)
                r = node.post("/secrets", json={"username": "1999", "secret": PASSWORD})
                assert r.status_code == 200
                registered = sse.wait_for(lambda e: e["event"] == "registered", since=start)
                lags["registered"] = lag_ms(view, "registered", sse, registered)

                # A call arrives, is answered, and leaves.
                call_row = '#conn-rows tr[data-kind="call"]'
                view.watch("call appears", call_row)
                start = len(sse.events)
                with Softphone(name="caller") as phone:
                    callno = phone.dial(node.udp_addr, "1999", calling_number="2000")
                    first = sse.wait_for(
                        lambda e: e["event"] == "snapshot" and bool(e["calls"]), since=start
                    )
                    lags["call appears"] = lag_ms(view, "call appears", sse, first)
                    assert phone.wait_for(lambda p: p.answered(callno))
                    row = loc(call_row)
                    # The node, then its health line (RTT, jitter, loss).
                    expect(row.locator("th")).to_have_text(re.compile(r"^2000RTT "))
                    expect(row.locator("td")).to_have_text(
                        ["—", re.compile(r"00:00:\d\d"), "IN", "Established", "Call", "µ-law", "—"]
                    )
                    expect(loc('#events li[data-event="incoming_call"]')).to_have_text(
                        re.compile(r"Incoming call from 2000$")
                    )
                    view.screenshots("page-live")

                    view.watch("call leaves", call_row, absent=True)
                    start = len(sse.events)
                    phone.hangup(callno)
                    gone = sse.wait_for(
                        lambda e: e["event"] == "snapshot" and not e["calls"], since=start
                    )
                    lags["call leaves"] = lag_ms(view, "call leaves", sse, gone)
                expect(loc('#events li[data-event="hangup"]')).to_have_text(
                    re.compile(r"Call ended: hung up by peer")
                )
                expect(loc("#no-conns")).to_be_visible()
                assert_prompt(lags)
                view.assert_read_only_and_local()
            finally:
                view.close()


def test_page_recovers_when_the_node_restarts(browser: Any, tmp_path: Path) -> None:
    udp, http = free_udp_port(), free_port()
    first = NodeProcess(write_config(tmp_path / "a.toml", udp_port=udp, http_port=http), udp, http)
    second: NodeProcess | None = None
    view: StatusPage | None = None
    try:
        first.wait_ready()
        # By name, as through an SSH port forward (the guard accepts localhost on its own port).
        url = f"http://localhost:{http}"
        view = StatusPage(browser, url).open()
        loc = view.page.locator
        expect(loc("#conn")).to_have_text("Live")
        expect(loc("#bridge")).to_have_text("Bridge, mix-minus")
        expect(loc("#tx")).to_have_text("Idle")

        view.watch("down", "#conn", "disconnected — reconnecting…")
        first.signal(signal.SIGTERM)
        assert first.wait() == 0
        view.mark("down")
        expect(loc('#events li[data-event="shutdown"]')).to_have_text(
            re.compile(r"Node shutting down$")
        )
        expect(loc("#tx")).to_have_text("Transmit state unknown")
        expect(loc("main")).to_have_class(re.compile(r"\bstale\b"))

        # A node on the same ports, with something to tell it apart from the first.
        bridge = '[bridge]\nmode = "conference"\n'
        config = write_config(tmp_path / "b.toml", udp_port=udp, http_port=http, extra=bridge)
        second = NodeProcess(config, udp, http)
        second.wait_ready()
        expect(loc("#conn")).to_have_text("Live")
        expect(loc("#bridge")).to_have_text("Conference, mix-minus")
        expect(loc("#tx")).to_have_text("Idle")
        expect(loc("main")).not_to_have_class(re.compile(r"\bstale\b"))
        # The same document carried on (its event list survived): it was not reloaded.
        expect(loc('#events li[data-event="shutdown"]')).to_have_count(1)
        assert [u for _, u in view.requests if u == url + "/"] == [url + "/"]
        # Attempts while the node was down fail with connection refused; nothing else may.
        view.errors = [e for e in view.errors if "ERR_CONNECTION_REFUSED" not in e]
        view.assert_read_only_and_local()
    finally:
        if view is not None:
            view.close()
        for node in (first, second):
            if node is not None:
                node.kill()


def test_page_shows_a_real_link_appearing_keying_and_leaving(browser: Any, tmp_path: Path) -> None:
    def sections(node_id: str) -> str:
        return f'[register]\npeer = "127.0.0.1:9"\nnode_id = "{node_id}"\n\n[links]\ndns = false\n'

    def env(node_id: str) -> dict[str, str]:
        return {"NET_NODE": node_id, "NET_SECRET": "not-used-here"}

    with (
        running_node(
            tmp_path, "a", listener='auth = "off"', sections=sections("1999"), env=env("1999")
        ) as a,
        running_node(
            tmp_path, "b", listener='auth = "off"', sections=sections("1998"), env=env("1998")
        ) as b,
    ):
        sse = EventWatcher(a)
        view = StatusPage(browser, a.base_url).open()
        try:
            loc = view.page.locator
            expect(loc("#conn")).to_have_text("Live")
            link_row = '#conn-rows tr[data-kind="link"]'
            lags: dict[str, float] = {}

            # Node A links to node B: the row appears (connecting, then established).
            view.watch("link appears", link_row)
            start = len(sse.events)
            addr = f"127.0.0.1:{b.udp_addr[1]}"
            r = a.post("/link", json={"action": "connect", "node": "1998", "addr": addr})
            assert r.status_code == 200, r.text
            first = sse.wait_for(
                lambda e: e["event"] == "snapshot" and bool(e["links"]), since=start
            )
            lags["link appears"] = lag_ms(view, "link appears", sse, first)
            row = loc(link_row)
            expect(row.locator("th")).to_have_text(re.compile(r"^1998RTT "))
            expect(row.locator("td").nth(3)).to_have_text("Established")
            expect(row.locator("td").nth(4)).to_have_text("Transceive")

            # B's operator keys: A's link keys, and A's page says so.
            view.watch("link keyed", "#tx", "Transmit - Network Source")
            start = len(sse.events)
            assert b.post("/key", json={}).status_code == 200
            keyed = sse.wait_for(
                lambda e: e["event"] == "link" and e["kind"] == "keyed" and e.get("keyed"),
                since=start,
            )
            lags["link keyed"] = lag_ms(view, "link keyed", sse, keyed)
            expect(row.locator("td").first).to_have_text("Keyed now")
            view.screenshots("page-live-link")
            view.watch("link unkeyed", "#tx", "Idle")
            start = len(sse.events)
            assert b.post("/unkey", json={}).status_code == 200
            unkeyed = sse.wait_for(
                lambda e: e["event"] == "link" and e["kind"] == "keyed" and not e.get("keyed"),
                since=start,
            )
            lags["link unkeyed"] = lag_ms(view, "link unkeyed", sse, unkeyed)

            # A disconnects: the row leaves.
            view.watch("link leaves", link_row, absent=True)
            start = len(sse.events)
            assert a.post("/link", json={"action": "disconnect", "node": "1998"}).status_code == 200
            gone = sse.wait_for(lambda e: e["event"] == "snapshot" and not e["links"], since=start)
            lags["link leaves"] = lag_ms(view, "link leaves", sse, gone)
            expect(loc('#events li[data-event="link"]').first).to_have_text(
                re.compile(r"Link 1998 disconnected: disconnected by operator$")
            )
            assert_prompt(lags)
            view.assert_read_only_and_local()
        finally:
            view.close()
