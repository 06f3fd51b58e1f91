//! The EchoLink ports: UDP 5198 (audio, and text chat in the same stream) and 5199 (control),
//! bound on the station's address and polled by the engine thread beside the IAX2 socket.
//!
//! Audio datagrams (first byte 0xC0: the RTP header EchoLink uses) never leave Rust: they go to
//! the station's EchoLink legs (`media/echolink.rs`), or are counted and dropped when no leg
//! has their source address. Everything else (every control datagram, and text such as
//! `oNDATA...` on the audio port) is queued for Python as an [`EngineEvent::EchoLink`] record,
//! on the same wakeup descriptor and drain as the other events. Python sends control and text
//! with [`Engine::echolink_send`](super::Engine::echolink_send); the tick sends the audio.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicU64;

use super::counters::bump;
use crate::echolink::AUDIO_MARKER;

/// Datagrams read from one port per wake: a flood on one port cannot starve the other or the
/// clock (the rest waits in the kernel's buffer for the next wake).
const READ_BUDGET: usize = 64;

/// Largest EchoLink datagram read whole (an audio packet is 144 bytes, a text chat line or an
/// RTCP compound a few hundred): longer ones are counted as truncated and dropped.
const MAX_DATAGRAM: usize = 2048;

/// Which EchoLink stream a datagram belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoLinkKind {
    /// The control port (RTCP: SDES, BYE, RR), from and to port 5199.
    Control,
    /// A non-audio datagram of the audio port (text chat, station info), from and to 5198.
    Text,
}

impl EchoLinkKind {
    pub fn name(self) -> &'static str {
        match self {
            EchoLinkKind::Control => "control",
            EchoLinkKind::Text => "text",
        }
    }
}

/// A non-audio EchoLink datagram for Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoLinkDatagram {
    pub kind: EchoLinkKind,
    pub data: Vec<u8>,
    pub from: SocketAddr,
}

/// The two bound sockets, shared by the engine thread (reads, audio sends) and the Python
/// handle (control and text sends).
#[derive(Debug)]
pub(super) struct EchoLinkPorts {
    audio: UdpSocket,
    control: UdpSocket,
}

impl EchoLinkPorts {
    /// Bind both ports; on failure, the address that could not be bound and why.
    pub(super) fn bind(
        ip: IpAddr,
        audio_port: u16,
        control_port: u16,
    ) -> Result<Self, (SocketAddr, io::Error)> {
        let open = |port: u16| {
            let addr = SocketAddr::new(ip, port);
            UdpSocket::bind(addr)
                .and_then(|s| s.set_nonblocking(true).map(|()| s))
                .map_err(|e| (addr, e))
        };
        Ok(EchoLinkPorts {
            audio: open(audio_port)?,
            control: open(control_port)?,
        })
    }

    pub(super) fn addrs(&self) -> io::Result<(SocketAddr, SocketAddr)> {
        Ok((self.audio.local_addr()?, self.control.local_addr()?))
    }

    pub(super) fn fds(&self) -> [RawFd; 2] {
        [self.audio.as_raw_fd(), self.control.as_raw_fd()]
    }

    fn socket(&self, kind: EchoLinkKind) -> &UdpSocket {
        match kind {
            EchoLinkKind::Control => &self.control,
            EchoLinkKind::Text => &self.audio,
        }
    }

    /// Send from the port of `kind` to `to`, counted.
    pub(super) fn send(
        &self,
        kind: EchoLinkKind,
        data: &[u8],
        to: SocketAddr,
        c: &EchoLinkCounters,
    ) -> io::Result<()> {
        self.send_from(self.socket(kind), data, to, c)
    }

    /// Send one audio packet from the audio port.
    pub(super) fn send_audio(&self, data: &[u8], to: SocketAddr, c: &EchoLinkCounters) {
        if self.send_from(&self.audio, data, to, c).is_ok() {
            bump(&c.audio_out, 1);
        }
    }

    fn send_from(
        &self,
        socket: &UdpSocket,
        data: &[u8],
        to: SocketAddr,
        c: &EchoLinkCounters,
    ) -> io::Result<()> {
        match socket.send_to(data, to) {
            Ok(_) => {
                bump(&c.datagrams_out, 1);
                bump(&c.bytes_out, data.len() as u64);
                Ok(())
            }
            Err(e) => {
                bump(&c.send_errors, 1);
                Err(e)
            }
        }
    }

