"""What the TUI shows, as plain text from a status snapshot: no Textual here.

Every state is spelled out in words (`KEYED`, `Inbound: OFF`), so the screen reads the same
without colour (`NO_COLOR`) and through a terminal that shows none. Widths are fixed so that an
80-column terminal shows every essential field of a link (node, mode, state, keyed) without
cutting it; what does not fit a column (a long list of nodes behind a link) is shortened with a
count of what was left out, and shown in full on the detail line of the highlighted link.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CALL_COLUMNS",
    "LINK_COLUMNS",
    "MENU",
    "bridge_line",
    "call_row",
    "clock",
    "dropped_on_quit",
    "fit",
    "health_cell",
    "health_text",
    "link_detail",
    "link_row",
    "nodes_behind",
    "registration_text",
    "status_line",
    "tx_line",
    "with_health",
]

Snapshot = Mapping[str, Any]

#: Columns a status line may take: 80 less the panel's padding on each side.
LINE_WIDTH = 78

#: (label, width) of the links table; the last column takes what is left of 80 columns.
LINK_COLUMNS: tuple[tuple[str, int], ...] = (
    ("Node", 7),
    ("Mode", 10),
    ("State", 10),
    ("RX", 5),
    ("Last RX", 7),
    ("Up", 8),
    ("Behind", 17),
)
CALL_COLUMNS: tuple[tuple[str, int], ...] = (
    ("Id", 5),
    ("Peer", 12),
    ("Dir", 3),
    ("State", 7),
    ("Codec", 6),
    ("Time", 8),
    ("RX", 5),
    ("Net", 12),
)

#: The menu, two lines of at most 80 columns; the key is the first word of each entry.
MENU: tuple[tuple[tuple[str, str], ...], ...] = (
    (
        ("d", "Dial"),
        ("a", "Answer"),
        ("r", "Reject"),
        ("h", "Hang up"),
        ("c", "Connect"),
        ("m", "Monitor"),
        ("x", "Disconnect"),
    ),
    (
        ("k", "Key…"),
        ("u", "Unkey"),
        ("b", "Bridge…"),
        ("g", "Register"),
        ("G", "Deregister"),
        ("i", "Inbound"),
        ("q", "Quit"),
    ),
)


def clock(seconds: float | None) -> str:
    """A duration as m:ss, h:mm:ss past an hour, or `Nd` past a day; `-` for none."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s >= 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def _on_off(value: object) -> str:
    return "ON" if value else "OFF"


def registration_text(snap: Snapshot) -> str:
    """`registered (iax2) as 203.0.113.5:4569`, `failed: <reason>`, `not configured`, ..."""
    reg = snap.get("registration")
    if not isinstance(reg, Mapping):
        if snap.get("node_id") is None:
            return "not configured"
        return "registered" if snap.get("registered") else "unregistered"
    if reg.get("method") is None and snap.get("node_id") is None:
        return "not configured"
    state = str(reg.get("state") or "unregistered")
    if state == "registered":
        text = f"registered ({reg['method']})" if reg.get("method") else "registered"
        if reg.get("perceived_addr"):
            text += f" as {reg['perceived_addr']}"
        if reg.get("warning"):
            # The whole warning goes to the log; the status line only flags it.
            text = "NAT WARNING · " + text
        return text
    if state == "failed" and reg.get("last_failure"):
        return f"failed: {reg['last_failure']}"
    return state


def fit(text: str, width: int = LINE_WIDTH) -> str:
    """`text`, cut to `width` columns with an ellipsis when longer."""
    return text if len(text) <= width else text[: width - 1] + "…"


