"""`node serve`: one asyncio loop hosting the engine transport, the controller and uvicorn.

uvicorn is run as a `Server` whose signal capture is disabled: the daemon owns SIGINT and
SIGTERM itself, because uvicorn re-raises the captured signal after `serve()` returns and the
process would then die before it hangs up calls and unkeys the transmitter.
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

from node.config import Address, NodeConfig, load_config, write_template
from node.control.ami import AmiServer
from node.control.app import create_app
from node.controller import Controller
from node.errors import CommandError, ConfigError, EngineError
from node.events import EventBus
from node.iax2.transport import EngineTransport
from node.media.bridge import MediaBridge, Topology
from node.secrets import RedactingFilter, SecretStore

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_RUNTIME", "run"]

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
        write_template(path)
        log.info(
            "no config at %s: wrote a commented template there; running on its safe defaults", path
        )
    return load_config(path)


async def _serve(config: NodeConfig, secrets: SecretStore) -> int:
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

    bridge = MediaBridge(
        transport.engine, topology, config.audio.backend, config.audio.input, config.audio.output
    )
    try:
        bridge.start_audio()
    except CommandError as exc:
        transport.close()
        ctl_sock.close()
        log.error("cannot start audio ([audio] backend = %s): %s", config.audio.backend, exc)
        return EXIT_RUNTIME
    transport.start(loop)
    controller.attach(transport, bridge, stop.set)
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
    controller.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

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

    waiter = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({http, waiter}, return_when=asyncio.FIRST_COMPLETED)
    code = EXIT_OK
    if http in done and not stop.is_set():
        log.error("the control channel stopped unexpectedly")
        code = EXIT_RUNTIME
    log.info("shutting down")
    if ami is not None:
        await ami.close()
    controller.close()
    server.should_exit = True
    with contextlib.suppress(asyncio.CancelledError):
        await http
    waiter.cancel()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)
    transport.close()
    ctl_sock.close()
    log.info("stopped")
    return code


def run(config_path: str | Path) -> int:
    """Run the daemon until SIGINT, SIGTERM or POST /shutdown; return the exit status."""
    handler = _configure_logging()
    path = Path(config_path)
    try:
        config = load_or_create(path)
        secrets = SecretStore(config)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return EXIT_CONFIG
    handler.addFilter(RedactingFilter(secrets))
    return asyncio.run(_serve(config, secrets))
