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
from node.iax2.transport import EngineTransport
from node.media.bridge import MediaBridge, Topology
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
            reg.url, reg.node_id, secrets.node_secret(), iax_port, reg.refresh, now
        )
        registration = HttpRegistrationRunner(core, controller.on_registration_events)
    statpost = None
    if config.statpost is not None:
        poster = StatPoster(config.statpost.url, config.statpost.interval_secs, __version__, now)
        statpost = StatPostRunner(poster, controller.stat_report)
    return registration, statpost


def reload(path: Path, controller: Controller) -> str:
    """Re-read the config and peers files and apply what can change; a one-line outcome.

    A file that does not load changes nothing: the error is logged and the node goes on with
    its running configuration. Keys that changed but need a restart are logged one by one.
    """
    log.info("SIGHUP: reloading %s", path)
    try:
        loaded = load_config(path)
        done = controller.reload(loaded)
    except ConfigError as exc:
        log.error("reload failed, nothing changed (the node runs on as before): %s", exc)
        return "reload failed, running on the previous configuration (see the log)"
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
    log.info("%s", outcome)
    return outcome


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
        self.controller = Controller(config, self.bus, secrets)
        self._transport: EngineTransport | None = None
        self._ctl_sock: socket.socket | None = None
        self._server: _Server | None = None
        self._http: asyncio.Task[None] | None = None
        self._services: tuple[HttpRegistrationRunner | None, StatPostRunner | None] = (None, None)
        self._ami: AmiServer | None = None
        self._token_client: httpx.AsyncClient | None = None
        self._radio: Radio | None = None

    async def start(self) -> None:
        """Open the radio (its PTT released), the IAX2 socket, the control socket and audio, then
        start serving. Raises StartError (having released what it opened) when any of them
        fails."""
        config = self.config
        # The radio first: a node killed while keyed (SIGKILL, a power cut of the host but not of
        # the interface) left its PTT keyed, and opening releases it, before any lookup or
        # socket that could wait or fail.
        try:
            radio = Radio.open(config.radio, config.keying.tx_timeout_secs, usrp=config.usrp)
        except RadioError as exc:
            raise StartError(f"cannot open the radio ([radio]): {exc}") from None
        self._radio = radio
        try:
            await self._open(radio)
        except BaseException:
            radio.close()
            self._radio = None
            raise

    async def _open(self, radio: Radio) -> None:
        """`start` after the radio: the sockets, audio, the services, the control channel."""
        config, controller = self.config, self.controller
        topology = Topology(
            config.bridge.mode, config.bridge.mix_minus, config.bridge.include_local_radio
        )
        tunnel = await _tunnel(config, self.secrets)
        try:
            transport = EngineTransport(
                str(config.listener.bind),
                controller.on_frames,
                controller.on_engine_events,
                rate=config.station_rate,
                mix_minus=topology.effective_mix_minus,
                # Inbound calls, plus the links and outbound calls the node places itself.
                legs=config.listener.max_calls + len(config.links) + 16,
                tunnel=tunnel,
                concealment=config.bridge.concealment,
                jitter_target_extra_ms=config.bridge.jitter_target_extra_ms,
                jitter_max_ms=config.bridge.jitter_max_ms,
            )
            bridge = config.bridge
            transport.engine.set_normalize(
                bridge.normalize, bridge.loudness_target, bridge.normalize_max_gain_db
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
        audio = config.audio
        bridge = MediaBridge(
            transport.engine,
            topology,
            audio.backend,
            audio.input,
            audio.output,
            device_rate=audio.device_rate,
            rx_gain_db=audio.rx_gain_db,
            tx_gain_db=audio.tx_gain_db,
            rx_delay_ms=config.radio.rx_audio_delay_ms,
            vox=radio.vox,
            gated=radio.gated,
            parrot=config.parrot,
            usrp=config.usrp,
        )
        try:
            bridge.start_audio()
        except CommandError as exc:
            transport.close()
            ctl_sock.close()
            raise StartError(
                f"cannot start audio ([audio] backend = {config.audio.backend}): {exc}"
            ) from None
        if isinstance(radio.ptt, UsrpPtt):
            radio.ptt.attach(bridge.usrp_port)
        if config.ami.enabled:
            from node.control.ami import AmiServer  # only a node with AMI loads it

            ami = AmiServer(controller, self.secrets)
            try:
                await ami.start()
            except OSError as exc:
                bridge.close()
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
        http_registration, statpost = _http_services(
            config, self.secrets, controller, transport.local_addr[1]
        )
        self._services = (http_registration, statpost)
        tokens = None
        portal_secret = self.secrets.portal_secret()
        if config.portal is not None and portal_secret is not None:
            from node.allstar.portal import PortalTokens
            from node.allstar.runner import make_client

            self._token_client = make_client()
            tokens = PortalTokens(
                config.portal.url, config.portal.user, portal_secret, self._token_client
            )
        controller.attach(
            transport,
            bridge,
            self.stop.set,
            http_registration=http_registration,
            statpost=statpost,
            tokens=tokens,
            radio=radio,
        )
        controller.start()
        if statpost is not None:
            statpost.start()
        app = create_app(controller)
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

    def reload(self) -> None:
        """SIGHUP: re-read the config and peers files (`reload`), telling the service manager."""
        self.notifier.reloading()
        path = self.config.path if self.config.path is not None else Path("node.toml")
        try:
            outcome = reload(path, self.controller)
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
        if self._radio is not None:
            # The transmitter before anything that could fail or hang.
            self._radio.close()
        self.notifier.stopping()
        if self._ami is not None:
            await self._ami.close()
        # The HTTP services stop first, so that nothing they report follows the final event.
        for service in self._services:
            if service is not None:
                await service.aclose()
        if self._token_client is not None:
            await self._token_client.aclose()
        # The transmitter is already released: with the engine still running, the links end
        # as the far ends expect (at most a couple of seconds), then everything else at once.
        try:
            await self.controller.wind_down()
        except Exception:
            # Never in the way of the rest of the shutdown: `close` hangs up what is left.
            log.exception("ending the links politely failed")
        self.controller.close()
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