def status_line(snap: Snapshot) -> str:
    """`Node 2001 · Inbound: ON · Registration: registered (iax2) as 203.0.113.5:4569`, with
    `· WG: up` before the registration under `[wireguard]` (the long part is the one cut)."""
    node = snap.get("node_id") or "(no node number)"
    hosted = snap.get("hosted") or ()
    # A host of several nodes: which one this screen shows, and that `n` shows the next.
    shown = (
        f"Node {node} ({list(hosted).index(node) + 1}/{len(hosted)}, n: next)"
        if node in hosted
        else f"Node {node}"
    )
    parts = [shown, f"Inbound: {_on_off(snap.get('listening'))}"]
    tunnel = snap.get("tunnel")
    if isinstance(tunnel, Mapping):
        parts.append(f"WG: {tunnel.get('state', '-')}")
    parts.append(f"Registration: {registration_text(snap)}")
    return fit(" · ".join(parts))


def bridge_line(snap: Snapshot) -> str:
    """`Bridge: conference, mix-minus, local radio in · Audio: none`"""
    bridge = snap.get("bridge") or {}
    if not bridge:
        text = "Bridge: -"
    else:
        extras = ["mix-minus" if bridge.get("mix_minus") else "full mix"]
        if bridge.get("mode") == "conference":
            extras.append("local radio in" if bridge.get("include_local_radio") else "radio out")
        text = f"Bridge: {bridge.get('mode', '-')}, {', '.join(extras)}"
    audio = snap.get("audio") or {}
    if audio:
        running = "" if audio.get("running", True) else " (stopped)"
        text += f" · Audio: {audio.get('backend', '-')}{running}"
    return text


def tx_line(snap: Snapshot) -> str:
    """The operator's transmitter: idle with its time-out, or KEYED with what is left of it."""
    tx = snap.get("tx") or {}
    timeout = tx.get("timeout_s")
    if tx.get("keyed"):
        remaining = tx.get("timeout_remaining_s")
        left = f" · time-out in {clock(remaining)}" if remaining is not None else ""
        text = f"TX: KEYED by operator{left} · u unkeys"
    else:
        text = "TX: idle" + (f" (time-out {timeout} s)" if timeout is not None else "")
    rx = [str(link.get("node")) for link in snap.get("links") or () if link.get("keyed")]
    rx += [str(call.get("peer")) for call in snap.get("calls") or () if call.get("keyed")]
    caller = ((snap.get("radio") or {}).get("usrp") or {}).get("caller")
    if caller:
        # A USRP radio's digital caller while they talk.
        tg = caller.get("talkgroup")
        who = caller.get("callsign") or f"id {caller.get('source_id')}"
        rx.insert(0, f"{who} TG {tg}" if tg else str(who))
    if rx:
        prefix = " · RX: "
        text += prefix + nodes_behind(rx, max(2, LINE_WIDTH - len(text) - len(prefix)))
    return text


def nodes_behind(nodes: Sequence[str], width: int) -> str:
    """As many of `nodes` as fit in `width` columns, then `+N` for the rest."""
    if not nodes:
        return "-"
    shown: list[str] = []
    for i, node in enumerate(nodes):
        rest = len(nodes) - i - 1
        candidate = " ".join([*shown, node])
        tail = f" +{rest}" if rest else ""
        if len(candidate) + len(tail) > width:
            break
        shown.append(node)
    if not shown:
        return f"+{len(nodes)}"[:width]
    left = len(nodes) - len(shown)
    return " ".join(shown) + (f" +{left}" if left else "")


def _num(value: object) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def health_text(health: Mapping[str, Any] | None) -> str:
    """A call's or link's network health in words: `RTT 42 ms · in: jitter 3 ms, loss 0.3 %,
    buffer 60 ms · out: jitter 7 ms, loss 1 %` (out: what the far end says it receives)."""
    if not isinstance(health, Mapping):
        return "no figures yet"
    rtt = health.get("rtt_ms")
    parts = [f"RTT {'-' if rtt is None else f'{rtt} ms'}"]
    rx = health.get("rx")
    if isinstance(rx, Mapping):
        parts.append(
            f"in: jitter {_num(rx.get('jitter_ms'))} ms, loss {_num(rx.get('loss_pct'))} %, "
            f"buffer {_num(rx.get('delay_ms'))} ms"
        )
    peer = health.get("peer")
    if isinstance(peer, Mapping):
        parts.append(
            f"out: jitter {_num(peer.get('jitter_ms'))} ms, loss {_num(peer.get('loss_pct'))} %"
        )
    text = " · ".join(parts)
    return f"DEGRADED · {text}" if health.get("degraded") else text


