"""`node ptt-release`: force the configured PTT off, without starting the node.

The daemon releases the PTT on every exit it lives through (a stop, SIGTERM, an exception);
this covers the one it does not (SIGKILL, a crash, the OOM killer). A CM108's GPIO keeps its
level when the process holding the hidraw node dies, and so may a GPIO line, so the service
manager runs this after the daemon (systemd `ExecStopPost=`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from node.config import load_config
from node.errors import ConfigError, RadioError
from node.radio.ptt import release_ptt

__all__ = ["run"]

log = logging.getLogger("node")

EXIT_OK = 0
EXIT_RUNTIME = 1


def run(config_path: str | Path) -> int:
    """Release the PTT of every node of the config at `config_path` (`[nodes.<number>]` too:
    one node's failure does not keep the others keyed); the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return ConfigError.EXIT_CODE
    several = len(config.hosted) > 1
    status = EXIT_OK
    for node in config.hosted:
        cfg = node.radio
        who = f"node {node.node_id}: " if several else ""
        if cfg.ptt == "none":
            log.info("%sno PTT configured ([radio] ptt = none): nothing to release", who)
            continue
        try:
            release_ptt(cfg)
        except RadioError as exc:
            log.error("%scannot release the PTT: %s", who, exc)
            status = EXIT_RUNTIME
            continue
        log.info("%sPTT released (%s on %s)", who, cfg.ptt, cfg.ptt_device)
    return status
