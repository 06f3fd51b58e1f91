"""`node serve`: one asyncio loop hosting the engine transport, the controller and uvicorn.

uvicorn is run as a `Server` whose signal capture is disabled: the daemon owns SIGINT and
SIGTERM itself, because uvicorn re-raises the captured signal after `serve()` returns and the
process would then die before it hangs up calls and unkeys the transmitter.

SIGHUP re-reads the config file and the peers file and applies what can change without a restart
(`node.reload`); it is ignored from the first line of `run` so that a reload sent while the node
is still starting cannot kill it (SIGHUP's default action). Under systemd `Type=notify` the
daemon reports readiness, reloads and shutdown (`node.sdnotify`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from node import __version__
from node.allstar.http_registration import HttpRegistration
from node.allstar.runner import HttpRegistrationRunner, StatPostRunner
from node.allstar.statpost import StatPoster
from node.config import Address, NodeConfig, load_config, write_template
from node.control.ami import AmiServer
from node.control.app import create_app
from node.controller import Controller
from node.errors import CommandError, ConfigError, EngineError
from node.events import EventBus
from node.iax2.transport import EngineTransport
from node.media.bridge import MediaBridge, Topology
from node.sdnotify import Notifier
from node.secrets import RedactingFilter, SecretStore

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_RUNTIME", "load_or_create", "reload", "run"]

log = logging.getLogger("node")

EXIT_OK = 0
#: A configuration error (sysexits.h EX_CONFIG).
EXIT_CONFIG = ConfigError.EXIT_CODE
#: The node could not start or failed at run time (a port in use, an engine failure).
EXIT_RUNTIME = 1

#: Seconds uvicorn waits for open requests at shutdown before cancelling them.
GRACEFUL_SHUTDOWN_SECONDS = 2


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling (the daemon owns the signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29 calls this instead
        pass


def _configure_logging() -> logging.Handler:
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
    """The HTTP registration (`[register] method = "http"`) and status posts (`[statpost]`)."""
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


async def _serve(config: NodeConfig, secrets: SecretStore, notifier: Notifier) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    bus = EventBus()
    controller = Controller(config, bus, secrets)

    topology = Topology(
        config.bridge.mode, config.bridge.mix_minus, config.bridge.include_local_radio
    )
    try:
        transport = EngineTransport(
            str(config.listener.bind),
            controller.on_frames,
            controller.on_engine_events,
            rate=config.station_rate,
            mix_minus=topology.effective_mix_minus,
        )
    except EngineError as exc:
        log.error("cannot open the IAX2 socket (listener.bind = %s): %s", config.listener.bind, exc)
        return EXIT_RUNTIME
    try:
        ctl_sock = _control_socket(config.control.bind)
    except OSError as exc:
        transport.close()
        log.error(
            "cannot open the control channel (control.bind = %s): %s", config.control.bind, exc
        )
        return EXIT_RUNTIME

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
    )
    try:
        bridge.start_audio()
    except CommandError as exc:
        transport.close()
        ctl_sock.close()
        log.error("cannot start audio ([audio] backend = %s): %s", config.audio.backend, exc)
        return EXIT_RUNTIME
    transport.start(loop)
    ami: AmiServer | None = None
    if config.ami.enabled:
        ami = AmiServer(controller, secrets)
        try:
            await ami.start()
        except OSError as exc:
            bridge.close()
            transport.close()
            ctl_sock.close()
            log.error("cannot open the AMI port (ami.bind = %s): %s", config.ami.bind, exc)
            return EXIT_RUNTIME
        if secrets.ami_secret() is None:
            log.warning(
                "AMI has no password yet: every login fails until POST /secrets with username "
                "ami:%s",
                config.ami.username,
            )
    http_registration, statpost = _http_services(
        config, secrets, controller, transport.local_addr[1]
    )
    controller.attach(
        transport, bridge, stop.set, http_registration=http_registration, statpost=statpost
    )
    controller.start()
    if statpost is not None:
        statpost.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    path = config.path if config.path is not None else Path("node.toml")

    def on_sighup() -> None:
        notifier.reloading()
        try:
            outcome = reload(path, controller)
        except Exception:
            # Whatever went wrong, the manager must hear READY again or it waits forever.
            log.exception("reload failed unexpectedly; the node runs on")
            outcome = "reload failed (see the log)"
        notifier.ready(outcome)

    loop.add_signal_handler(signal.SIGHUP, on_sighup)

    server = _Server(
        uvicorn.Config(
            create_app(controller),
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
    )
    http = asyncio.create_task(server.serve(sockets=[ctl_sock]))
    host, port = transport.local_addr
    log.info(
        "IAX2 listening on %s:%d (UDP); control channel on http://%s",
        host,
        port,
        config.control.bind,
    )
    notifier.ready(f"IAX2 on {host}:{port}, control channel on {config.control.bind}")

    waiter = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({http, waiter}, return_when=asyncio.FIRST_COMPLETED)
    code = EXIT_OK
    if http in done and not stop.is_set():
        log.error("the control channel stopped unexpectedly")
        code = EXIT_RUNTIME
    log.info("shutting down")
    notifier.stopping()
    if ami is not None:
        await ami.close()
    # The HTTP services stop first, so that nothing they report follows the final event.
    for service in (http_registration, statpost):
        if service is not None:
            await service.aclose()
    controller.close()
    server.should_exit = True
    with contextlib.suppress(asyncio.CancelledError):
        await http
    waiter.cancel()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.remove_signal_handler(sig)
    # Back to ignoring a reload: removing the handler restored SIGHUP's fatal default.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    transport.close()
    ctl_sock.close()
    log.info("stopped")
    return code


def run(config_path: str | Path) -> int:
    """Run the daemon until SIGINT, SIGTERM or POST /shutdown; return the exit status."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    handler = _configure_logging()
    notifier = Notifier.from_environ()
    path = Path(config_path)
    try:
        config = load_or_create(path)
        secrets = SecretStore(config)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return EXIT_CONFIG
    handler.addFilter(RedactingFilter(secrets))
    return asyncio.run(_serve(config, secrets, notifier))
