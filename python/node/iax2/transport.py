"""The asyncio side of the Rust engine: wakeup descriptor, batched drain, send.

This and `media/bridge.py` are the only modules that touch `node._core.Engine`. The engine thread
parses every datagram; this class registers the engine's wakeup descriptor with the event loop and,
when it becomes readable, hands the whole batch of full frames to one callback, and the batch of
engine events to another. The events' classes are named here too (from `node._core`), so the
router and the services that take them need not import the native module.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from node._core import (
    ActivityChanged,
    CommandFailed,
    ControlPlayed,
    DtmfDecoded,
    Engine,
    EngineEvent,
    FullFrame,
    FullVoiceNeeded,
    LocalTxChanged,
    MiniBeforeFull,
    PlayFinished,
    PlayStarted,
    RxKeyed,
    SpurtEnded,
    StationEvent,
    TunnelChanged,
    UsrpCarrierChanged,
    UsrpDtmfReceived,
    UsrpMetaReceived,
    UsrpPeerChanged,
    VoxChanged,
    WireGuard,
)
from node.errors import EngineError
from node.wireguard import TunnelSettings, decode_key

__all__ = [
    "ActivityChanged",
    "Address",
    "CommandFailed",
    "ControlPlayed",
    "DtmfDecoded",
    "EngineEvent",
    "EngineEvents",
    "EngineTransport",
    "FrameBatch",
    "FullVoiceNeeded",
    "LocalTxChanged",
    "MiniBeforeFull",
    "PlayFinished",
    "PlayStarted",
    "RxKeyed",
    "SpurtEnded",
    "StationEvent",
    "TunnelChanged",
    "UsrpCarrierChanged",
    "UsrpDtmfReceived",
    "UsrpMetaReceived",
    "UsrpPeerChanged",
    "VoxChanged",
]

log = logging.getLogger(__name__)

Address = tuple[str, int]
FrameBatch = list[tuple[Address, FullFrame]]
#: Engine events as drained: one frozen record per kind (see `node._core`'s engine events).
EngineEvents = list[EngineEvent]


class EngineTransport:
    """Owns one running engine and feeds its drained batches to `on_frames`."""

    def __init__(
        self,
        bind: str,
        on_frames: Callable[[FrameBatch], None],
        on_events: Callable[[EngineEvents], None] | None = None,
        rate: int = 8000,
        mix_minus: bool = True,
        legs: int = 64,
        tunnel: TunnelSettings | None = None,
        concealment: str = "pitch",
        jitter_target_extra_ms: int | None = None,
        jitter_max_ms: int | None = None,
        stations: int = 1,
    ) -> None:
        """`legs` is the most legs the node carries (calls and links): the engine sizes the
        socket buffers for that many. With `tunnel` every datagram goes through that WireGuard
        tunnel, and `local_addr` is our address inside it. The `jitter_*` values size every
        leg's jitter buffer (None: chan_iax2's defaults). `stations` is one conference per node
        the process hosts."""
        try:
            wireguard = None if tunnel is None else _wireguard(tunnel)
            self._engine = Engine(
                bind,
                rate=rate,
                mix_minus=mix_minus,
                queue_limit=queue_limit(legs),
                legs=legs,
                wireguard=wireguard,
                concealment=concealment,
                jitter_target_extra_ms=jitter_target_extra_ms,
                jitter_max_ms=jitter_max_ms,
                stations=stations,
            )
        except OSError as exc:
            # The engine reports the address it tried; the message is safe to show.
            raise EngineError(str(exc)) from exc
        self._on_frames = on_frames
        self._on_events = on_events
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def local_addr(self) -> Address:
        return self._engine.local_addr

    @property
    def engine(self) -> Engine:
        """The engine itself, for `media/bridge.py` (the other thin wrapper)."""
        return self._engine

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        loop.add_reader(self._engine.wakeup_fd(), self._readable)

    def _readable(self) -> None:
        # Frames first, then events: both queues share the one wakeup byte.
        batch = self._engine.drain()
        events = self._engine.drain_events()
        if batch:
            try:
                self._on_frames(batch)
            except Exception:
                # One bad batch must not unregister the reader and leave the node deaf.
                log.exception("error while handling %d received frames", len(batch))
        if events and self._on_events is not None:
            try:
                self._on_events(events)
            except Exception:
                log.exception("error while handling %d engine events", len(events))

    def send(self, frame: FullFrame, addr: Address) -> None:
        self.send_bytes(frame.to_bytes(), addr)

    def send_bytes(self, data: bytes, addr: Address) -> None:
        try:
            self._engine.send_to(data, addr)
        except OSError as exc:
            # UDP send failures (unreachable host, full buffer) are the network's, not ours:
            # retransmission timers cover the loss. Log without the payload.
            log.warning("send to %s:%d failed: %s", addr[0], addr[1], exc)

    def counters(self) -> dict[str, int]:
        return self._engine.counters()

    def leg_jitter_stats(self, callno: int) -> dict[str, int] | None:
        """One media leg's jitter-buffer figures (None without a leg)."""
        return self._engine.leg_jitter_stats(callno)

    def jitter_stats(self) -> list[tuple[int, dict[str, int]]]:
        """Every media leg's jitter-buffer figures, by call number."""
        return self._engine.jitter_stats()

    def tunnel(self) -> dict[str, Any] | None:
        """The WireGuard tunnel's figures (`Engine.tunnel`), None on plain UDP."""
        return self._engine.tunnel()

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._engine.wakeup_fd())
            self._loop = None
        self._engine.stop()


def queue_limit(legs: int) -> int:
    """How many full frames (and, apart, engine events) may wait for Python. A talk spurt that
    starts asks for one full voice frame per listening leg at once, and a set-up burst brings a
    few frames per call: the queue holds several per leg, and never fewer than 4,096."""
    return max(4096, 8 * legs)


def _wireguard(t: TunnelSettings) -> WireGuard:
    """The engine's tunnel settings; the keys leave their `Secret`s only here."""
    preshared = None if t.preshared_key is None else decode_key(t.preshared_key.reveal())
    try:
        return WireGuard(
            decode_key(t.private_key.reveal()),
            t.peer_public_key,
            t.address_text,
            t.listen,
            t.endpoint,
            list(t.allowed_ips),
            persistent_keepalive=t.persistent_keepalive,
            preshared_key=preshared,
        )
    except ValueError as exc:
        # The binding's messages name the setting, never a key.
        raise EngineError(f"WireGuard settings: {exc}") from None
