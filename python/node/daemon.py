"""`node serve`: one asyncio loop hosting the engine transport, the controller and uvicorn.

uvicorn is run as a `Server` whose signal capture is disabled: the daemon owns SIGINT and
SIGTERM itself, because uvicorn re-raises the captured signal after `serve()` returns and the
process would then die before it hangs up calls and unkeys the transmitter.

SIGHUP re-reads the config file and the peers file and applies what can change without a restart
(`node.reload`); it is ignored from the first line of `run` so that a reload sent while the node
is still starting cannot kill it (SIGHUP's default action). Under systemd `Type=notify` the
daemon reports readiness, reloads and shutdown (`node.sdnotify`).

`RunningNode` is the node itself, in the running loop: `node serve` waits on it, `node tui`
(`node.tui.run`) puts its menu on top of the same controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn

from node import __version__
from node.config import Address, NodeConfig, load_config, write_template
from node.control.app import create_app
from node.control.limits import MAX_HEAD_BYTES, bounded_protocol
from node.controller import Controller
from node.errors import CommandError, ConfigError, EngineError, RadioError, StartError
from node.events import EventBus
from node.host import Host
from node.iax2.transport import EngineTransport
from node.media.bridge import MediaBridge, Topology
from node.media.station import LocalLinks, station_engine
from node.radio.radio import Radio
from node.radio.usrp import UsrpPtt
from node.sdnotify import Notifier
from node.secrets import RedactingFilter, SecretStore
from node.wireguard import TunnelSettings, encode_key, tunnel_settings

if TYPE_CHECKING:
    # Loaded at run time only when the configuration uses them (docs/performance.md, "Idle").
    import httpx

    from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
    from node.control.ami import AmiServer

__all__ = [
    "EXIT_CONFIG",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "RunningNode",
    "configure_logging",
    "load_node",
    "load_or_create",
    "reload",
    "run",
]

log = logging.getLogger("node")

EXIT_OK = 0
#: A configuration error (sysexits.h EX_CONFIG).
EXIT_CONFIG = ConfigError.EXIT_CODE
#: The node could not start or failed at run time (a port in use, an engine failure).
EXIT_RUNTIME = 1

#: Kernel send buffer of each control connection, in bytes (Linux doubles it for bookkeeping).
CONTROL_SNDBUF = 64 * 1024

#: SO_LINGER on, zero seconds: close() resets the connection.
_LINGER_RESET = struct.pack("ii", 1, 0)

#: Seconds uvicorn waits for open requests at shutdown before cancelling them.
GRACEFUL_SHUTDOWN_SECONDS = 2


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling (the daemon owns the signals), and without its
    ten wake-ups a second: its main loop wakes once a second (the resolution of the `Date`
    header it refreshes) and at once when told to exit (`request_exit`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29 calls this instead
        pass

    def request_exit(self) -> None:
        self.should_exit = True
        self._exit.set()

    async def main_loop(self) -> None:
        # uvicorn's own loop sleeps 0.1 s at a time and counts tenths of a second: `on_tick`
        # refreshes the Date header when the count is a multiple of ten.
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._exit.wait(), 1.0)
            should_exit = await self.on_tick(counter)


def configure_logging() -> logging.Handler:
    """Log to stderr (journald adds the time); returns the handler, for its filters."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler


def _control_socket(bind: Address) -> socket.socket:
    """Bind the control socket ourselves so a port in use is a clear error, not a sys.exit."""
    host, port = bind.host, bind.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. It caps what the kernel holds for an event-stream
    # client that stopped reading (autotuning would let it grow to megabytes first), so such a
    # client fills its bounded queue and is dropped after a few hundred kilobytes, not after
    # thousands of events.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CONTROL_SNDBUF)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    sock.setblocking(False)
    return sock


