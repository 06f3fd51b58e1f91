"""The `node` command line: a subcommand, `--config` and `--help`, nothing else.

The same program is installed as `node` (the spec's name) and `iax-node`; `python -m node` runs it
too. Help and usage lines name it as it was started.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["main"]

CONFIG_HELP = (
    "Path of the TOML configuration (default: ./node.toml). If it does not exist, `serve` writes "
    "a commented template there and starts on its safe defaults."
)


#: The one option each subcommand takes besides --help.
config_option = click.option(
    "--config",
    "config_path",
    default="node.toml",
    show_default=True,
    metavar="PATH",
    help=CONFIG_HELP,
)


@click.group(context_settings={"help_option_names": ["--help"]})
def cli() -> None:
    """iax-node: a headless IAX2 voice node for amateur-radio linking networks.

    The node answers and places IAX2 calls, registers with a registrar, links to other nodes and
    mixes every party in a conference. It is controlled over a loopback HTTP channel
    (default http://127.0.0.1:8730, see GET /status and GET /events).

    One program, two names: `node` (the spec's) and `iax-node`. Where `node` is Node.js (many
    Raspberry Pi hosts run Node-RED), and in service units and scripts, use `iax-node`;
    `python3 -m node` is the same program too.
    """


@cli.command()
@config_option
def serve(config_path: str) -> None:
    """Run the node daemon until SIGINT, SIGTERM or POST /shutdown.

    Listens for IAX2 on UDP ([listener] bind, default port 4569) and serves the control channel on
    [control] bind (loopback only, default 127.0.0.1:8730). Exit status: 0 after a clean stop,
    78 for a configuration error, 1 when the node cannot run (e.g. a port already in use).
    """
    from node.daemon import run

    sys.exit(run(config_path))


@cli.command()
@config_option
def tui(config_path: str) -> None:
    """Run the node with an interactive terminal menu on top of it.

    The node runs in this process, exactly as under `serve` (IAX2, control channel, status page),
    and the menu drives the same controller: status at a glance, dial, answer, reject, hang up,
    link connect/monitor/disconnect, bridge mode, registration, inbound calls, and keying behind
    a confirmation that defaults to no. Quitting the menu stops the node, so do not also run
    `serve` on the same configuration. Fits 80x24; set NO_COLOR=1 for a screen without colour.
    """
    from node.tui.run import run

    sys.exit(run(config_path))


@cli.command("ptt-release")
@config_option
def ptt_release(config_path: str) -> None:
    """Force the radio's PTT off ([radio] ptt) and exit: for the service manager after the node
    stopped (the shipped systemd unit's ExecStopPost), so a node that crashed or was killed
    never leaves its transmitter keyed.

    Only reads the configuration (a missing file is an error here, no template is written).
    Exit status: 0 when the PTT is released (or none is configured), 78 for a configuration
    error, 1 when the PTT device cannot be opened or written.
    """
    from node.radio.release import run

    sys.exit(run(config_path))


@cli.command("wg-keygen")
@config_option
def wg_keygen(config_path: str) -> None:
    """Make a WireGuard key pair for [wireguard] (as `wg genkey | wg pubkey` would).

    Prints the private key to stdout as one NAME=value line, NAME being [wireguard]
    private_key_env (WG_PRIVATE_KEY without one), ready to append to the service's root-only
    environment file; prints the public key, which the peer needs, to stderr. The config is
    only read (a missing file is fine here, no template is written). Exit status: 0, or 78 for
    a configuration that does not load.
    """
    from node.wg_keygen import run

    sys.exit(run(config_path))


@cli.command("import-asl3")
@click.option(
    "--asterisk-dir",
    default="/etc/asterisk",
    show_default=True,
    metavar="DIR",
    help="The ASL3 configuration directory (rpt.conf, iax.conf, simpleusb.conf, ...).",
)
@click.option(
    "--node",
    "node",
    default=None,
    metavar="N",
    help="The node to import (default: every node of rpt.conf, into one config that serves "
    "them all on one IAX2 port).",
)
@click.option(
    "--config", "config_path", required=True, metavar="PATH", help="The node.toml to write."
)
@click.option(
    "--force",
    is_flag=True,
    help="Write the node even when its radio is one this node cannot drive (it is left out).",
)
def import_asl3(asterisk_dir: str, node: str | None, config_path: str, force: bool) -> None:
    """Turn an AllStarLink node's configuration (ASL3, ASL 1.x, DIAL, HamVOIP) into a node.toml.

    Reads rpt.conf (with its templates and #includes), iax.conf, the radio's channel driver file
    (simpleusb.conf, usbradio.conf, alsaradio.conf, rpiradio.conf), manager.conf and
    rpt_http_registrations.conf as Asterisk does, writes a commented config for node N and its
    node list beside it (<config stem>-nodes.conf), and reports what to check, which secrets to
    provide (never copied: they are named by their environment variables), what was carried
    over, and what was not and what that changes. Running it again gives the same files.
    Exit status: 0; 78 when the configuration cannot be read or imported (the message names
    the file and line) or the node's radio cannot be driven here (nothing is written unless
    --force); 1 when a file cannot be written. A failed run writes nothing.
    """
    from node.asl3import.command import run

    sys.exit(run(asterisk_dir, node, config_path, force=force))


#: The names the program is installed under; anything else (`python -m node`) is shown as `node`.
PROGRAM_NAMES = ("node", "iax-node")


def program_name(argv0: str) -> str:
    """The name to show in usage lines: the one the user typed, so `iax-node --help` says
    `Usage: iax-node ...`."""
    name = Path(argv0).name
    return name if name in PROGRAM_NAMES else "node"


def main() -> None:
    cli(prog_name=program_name(sys.argv[0] if sys.argv else ""))