    /// Read what waits on both ports (up to [`READ_BUDGET`] each): audio to `on_audio`, the
    /// rest to `on_other`.
    pub(super) fn read(
        &self,
        c: &EchoLinkCounters,
        mut on_audio: impl FnMut(&[u8], SocketAddr),
        mut on_other: impl FnMut(EchoLinkDatagram),
    ) {
        let mut buf = [0u8; MAX_DATAGRAM + 1];
        for kind in [EchoLinkKind::Text, EchoLinkKind::Control] {
            let socket = self.socket(kind);
            for _ in 0..READ_BUDGET {
                let (n, from) = match socket.recv_from(&mut buf) {
                    Ok(got) => got,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // ICMP errors from an earlier send (port unreachable) must not stop reading.
                    Err(_) => {
                        bump(&c.recv_errors, 1);
                        continue;
                    }
                };
                bump(&c.datagrams_in, 1);
                bump(&c.bytes_in, n as u64);
                let Some(data) = buf.get(..n).filter(|_| n <= MAX_DATAGRAM) else {
                    bump(&c.truncated, 1);
                    continue;
                };
                match kind {
                    EchoLinkKind::Text if data.first() == Some(&AUDIO_MARKER) => {
                        bump(&c.audio_in, 1);
                        on_audio(data, from);
                    }
                    EchoLinkKind::Text => {
                        bump(&c.text_in, 1);
                        on_other(EchoLinkDatagram {
                            kind,
                            data: data.to_vec(),
                            from,
                        });
                    }
                    EchoLinkKind::Control => {
                        bump(&c.control_in, 1);
                        on_other(EchoLinkDatagram {
                            kind,
                            data: data.to_vec(),
                            from,
                        });
                    }
                }
            }
        }
    }
}

/// What the EchoLink ports saw and sent since the engine started (kept across close and open).
#[derive(Debug, Default)]
pub(super) struct EchoLinkCounters {
    pub(super) datagrams_in: AtomicU64,
    pub(super) bytes_in: AtomicU64,
    pub(super) audio_in: AtomicU64,
    pub(super) audio_unrouted: AtomicU64,
    pub(super) audio_malformed: AtomicU64,
    pub(super) text_in: AtomicU64,
    pub(super) control_in: AtomicU64,
    pub(super) truncated: AtomicU64,
    pub(super) recv_errors: AtomicU64,
    pub(super) datagrams_out: AtomicU64,
    pub(super) bytes_out: AtomicU64,
    pub(super) audio_out: AtomicU64,
    pub(super) send_errors: AtomicU64,
}

/// A copy of the EchoLink counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EchoLinkCounterSnapshot {
    /// Every datagram read from either port.
    pub datagrams_in: u64,
    pub bytes_in: u64,
    /// Audio packets (first byte 0xC0) read from the audio port.
    pub audio_in: u64,
    /// Audio packets from an address with no EchoLink leg (counted and dropped).
    pub audio_unrouted: u64,
    /// Audio packets of a leg that are not a valid packet (counted and dropped).
    pub audio_malformed: u64,
    /// Text datagrams queued for Python.
    pub text_in: u64,
    /// Control datagrams queued for Python.
    pub control_in: u64,
    /// Datagrams longer than the engine reads whole (dropped).
    pub truncated: u64,
    pub recv_errors: u64,
    pub datagrams_out: u64,
    pub bytes_out: u64,
    /// Audio packets sent by the tick.
    pub audio_out: u64,
    pub send_errors: u64,
}

impl EchoLinkCounters {
    pub(super) fn snapshot(&self) -> EchoLinkCounterSnapshot {
        let r = |a: &AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        EchoLinkCounterSnapshot {
            datagrams_in: r(&self.datagrams_in),
            bytes_in: r(&self.bytes_in),
            audio_in: r(&self.audio_in),
            audio_unrouted: r(&self.audio_unrouted),
            audio_malformed: r(&self.audio_malformed),
            text_in: r(&self.text_in),
            control_in: r(&self.control_in),
            truncated: r(&self.truncated),
            recv_errors: r(&self.recv_errors),
            datagrams_out: r(&self.datagrams_out),
            bytes_out: r(&self.bytes_out),
            audio_out: r(&self.audio_out),
            send_errors: r(&self.send_errors),
        }
    }
}

#[cfg(test)]
mod tests;