def load_or_create(path: Path) -> NodeConfig:
    """Load the config; if the file is missing, write the commented template first."""
    if not path.exists():
        try:
            write_template(path)
        except OSError as exc:
            # A read-only /etc (systemd's ProtectSystem=strict) must end in exit 78, which the
            # unit does not restart, not in a traceback and a restart loop.
            raise ConfigError(
                str(path),
                None,
                f"does not exist, and the commented template cannot be written there "
                f"({exc.strerror}); create the file, or let the node write to its directory",
            ) from None
        log.info(
            "no config at %s: wrote a commented template there; running on its safe defaults", path
        )
    return load_config(path)


def _http_services(
    config: NodeConfig, secrets: SecretStore, controller: Controller, iax_port: int
) -> tuple[HttpRegistrationRunner | None, StatPostRunner | None]:
    """The HTTP registration (`[register] method = "http"`) and status posts (`[statpost]`).

    Their modules (and httpx) are imported here, only when the configuration asks for them."""
    if not ((config.register is not None and config.register.method == "http") or config.statpost):
        return None, None
    from node.allstar.http_registration import HttpRegistration
    from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
    from node.allstar.statpost import StatPoster

    now = controller.now()
    registration = None
    reg = config.register
    if reg is not None and reg.method == "http":
        core = HttpRegistration(
            reg.url, reg.node_id, secrets.node_secret(reg.node_id), iax_port, reg.refresh, now
        )
        registration = HttpRegistrationRunner(core, controller.on_registration_events)
    statpost = None
    if config.statpost is not None:
        poster = StatPoster(config.statpost.url, config.statpost.interval_secs, __version__, now)
        statpost = StatPostRunner(poster, controller.stat_report)
    return registration, statpost


def reload(path: Path, host: Host | Controller) -> str:
    """Re-read the config and peers files and apply what can change; a one-line outcome.

    A file that does not load changes nothing: the error is logged and the node goes on with
    its running configuration. Keys that changed but need a restart are logged one by one. With
    several nodes, a fault inside one further node's table (`[nodes.<number>]`) keeps that node
    on its running configuration and reloads the others; a node added or removed needs a
    restart.
    """
    log.info("SIGHUP: reloading %s", path)
    controllers = tuple(host) if isinstance(host, Host) else (host,)
    kept: list[str] = []
    try:
        loaded = _load_for_reload(path, kept)
    except ConfigError as exc:
        log.error("reload failed, nothing changed (the node runs on as before): %s", exc)
        return "reload failed, running on the previous configuration (see the log)"
    by_number = {n.node_id: n for n in loaded.hosted}
    outcomes: list[str] = []
    for i, controller in enumerate(controllers):
        number = controller.node_id
        node = loaded if i == 0 else by_number.get(number)
        if node is None:
            if number not in kept:
                log.warning(
                    "reload: node %s is gone from %s; it runs on until a restart", number, path
                )
            continue
        try:
            done = controller.reload(node)
        except ConfigError as exc:
            if len(controllers) == 1:
                log.error("reload failed, nothing changed (the node runs on as before): %s", exc)
                return "reload failed, running on the previous configuration (see the log)"
            log.error("reload of node %s failed, it runs on as before: %s", number, exc)
            outcomes.append(f"node {number}: reload failed")
            continue
        for key in done.plan.needs_restart:
            log.warning(
                "reload: %s changed in %s but needs a restart; the running value stays until then",
                key,
                path,
            )
        applied = ", ".join(done.plan.applied) or "no reloadable setting changed"
        outcome = f"reloaded: {applied}; peer secrets {done.peers.describe()}"
        if done.plan.needs_restart:
            outcome += f"; needs a restart: {', '.join(done.plan.needs_restart)}"
        outcomes.append(outcome if len(controllers) == 1 else f"node {number} {outcome}")
    running = {c.node_id for c in controllers}
    for number in by_number.keys() - running:
        log.warning("reload: node %s is new in %s; it starts with the next restart", number, path)
    for number in kept:
        outcomes.append(f"node {number} kept its running configuration (its table has an error)")
    outcome = "; ".join(outcomes)
    log.info("%s", outcome)
    return outcome


