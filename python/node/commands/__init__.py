"""Commands: DTMF digits to link commands, AMI and DTMF command strings, remote command mode."""

from node.commands.runner import CommandRunner, Outcome

__all__ = ["CommandRunner", "Outcome"]
