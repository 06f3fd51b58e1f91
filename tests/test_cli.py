"""The command line accepts a subcommand, --config and --help, and nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from node.cli import cli, program_name


def test_help_says_what_serve_does_and_where_the_config_lives() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "serve" in result.output
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    assert "--config" in result.output and "node.toml" in result.output
    assert "template" in result.output


def test_help_says_which_of_the_two_names_to_use_where() -> None:
    # `node` is Node.js on many Raspberry Pi hosts: the help names the other script and says when.
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "iax-node" in result.output and "Node.js" in result.output
    assert "python3 -m node" in result.output


def test_usage_lines_name_the_program_as_it_was_started() -> None:
    assert program_name("/opt/iax-node/bin/iax-node") == "iax-node"
    assert program_name("/opt/iax-node/bin/node") == "node"
    assert program_name("iax-node") == "iax-node"
    # `python -m node` starts as .../node/__main__.py: shown under the spec's name.
    assert program_name("/usr/lib/python3/site-packages/node/__main__.py") == "node"
    assert program_name("") == "node"
    for name in ("node", "iax-node"):
        result = CliRunner().invoke(cli, ["serve", "--help"], prog_name=name)
        assert result.output.startswith(f"Usage: {name} serve [OPTIONS]")


def test_unknown_options_and_commands_are_rejected() -> None:
    assert CliRunner().invoke(cli, ["serve", "--verbose"]).exit_code == 2
    assert CliRunner().invoke(cli, ["bogus"]).exit_code == 2


def test_python_dash_m_node_is_the_same_program() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "node", "--help"], capture_output=True, text=True, check=True
    )
    assert "serve" in out.stdout


def test_tui_has_only_config_and_help_and_needs_a_terminal(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["tui", "--help"])
    assert result.exit_code == 0
    assert "--config" in result.output and "NO_COLOR" in result.output
    assert CliRunner().invoke(cli, ["tui", "--no-color"]).exit_code == 2
    # Without a terminal there is nothing to draw on: a clear refusal, and no node started.
    out = subprocess.run(
        [sys.executable, "-m", "node", "tui", "--config", str(tmp_path / "node.toml")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1
    assert "needs a terminal" in out.stderr and "node serve" in out.stderr
    assert not (tmp_path / "node.toml").exists()