def _load_for_reload(path: Path, kept: list[str]) -> NodeConfig:
    """The file as a reload reads it: a fault inside a further node's table leaves that node
    out (named in `kept`, logged) rather than failing the whole reload."""
    excluded: set[str] = set()
    while True:
        try:
            return load_config(path, exclude=frozenset(excluded))
        except ConfigError as exc:
            number = _faulty_node(exc)
            if number is None or number in excluded:
                raise
            log.error("reload: node %s keeps its running configuration: %s", number, exc)
            excluded.add(number)
            kept.append(number)


def _faulty_node(exc: ConfigError) -> str | None:
    """The further node whose table a configuration fault is in, if any."""
    key = exc.key or ""
    parts = key.split(".")
    return parts[1] if len(parts) >= 3 and parts[0] == "nodes" else None


#: What to suggest when a port is taken: most often another node on the same configuration.
PORT_IN_USE_HINT = (
    "is a node (`node serve` or `node tui`) already running with this configuration? "
    "Stop it first: `node tui` runs the node itself, in its own process"
)


async def _tunnel(config: NodeConfig, secrets: SecretStore) -> TunnelSettings | None:
    """`[wireguard]` ready for the engine, its endpoint's name resolved (once, at start)."""
    wg = config.wireguard
    if wg is None:
        return None
    endpoint = None
    if wg.endpoint is not None:
        host, port = wg.endpoint.as_tuple()
        want = socket.AF_INET6 if ":" in config.listener.bind.host else socket.AF_INET
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        except OSError as exc:
            raise StartError(
                f"cannot resolve the WireGuard peer (wireguard.endpoint = {wg.endpoint}): {exc}"
            ) from None
        addrs = [info[4] for info in infos if info[0] == want]
        if not addrs:
            family = "IPv6" if want == socket.AF_INET6 else "IPv4"
            raise StartError(
                f"the WireGuard peer (wireguard.endpoint = {wg.endpoint}) has no {family} "
                f"address, and the tunnel's socket binds {config.listener.bind.host}"
            )
        ip, port = addrs[0][0], addrs[0][1]
        endpoint = f"[{ip}]:{port}" if want == socket.AF_INET6 else f"{ip}:{port}"
    return tunnel_settings(config, secrets, endpoint)


def _bind_error(what: str, key: str, value: object, exc: BaseException) -> StartError:
    text = f"cannot open {what} ({key} = {value}): {exc}"
    if (isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE) or "in use" in str(exc):
        text += f"; {PORT_IN_USE_HINT}"
    return StartError(text)