def health_cell(health: Mapping[str, Any] | None) -> str:
    """The calls table's `Net` column: round-trip time and receive loss, `42ms 0.3%`."""
    if not isinstance(health, Mapping):
        return "-"
    rtt = health.get("rtt_ms")
    rx = health.get("rx")
    loss = rx.get("loss_pct") if isinstance(rx, Mapping) else None
    text = f"{'-' if rtt is None else f'{rtt}ms'} {'-' if loss is None else f'{_num(loss)}%'}"
    return fit(text, CALL_COLUMNS[-1][1])


def with_health(
    snap: Snapshot, calls: Sequence[Mapping[str, Any]], links: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """`snap` with the `health` objects of a `health` event in its calls and links."""
    by_call = {h.get("id"): h.get("health") for h in calls}
    by_link = {(h.get("node"), h.get("call")): h.get("health") for h in links}
    return {
        **snap,
        "calls": [
            {**c, "health": by_call[c.get("id")]} if c.get("id") in by_call else c
            for c in snap.get("calls") or ()
        ],
        "links": [
            {**li, "health": by_link[(li.get("node"), li.get("call"))]}
            if (li.get("node"), li.get("call")) in by_link
            else li
            for li in snap.get("links") or ()
        ],
    }


def link_row(link: Mapping[str, Any]) -> tuple[str, ...]:
    keyed = bool(link.get("keyed"))
    if keyed:
        last = "now"
    elif link.get("last_keyed_s") is None:
        last = "never"
    else:
        last = clock(link.get("last_keyed_s"))
    health = link.get("health")
    state = str(link.get("state") or "-")
    if state == "up" and isinstance(health, Mapping) and health.get("degraded"):
        state = "DEGRADED"  # up, but its loss or RTT is over the operator's threshold
    return (
        str(link.get("node", "?")),
        str(link.get("mode") or "-"),
        state,
        "KEYED" if keyed else "-",
        last,
        clock(link.get("connected_s")),
        nodes_behind(list(link.get("nodes") or ()), LINK_COLUMNS[-1][1]),
    )


def link_detail(link: Mapping[str, Any] | None) -> str:
    """Everything else about the highlighted link, on one (wrapping) line."""
    if link is None:
        return "No links. c connects (transceive), m monitors."
    parts = [
        f"{link.get('node')}: {link.get('direction', '-')}",
        str(link.get("addr") or "-"),
        str(link.get("codec") or "no codec yet"),
        f"handshake {link.get('newkey', '-')}",
    ]
    if link.get("permanent"):
        parts.append("permanent")
    if link.get("call") is not None:
        parts.append(health_text(link.get("health")))
    nodes = list(link.get("nodes") or ())
    parts.append("behind: " + (" ".join(nodes) if nodes else "none"))
    return " · ".join(parts)


def call_row(call: Mapping[str, Any]) -> tuple[str, ...]:
    direction = {"inbound": "in", "outbound": "out"}.get(str(call.get("direction")), "-")
    return (
        str(call.get("id", "?")),
        str(call.get("peer") or "-"),
        direction,
        str(call.get("state") or "-"),
        str(call.get("codec") or "-"),
        clock(call.get("duration_s")),
        "KEYED" if call.get("keyed") else "-",
        health_cell(call.get("health")),
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def dropped_on_quit(snap: Snapshot) -> str | None:
    """What stopping the node would drop ("1 link, 2 calls and the key"), or None: nothing."""
    parts = []
    if links := len(snap.get("links") or ()):
        parts.append(_count(links, "link"))
    if calls := len(snap.get("calls") or ()):
        parts.append(_count(calls, "call"))
    if (snap.get("tx") or {}).get("keyed"):
        parts.append("the key")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
