"""The one exception hierarchy of iax-node.

Peer faults never raise out of a protocol machine's `receive()`; they become reply frames and
events. These exceptions are for our own misuse (`LocalProtocolError`), configuration mistakes
(`ConfigError`), the Rust engine (`EngineError`) and rejected control commands (`CommandError`).
No message built here may contain a secret: callers pass names and values that are safe to log.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CommandError",
    "ConfigError",
    "EngineError",
    "LocalProtocolError",
    "NodeError",
    "NodeLookupError",
    "ProtocolError",
    "RadioError",
    "RemoteProtocolError",
    "StartError",
    "TtsError",
]


class NodeError(Exception):
    """Base of every error iax-node raises on purpose."""


class ConfigError(NodeError):
    """A configuration file or environment value that cannot be used.

    The message always names the file, the key and, where the set is closed, the accepted values,
    so an operator can fix it without reading the source.
    """

    #: Exit status of `node serve` on a configuration error (sysexits.h EX_CONFIG).
    EXIT_CODE = 78

    def __init__(
        self,
        path: str,
        key: str | None,
        problem: str,
        accepted: Iterable[str] | str | None = None,
    ) -> None:
        self.path = str(path)
        self.key = key
        self.problem = problem
        if accepted is None or isinstance(accepted, str):
            self.accepted = accepted
        else:
            self.accepted = ", ".join(accepted)
        where = f"{self.path}: {key}" if key else self.path
        text = f"{where}: {problem}"
        if self.accepted:
            text += f" (accepted: {self.accepted})"
        super().__init__(text)


class EngineError(NodeError):
    """The Rust engine (socket thread) could not do what was asked."""


class ProtocolError(NodeError):
    """Base for IAX2 protocol misuse."""


class LocalProtocolError(ProtocolError):
    """We asked a protocol machine for something its state does not allow."""


class RemoteProtocolError(ProtocolError):
    """The peer broke IAX2; internal to the machines, never raised out of `receive()`."""


class NodeLookupError(NodeError, LookupError):
    """A node number could not be turned into an address.

    The message is for operators: it names the node and every source that was tried (explicit
    address, nodes file, DNS) with why each gave nothing.
    """


class CommandError(NodeError):
    """A control command that was understood but cannot be carried out.

    `status` is the HTTP status the control channel answers with (400 for a bad request body,
    409 for a command that does not fit the current state, 500 for a failure).
    """

    def __init__(self, message: str, status: int = 500) -> None:
        self.status = status
        super().__init__(message)


class StartError(NodeError):
    """The node could not start: a port in use, the engine or the audio device failed.

    The message names the configuration key involved and is safe to show the operator.
    """


class TtsError(NodeError):
    """The text-to-speech binary did not give usable audio: missing, failed, too slow, or its
    output is not 16-bit PCM WAV. The announcement falls back to CW; the message (binary,
    exit status or time-out, never the text of an error stream beyond a short excerpt) is
    logged."""


class RadioError(NodeError):
    """The radio's PTT or carrier-detect hardware failed: a device that does not open, a write
    or read the kernel refused. The message names the device and is safe to show the operator."""