class RunningNode:
    """One node in this asyncio loop: the engine transport, the controller, the HTTP services
    and the control channel. `node serve` waits on it; `node tui` puts its menu on top of the
    same controller.

    `start()` opens everything or nothing; `stop` is the trigger (signals, `POST /shutdown`, the
    TUI's quit); `wait()` returns the exit status once it fires; `close()` hangs up, unkeys and
    releases the sockets.
    """

    def __init__(
        self, config: NodeConfig, secrets: SecretStore, notifier: Notifier | None = None
    ) -> None:
        self.config = config
        self.secrets = secrets
        self.notifier = notifier if notifier is not None else Notifier(None)
        self.stop = asyncio.Event()
        self.bus = EventBus()
        #: Every node of the process (`[nodes.<number>]`), each with its own router and bus;
        #: the first is `controller`, the front door of everything that names no node.
        self.host = Host(config, secrets, buses=[self.bus, *(EventBus() for _ in config.nodes)])
        self.controller = self.host.first
        self._transport: EngineTransport | None = None
        self._ctl_sock: socket.socket | None = None
        self._server: _Server | None = None
        self._http: asyncio.Task[None] | None = None
        self._services: list[HttpRegistrationRunner | StatPostRunner] = []
        self._ami: AmiServer | None = None
        self._token_client: httpx.AsyncClient | None = None
        #: Each node's radio (None: a further node whose radio did not open runs without).
        self._radios: list[Radio | None] = []
        self._bridges: list[MediaBridge] = []

    async def start(self) -> None:
        """Open the radio (its PTT released), the IAX2 socket, the control socket and audio, then
        start serving. Raises StartError (having released what it opened) when any of them
        fails."""
        # The radios first: a node killed while keyed (SIGKILL, a power cut of the host but not
        # of the interface) left its PTT keyed, and opening releases it, before any lookup or
        # socket that could wait or fail. A further node whose radio fails runs without it.
        for i, node in enumerate(self.config.hosted):
            try:
                radio = Radio.open(node.radio, node.keying.tx_timeout_secs, usrp=node.usrp)
            except RadioError as exc:
                if i == 0:
                    self._close_radios()
                    raise StartError(f"cannot open the radio ([radio]): {exc}") from None
                log.error(
                    "node %s: cannot open its radio ([nodes.%s.radio]): %s; it runs without",
                    node.node_id,
                    node.node_id,
                    exc,
                )
                radio = None
            self._radios.append(radio)
        try:
            await self._open()
        except BaseException:
            self._close_radios()
            raise

    def _close_radios(self) -> None:
        """Release every node's PTT (first thing at shutdown, and after a failed start)."""
        for radio in self._radios:
            if radio is not None:
                radio.close()
        self._radios = []

    async def _open(self) -> None:
        """`start` after the radios: the sockets, audio, the services, the control channel."""
        config, controller, host = self.config, self.controller, self.host
        radio = self._radios[0]
        assert radio is not None, "the first node's radio opened"
        topology = Topology(
            config.bridge.mode, config.bridge.mix_minus, config.bridge.include_local_radio
        )
        tunnel = await _tunnel(config, self.secrets)
        try:
            transport = EngineTransport(
                str(config.listener.bind),
                host.on_frames,
                host.on_engine_events,
                rate=config.station_rate,
                mix_minus=topology.effective_mix_minus,
                # Inbound calls, plus the links and outbound calls the nodes place themselves.
                legs=config.listener.max_calls + sum(len(n.links) + 16 for n in config.hosted),
                tunnel=tunnel,
                concealment=config.bridge.concealment,
                jitter_target_extra_ms=config.bridge.jitter_target_extra_ms,
                jitter_max_ms=config.bridge.jitter_max_ms,
                stations=len(host),
            )
        except EngineError as exc:
            if tunnel is not None:
                raise _bind_error(
                    "the WireGuard socket", "wireguard.listen_port", tunnel.listen, exc
                ) from None
            raise _bind_error(
                "the IAX2 socket", "listener.bind", config.listener.bind, exc
            ) from None
        try:
            ctl_sock = _control_socket(config.control.bind)
        except OSError as exc:
            transport.close()
            raise _bind_error(
                "the control channel", "control.bind", config.control.bind, exc
            ) from None
        local_links = LocalLinks(transport.engine) if len(host) > 1 else None
        for i, node in enumerate(config.hosted):
            try:
                self._bridges.append(self._bridge(transport, i, node, self._radios[i], local_links))
            except CommandError as exc:
                if i == 0:
                    for bridge in self._bridges:
                        bridge.close()
                    transport.close()
                    ctl_sock.close()
                    raise StartError(
                        f"cannot start audio ([audio] backend = {config.audio.backend}): {exc}"
                    ) from None
                # Another node's sound card must not take this one down: it runs without.
                log.error(
                    "node %s: cannot start audio ([nodes.%s.audio] backend = %s): %s; it runs "
                    "without its radio",
                    node.node_id,
                    node.node_id,
                    node.audio.backend,
                    exc,
                )
                self._bridges.append(
                    self._bridge(transport, i, node, None, local_links, audio=False)
                )
        bridge = self._bridges[0]
        if config.ami.enabled:
            from node.control.ami import AmiServer  # only a node with AMI loads it

            ami = AmiServer(controller, self.secrets, nodes=host.controllers)
            try:
                await ami.start()
            except OSError as exc:
                for each in self._bridges:
                    each.close()
                transport.close()
                ctl_sock.close()
                raise _bind_error("the AMI port", "ami.bind", config.ami.bind, exc) from None
            self._ami = ami
            if self.secrets.ami_secret() is None:
                log.warning(
                    "AMI has no password yet: every login fails until POST /secrets with "
                    "username ami:%s",
                    config.ami.username,
                )
        self._transport, self._ctl_sock = transport, ctl_sock
        transport.start(asyncio.get_running_loop())
        tokens = None
        portal_secret = self.secrets.portal_secret()
        if config.portal is not None and portal_secret is not None:
            from node.allstar.portal import PortalTokens
            from node.allstar.runner import make_client

            self._token_client = make_client()
            tokens = PortalTokens(
                config.portal.url, config.portal.user, portal_secret, self._token_client
            )
        for i, node_controller in enumerate(host):
            node = node_controller.config
            http_registration, statpost = _http_services(
                node, self.secrets, node_controller, transport.local_addr[1]
            )
            self._services.extend(s for s in (http_registration, statpost) if s is not None)
            node_controller.attach(
                transport,
                self._bridges[i],
                self.stop.set,
                http_registration=http_registration,
                statpost=statpost,
                tokens=tokens,
                radio=self._radios[i],
            )
        for node_controller in host:
            node_controller.start()
            if node_controller.statpost is not None:
                node_controller.statpost.start()
        host.drain()
        app = create_app(controller, host=host)
        app.state.drop_client = self._drop_client
        self._server = _Server(
            uvicorn.Config(
                app,
                log_config=None,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                # The bounds of docs/control-api.md "Limits": a deadline on each request head,
                # a cap on the head's size, on idle keep-alive and on connections at once.
                http=bounded_protocol(config.control.request_timeout),
                h11_max_incomplete_event_size=MAX_HEAD_BYTES,
                timeout_keep_alive=config.control.idle_timeout,  # type: ignore[arg-type]
                limit_concurrency=config.control.max_connections,
            )
        )
        self._http = asyncio.create_task(self._server.serve(sockets=[ctl_sock]))
        host, port = transport.local_addr
        stats = transport.tunnel()
        if stats is not None:
            log.info(
                "WireGuard: UDP %s, peer endpoint %s, our public key %s",
                stats["listen"],
                stats["endpoint"] or "(learnt when the peer makes contact)",
                encode_key(stats["public_key"]),
            )
        log.info(
            "IAX2 listening on %s:%d (%s); control channel on http://%s",
            host,
            port,
            "inside the WireGuard tunnel" if stats is not None else "UDP",
            config.control.bind,
        )
        self.notifier.ready(f"IAX2 on {host}:{port}, control channel on {config.control.bind}")

    def _bridge(
        self,
        transport: EngineTransport,
        station: int,
        node: NodeConfig,
        radio: Radio | None,
        local_links: LocalLinks | None,
        *,
        audio: bool = True,
    ) -> MediaBridge:
        """Node `station`'s media bridge over its station of the engine, its audio started
        (CommandError when it cannot start); `audio` False: none (a node whose audio failed)."""
        topology = Topology(
            node.bridge.mode, node.bridge.mix_minus, node.bridge.include_local_radio
        )
        a = node.audio
        bridge = MediaBridge(
            station_engine(transport.engine, station),
            topology,
            a.backend if audio else "none",
            a.input,
            a.output,
            device_rate=a.device_rate,
            rx_gain_db=a.rx_gain_db,
            tx_gain_db=a.tx_gain_db,
            rx_delay_ms=node.radio.rx_audio_delay_ms,
            vox=radio.vox if radio is not None else None,
            gated=radio.gated if radio is not None else False,
            parrot=node.parrot,
            usrp=node.usrp,
            station=station,
            local_links=local_links,
        )
        try:
            bridge.start_audio()
        except BaseException:
            bridge.close()
            raise
        if radio is not None and isinstance(radio.ptt, UsrpPtt):
            radio.ptt.attach(bridge.usrp_port)
        return bridge

    def reload(self) -> None:
        """SIGHUP: re-read the config and peers files (`reload`), telling the service manager."""
        self.notifier.reloading()
        path = self.config.path if self.config.path is not None else Path("node.toml")
        try:
            outcome = reload(path, self.host)
        except Exception:
            # Whatever went wrong, the manager must hear READY again or it waits forever.
            log.exception("reload failed unexpectedly; the node runs on")
            outcome = "reload failed (see the log)"
        self.notifier.ready(outcome)

    def _drop_client(self, client: tuple[str, int]) -> None:
        """Cut the connection of the HTTP client at `client` (host, port) at once.

        For an event-stream client that stopped reading: uvicorn's own close would wait for its
        full send buffer to drain, which a stalled peer never lets happen.
        """
        server = self._server
        if server is None:
            return
        for conn in list(server.server_state.connections):
            if getattr(conn, "client", None) == client:
                sock = conn.transport.get_extra_info("socket")
                if sock is not None:
                    # A reset, not a FIN queued behind the unsent data: the kernel frees the
                    # connection's buffers now instead of probing the closed window for minutes.
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                conn.transport.abort()

    async def wait(self) -> int:
        """Run until `stop` fires (or the control channel dies); the exit status."""
        assert self._http is not None, "start() first"
        waiter = asyncio.create_task(self.stop.wait())
        done, _ = await asyncio.wait({self._http, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._http in done and not self.stop.is_set():
            log.error("the control channel stopped unexpectedly")
            return EXIT_RUNTIME
        return EXIT_OK

    async def close(self) -> None:
        """Hang up, unkey, end the event streams, stop the control channel, close the socket."""
        log.info("shutting down")
        self.stop.set()
        # Every transmitter before anything that could fail or hang.
        self._close_radios()
        self.notifier.stopping()
        if self._ami is not None:
            await self._ami.close()
        # The HTTP services stop first, so that nothing they report follows the final event.
        for service in self._services:
            await service.aclose()
        if self._token_client is not None:
            await self._token_client.aclose()
        # The transmitter is already released: with the engine still running, the links end
        # as the far ends expect (at most a couple of seconds), then everything else at once.
        try:
            await asyncio.gather(*(c.wind_down() for c in self.host))
        except Exception:
            # Never in the way of the rest of the shutdown: `close` hangs up what is left.
            log.exception("ending the links politely failed")
        for node_controller in self.host:
            try:
                node_controller.close()
            except Exception:
                log.exception("closing node %s failed", node_controller.node_id)
        if self._server is not None:
            self._server.request_exit()
        if self._http is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._http
        if self._transport is not None:
            self._transport.close()
        if self._ctl_sock is not None:
            self._ctl_sock.close()
        log.info("stopped")


async def _serve(config: NodeConfig, secrets: SecretStore, notifier: Notifier) -> int:
    loop = asyncio.get_running_loop()
    node = RunningNode(config, secrets, notifier)
    try:
        await node.start()
    except StartError as exc:
        log.error("%s", exc)
        return EXIT_RUNTIME
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, node.stop.set)
    loop.add_signal_handler(signal.SIGHUP, node.reload)
    try:
        code = await node.wait()
    finally:
        # Also after an exception out of the loop's own code: the PTT is released on the way.
        await node.close()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.remove_signal_handler(sig)
    # Back to ignoring a reload: removing the handler restored SIGHUP's fatal default.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return code


def load_node(path: Path, handler: logging.Handler) -> tuple[NodeConfig, SecretStore] | None:
    """The configuration (writing the template first if it is missing) and the secrets, with
    `handler` redacting those secrets from then on; None (logged) on a configuration error."""
    try:
        config = load_or_create(path)
        secrets = SecretStore(config.secret_settings)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return None
    handler.addFilter(RedactingFilter(secrets))
    return config, secrets


def run(config_path: str | Path) -> int:
    """Run the daemon until SIGINT, SIGTERM or POST /shutdown; return the exit status."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    handler = configure_logging()
    notifier = Notifier.from_environ()
    loaded = load_node(Path(config_path), handler)
    if loaded is None:
        return EXIT_CONFIG
    return asyncio.run(_serve(*loaded, notifier))
