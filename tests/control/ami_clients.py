"""AMI clients that read the node exactly as Allmon3 and Supermon do (research/allmon3-ami.md
§2 and §4), quirks included, written from the notes (not from their code).

- `Allmon3`: asyncio; one `read(1024)` for the banner; requests end with ` ActionID: <uuid>`
  (leading blank: Asterisk sees no ActionID); a response is whatever accumulates until the text
  ends with `\\r\\n\\r\\n`; its XStat parser `rsplit`s `Conn:` lines and insists on 6 or 5 tokens.
- `Supermon`: blocking socket read line by line like PHP's fgets; every request carries an
  `ActionID`, and blocks without that exact `ActionID:` line are discarded (the login fails
  against a server that does not echo it); 10 s to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import socket
import time
import uuid
from typing import Any

__all__ = ["Allmon3", "Supermon", "login_block"]


def login_block(user: str, password: str, events: str = "0") -> str:
    return f"ACTION: LOGIN\r\nUSERNAME: {user}\r\nSECRET: {password}\r\nEVENTS: {events}\r\n"


class AmiError(Exception):
    """What Allmon3 raises as AMIException: the connection is unusable."""


class Allmon3:
    def __init__(self, host: str, port: int, user: str, password: str) -> None:
        self.host, self.port, self.user, self.password = host, port, user, password
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> bool:
        """asl_create_connection: banner, login; False when either fails."""
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        banner = (await self.reader.read(1024)).decode()
        ok = re.match(r"^Asterisk Call Manager", banner) is not None
        if ok:
            reply = await self.cmd_response(login_block(self.user, self.password))
            ok = re.match(r"Response: Success\r\n", reply) is not None
        if not ok:
            await self.close()
        return ok

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(ConnectionError):
                await self.writer.wait_closed()

    async def cmd_response(self, text: str) -> str:
        """asl_cmd_response: the request with its (leading-blank) ActionID, then everything read
        until the accumulated text ends with a blank line."""
        assert self.reader is not None and self.writer is not None
        self.writer.write(f"{text} ActionID: {uuid.uuid4()}\r\n\r\n".encode())
        await self.writer.drain()
        got = ""
        while not got.endswith("\r\n\r\n"):
            chunk = await self.reader.read(1024)
            if not chunk:
                raise AmiError("connection closed")
            got += chunk.decode()
        return got

    async def command(self, cmd: str) -> str:
        """What the command websocket answers the browser: `OK:` plus the Output values, or
        `ERR:` plus the first one (a fresh AMI connection per command, as Allmon3 opens)."""
        other = Allmon3(self.host, self.port, self.user, self.password)
        if not await other.connect():
            raise AmiError("login failed")
        reply = await other.cmd_response(f"ACTION: COMMAND\r\nCOMMAND: {cmd}\r\n")
        await other.logoff()
        outputs = [
            line[len("Output: ") :] for line in reply.split("\r\n") if line.startswith("Output")
        ]
        if reply.startswith("Response: Success"):
            return "OK:\r\n" + "".join(o + "\r\n" for o in outputs)
        return f"ERR: {outputs[0] if outputs else ''}"

    async def logoff(self) -> None:
        """Logoff, then close without reading the reply (as Allmon3 does)."""
        assert self.writer is not None
        self.writer.write(b"ACTION: Logoff\r\n\r\n")
        await self.writer.drain()
        await self.close()

    # --- ami_parser ---------------------------------------------------------------------------

    async def parse_xstat(self, node: str, status: dict[str, Any]) -> None:
        reply = await self.cmd_response(f"ACTION: RptStatus\r\nCOMMAND: XStat\r\nNODE: {node}\r\n")
        conns: dict[str, dict[str, Any]] = {}
        for line in re.split(r"[\r\n]+", reply):
            if re.match(r"^Conn", line):
                c = line.replace("Conn: ", "").rsplit(maxsplit=6)
                if len(c) == 6:
                    # Allmon3's own slip: the IP column reads the reconnects token.
                    name, ip, direction, ctime, cstate = c[0], c[2], c[3], c[4], c[5]
                elif len(c) == 5:
                    name, ip, direction, ctime, cstate = c[0], "", c[2], c[3], c[4]
                else:
                    raise ValueError(f"XStat Conn line with {len(c)} tokens: {line!r}")
                conns[name] = {
                    "IP": ip,
                    "DIR": direction,
                    "CTIME": ctime,
                    "CSTATE": cstate,
                    "PTT": False,
                    "SSK": -1,
                    "SSU": -1,
                    "MODE": "UNSET",
                    "DESC": "Private or Unavailable",
                }
            elif re.match(r"^LinkedNodes:", line):
                for token in line[len("LinkedNodes:") :].split(","):
                    token = token.strip()
                    if re.match(r"^[A-Z]\S+", token) and token[1:] in conns:
                        conns[token[1:]]["MODE"] = {
                            "T": "Transceive",
                            "R": "Monitor",
                            "C": "Connecting",
                        }.get(token[0], "Unknown")
            elif m := re.match(r"^Var:\sRPT_TXKEYED=([01])", line):
                status["TXKEYED"] = m.group(1) == "1"
            elif m := re.match(r"^Var:\sRPT_RXKEYED=([01])", line):
                status["RXKEYED"] = m.group(1) == "1"
        status["CONNS"] = conns
        reply = await self.cmd_response("ACTION: COMMAND\r\nCOMMAND: core show uptime seconds\r\n")
        status["UPTIME"] = status["RELOADTIME"] = -1
        for line in re.split(r"[\r\n]+", reply):
            line = line.replace("Output: ", "")
            if re.match(r"^System uptime:\s+", line):
                status["UPTIME"] = int(line.split()[2])
            elif re.match(r"^Last reload:\s+", line):
                status["RELOADTIME"] = int(line.split()[2])

    async def parse_saw_stat(self, node: str, status: dict[str, Any]) -> None:
        reply = await self.cmd_response(
            f"ACTION: RptStatus\r\nCOMMAND: SawStat\r\nNODE: {node}\r\n"
        )
        status["CONNKEYED"] = False
        status["CONNKEYEDNODE"] = False
        for line in re.split(r"[\r\n]+", reply):
            if re.match(r"^Conn", line):
                _, name, ptt, ssk, ssu = line.split()
                if name in status["CONNS"]:
                    conn = status["CONNS"][name]
                    conn["PTT"], conn["SSK"], conn["SSU"] = ptt, ssk, ssu
                    if ptt == "1":
                        status["CONNKEYED"] = True
                        status["CONNKEYEDNODE"] = name

    async def poll(self, node: str) -> dict[str, Any]:
        """One poll of NodeStatusWS.broadcast: XStat (+ uptime), then SawStat."""
        status: dict[str, Any] = {"ME": node, "RXKEYED": False, "TXKEYED": False, "CONNS": {}}
        await self.parse_xstat(node, status)
        await self.parse_saw_stat(node, status)
        return status


class Supermon:
    """supermon2 (`ng=False`) or supermon-ng (`ng=True`, uppercase RPTSTATUS, `EVENTS: 0`)."""

    def __init__(self, host: str, port: int, *, ng: bool = False, timeout: float = 10.0) -> None:
        self.ng = ng
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.settimeout(2)
        self.file = self.sock.makefile("rb")

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def banner_ok(self) -> bool:
        return b"Asterisk Call Manager" in self.file.readline()

    def _id(self, prefix: str) -> str:
        return f"{prefix}{secrets.randbelow(10**8)}"

    def request(self, lines: str, prefix: str) -> list[str]:
        """Send `lines` with a fresh ActionID; the block that echoes it (AMIget_response)."""
        aid = self._id(prefix)
        self.sock.sendall(f"{lines}ActionID: {aid}\r\n\r\n".encode())
        deadline = time.monotonic() + self.timeout
        block: list[str] = []
        self.sock.settimeout(self.timeout)
        while time.monotonic() < deadline:
            raw = self.file.readline()
            if not raw:
                raise ConnectionError("AMI closed the connection")
            line = raw.decode("latin-1").rstrip("\r\n")
            if line:
                block.append(line)
                continue
            if f"ActionID: {aid}" in block:
                return block
            block = []  # someone else's block (or one without ActionID): discarded
        raise TimeoutError(f"no response carrying ActionID {aid}")

    def login(self, user: str, password: str) -> bool:
        try:
            block = self.request(login_block(user, password, "0" if self.ng else "off"), "login_")
        except (ConnectionError, TimeoutError):
            return False
        return "Response: Success" in block and "Message: Authentication accepted" in block

    def xstat(self, node: str) -> dict[str, Any]:
        action = "RPTSTATUS" if self.ng else "RptStatus"
        block = self.request(f"ACTION: {action}\r\nCOMMAND: XStat\r\nNODE: {node}\r\n", "xstat")
        conns: dict[str, dict[str, str]] = {}
        modes: dict[str, str] = {}
        out: dict[str, Any] = {"conns": conns, "modes": modes, "vars": {}}
        for line in block:
            if m := re.match(r"Conn: (.*)", line):
                f = m.group(1).split()
                conns[f[0]] = {"ip": f[1], "dir": f[3], "elapsed": f[4], "state": f[5]}
            elif line.startswith("LinkedNodes: "):
                text = line[len("LinkedNodes: ") :]
                tokens = text.split(", ") if self.ng else re.split(r",\s*", text)
                for token in tokens:
                    if token != "<NONE>":
                        modes[token[1:]] = token[0]
            elif line.startswith("Var: "):
                key, _, value = line[len("Var: ") :].partition("=")
                out["vars"][key] = value
        return out

    def sawstat(self, node: str) -> dict[str, dict[str, str]]:
        action = "RPTSTATUS" if self.ng else "RptStatus"
        block = self.request(f"ACTION: {action}\r\nCOMMAND: SawStat\r\nNODE: {node}\r\n", "sawstat")
        keyed: dict[str, dict[str, str]] = {}
        for line in block:
            if line.startswith("Conn: "):
                _, node_name, is_keyed, since_key, since_unkey = line.split()
                keyed[node_name] = {"keyed": is_keyed, "ssk": since_key, "ssu": since_unkey}
        return keyed

    def command(self, cmd: str) -> tuple[bool, list[str]]:
        block = self.request(f"ACTION: COMMAND\r\nCOMMAND: {cmd}\r\n", "cmd")
        outputs = [line[len("Output: ") :] for line in block if line.startswith("Output: ")]
        return "Response: Error" not in block, outputs
