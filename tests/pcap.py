"""A small capture-file reader and writer for tests: pcap and pcapng, IPv4/IPv6 UDP.

Reads classic pcap (either byte order, micro- or nanosecond) and pcapng (SHB/IDB/EPB/SPB and
the obsolete PB) with Ethernet (incl. 802.1Q), Linux cooked v1/v2, raw IP and BSD/Linux
loopback link types. Writes classic pcap with raw IPv4 (link type 101) so that tshark can read
frames we build. IP fragments are skipped, not reassembled (IAX2 datagrams are small).
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LINKTYPE_RAW",
    "UdpDatagram",
    "ipv4_udp_packet",
    "read_frames",
    "read_timed_frames",
    "udp_datagrams",
    "write_pcap",
]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_ALIASES = {12, 14, LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6}

_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_ETHERTYPE_VLAN = {0x8100, 0x88A8}
_UDP = 17
_IPV6_EXTENSIONS = {0, 43, 60}  # hop-by-hop, routing, destination options
_IPV6_FRAGMENT = 44


@dataclass(frozen=True, slots=True)
class UdpDatagram:
    src: tuple[str, int]
    dst: tuple[str, int]
    payload: bytes
    #: Capture time in seconds.
    time: float = 0.0


def read_frames(path: Path) -> Iterator[tuple[int, bytes]]:
    """(link type, captured bytes) for every packet in a pcap or pcapng file."""
    for _time, linktype, frame in read_timed_frames(path):
        yield linktype, frame


def read_timed_frames(path: Path) -> Iterator[tuple[float, int, bytes]]:
    """(capture time, link type, captured bytes) for every packet."""
    data = Path(path).read_bytes()
    if len(data) < 4:
        raise ValueError(f"{path}: too short for a capture file")
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        yield from _read_pcapng(data)
    else:
        yield from _read_pcap(data, path)


def _read_pcap(data: bytes, path: Path) -> Iterator[tuple[float, int, bytes]]:
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap or pcapng file")
    scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
    (linktype,) = struct.unpack_from(endian + "I", data, 20)
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack_from(endian + "IIII", data, pos)
        pos += 16
        if pos + incl > len(data):
            raise ValueError(f"{path}: truncated packet record at {pos}")
        yield sec + frac * scale, linktype & 0xFFFF, data[pos : pos + incl]
        pos += incl


def _read_pcapng(data: bytes) -> Iterator[tuple[float, int, bytes]]:
    endian = "<"
    links: list[int] = []
    #: Seconds per timestamp unit of each interface (if_tsresol; microseconds by default).
    units: list[float] = []
    pos = 0
    while pos + 12 <= len(data):
        if data[pos : pos + 4] == b"\x0a\x0d\x0d\x0a":
            # A section header fixes the byte order of everything up to the next one.
            endian = "<" if data[pos + 8 : pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
            units = []
        btype, blen = struct.unpack_from(endian + "II", data, pos)
        if blen < 12 or pos + blen > len(data):
            raise ValueError(f"pcapng block of length {blen} at {pos} runs past the file")
        body = data[pos + 8 : pos + blen - 4]
        if btype == 1:  # interface description
            links.append(struct.unpack_from(endian + "H", body, 0)[0])
            units.append(_tsresol(body[8:], endian))
        elif btype == 6:  # enhanced packet
            iface, hi, lo, caplen, _orig = struct.unpack_from(endian + "IIIII", body, 0)
            yield ((hi << 32) | lo) * units[iface], links[iface], body[20 : 20 + caplen]
        elif btype == 3:  # simple packet: interface 0, no captured length field, no time
            (orig,) = struct.unpack_from(endian + "I", body, 0)
            yield 0.0, links[0], body[4 : 4 + min(orig, len(body) - 4)]
        elif btype == 2:  # obsolete packet block
            iface, _drops, hi, lo, caplen, _orig = struct.unpack_from(endian + "HHIIII", body, 0)
            yield ((hi << 32) | lo) * units[iface], links[iface], body[20 : 20 + caplen]
        pos += blen


def _tsresol(options: bytes, endian: str) -> float:
    """The if_tsresol option of an interface description block (default: microseconds)."""
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(endian + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0**-v
        pos += 4 + (length + 3) // 4 * 4
    return 1e-6


def _network_layer(linktype: int, frame: bytes) -> bytes | None:
    """The IP packet inside a link-layer frame, or None for anything else."""
    if linktype == LINKTYPE_ETHERNET:
        (ethertype,) = struct.unpack_from(">H", frame, 12)
        pos = 14
        while ethertype in _ETHERTYPE_VLAN:
            (ethertype,) = struct.unpack_from(">H", frame, pos + 2)
            pos += 4
        return frame[pos:] if ethertype in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None
    if linktype == LINKTYPE_LINUX_SLL:
        (proto,) = struct.unpack_from(">H", frame, 14)
        return frame[16:] if proto in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None
    if linktype == LINKTYPE_LINUX_SLL2:
        (proto,) = struct.unpack_from(">H", frame, 0)
        return frame[20:] if proto in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6) else None
    if linktype in _RAW_ALIASES:
        return frame
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        # NULL stores the family in the capturing host's order, LOOP always big-endian;
        # 2 is AF_INET everywhere, AF_INET6 differs by OS (10, 24, 28, 30).
        family_le, family_be = (
            struct.unpack_from("<I", frame)[0],
            struct.unpack_from(">I", frame)[0],
        )
        return frame[4:] if {family_le, family_be} & {2, 10, 24, 28, 30} else None
    raise ValueError(f"unsupported link type {linktype}")


def _udp_in_ip(packet: bytes, when: float = 0.0) -> UdpDatagram | None:
    if not packet:
        return None
    version = packet[0] >> 4
    if version == 4:
        ihl = (packet[0] & 0x0F) * 4
        total, frag, proto = struct.unpack_from(">H2xHxB", packet, 2)
        if proto != _UDP or frag & 0x3FFF:  # not UDP, or a fragment (MF set or offset > 0)
            return None
        src = str(ipaddress.IPv4Address(packet[12:16]))
        dst = str(ipaddress.IPv4Address(packet[16:20]))
        segment = packet[ihl:total]
    elif version == 6:
        (next_header,) = struct.unpack_from(">B", packet, 6)
        (payload_len,) = struct.unpack_from(">H", packet, 4)
        src = str(ipaddress.IPv6Address(packet[8:24]))
        dst = str(ipaddress.IPv6Address(packet[24:40]))
        pos, end = 40, 40 + payload_len
        while next_header in _IPV6_EXTENSIONS:
            next_header, ext_len = packet[pos], packet[pos + 1]
            pos += (ext_len + 1) * 8
        if next_header != _UDP:
            return None
        segment = packet[pos:end]
    else:
        return None
    sport, dport, length = struct.unpack_from(">HHH", segment, 0)
    return UdpDatagram((src, sport), (dst, dport), segment[8:length], when)


def udp_datagrams(path: Path) -> list[UdpDatagram]:
    """Every unfragmented UDP datagram in a capture, in file order."""
    out = []
    for when, linktype, frame in read_timed_frames(path):
        packet = _network_layer(linktype, frame)
        if packet is None:
            continue
        datagram = _udp_in_ip(packet, when)
        if datagram is not None:
            out.append(datagram)
    return out


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_udp_packet(
    payload: bytes, src: tuple[str, int], dst: tuple[str, int], ident: int = 0
) -> bytes:
    """An IPv4 packet carrying one UDP datagram, with correct lengths and both checksums."""
    src_ip = ipaddress.IPv4Address(src[0]).packed
    dst_ip = ipaddress.IPv4Address(dst[0]).packed
    udp_len = 8 + len(payload)
    pseudo = src_ip + dst_ip + struct.pack(">BBH", 0, _UDP, udp_len)
    udp = struct.pack(">HHHH", src[1], dst[1], udp_len, 0) + payload
    udp_sum = _checksum(pseudo + udp) or 0xFFFF  # 0 would mean "no checksum"
    udp = udp[:6] + struct.pack(">H", udp_sum) + udp[8:]
    header = struct.pack(
        ">BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, ident & 0xFFFF, 0x4000, 64, _UDP, 0, src_ip, dst_ip
    )
    header = header[:10] + struct.pack(">H", _checksum(header)) + header[12:]
    return header + udp


def write_pcap(path: Path, packets: Iterable[bytes], linktype: int = LINKTYPE_RAW) -> None:
    """A classic little-endian microsecond pcap, one packet per 20 ms from t = 1 s."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
    for i, packet in enumerate(packets):
        usec = 1_000_000 + i * 20_000
        out += struct.pack("<IIII", usec // 1_000_000, usec % 1_000_000, len(packet), len(packet))
        out += packet
    Path(path).write_bytes(bytes(out))
