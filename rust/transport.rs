//! The engine's datagram I/O, behind one small interface.
//!
//! The engine thread reads what arrived in batches ([`Transport::recv_batch`]) and sends each
//! tick's output in batches ([`Transport::send_batch`]); Python's signalling goes out one
//! datagram at a time from its own thread ([`Transport::send_to`]). Nothing else in the engine
//! touches a socket, so another transport (the userspace WireGuard tunnel of `wireguard.rs`,
//! which must see every datagram in and out) implements this trait and slots in at
//! [`crate::engine::Engine::start_with`].
//!
//! [`UdpTransport`] is the plain UDP socket, on Linux:
//! - `recvmmsg` fills up to [`BATCH`] datagrams per call, each with the kernel's receive time
//!   (`SO_TIMESTAMPNS`), so a frame read late still enters the jitter buffer at its true arrival
//!   time, and the kernel's count of datagrams it dropped for a full buffer (`SO_RXQ_OVFL`);
//! - `sendmmsg` sends up to [`BATCH`] datagrams per call; a run of equal-sized datagrams to one
//!   address goes as one UDP GSO message (`UDP_SEGMENT`), where the kernel offers it;
//! - every datagram is gathered from a header and a body, so listeners who hear the same mix
//!   share one encoded payload and only their 4-byte mini headers differ.
//!
//! `unsafe` is confined to the four syscall wrappers of `sys` (`transport/sys.rs`: `recvmmsg`,
//! `sendmmsg`, `setsockopt`/`getsockopt`, `clock_gettime`); each states why it is sound.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Datagrams per `recvmmsg`/`sendmmsg` call.
pub const BATCH: usize = 64;

/// Largest datagram read whole. IAX2 datagrams fit an Ethernet MTU (Asterisk trunks stop at
/// 5,120 bytes of payload); a longer one is counted as truncated, never parsed as a prefix.
pub const SLOT: usize = 8192;

/// Most segments the kernel accepts in one UDP GSO message (`UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGMENTS: usize = 64;

/// A GSO message must stay under the largest UDP payload.
const GSO_MAX_BYTES: usize = 65_000;

/// `iovec`s per `sendmmsg` call (header and body per datagram).
const IOV_POOL: usize = 2 * BATCH * 4;

/// How long one send waits for room in a full send buffer before it gives the datagrams up.
const SEND_WAIT: Duration = Duration::from_millis(2);

/// Receive times older than this are clamped: a wall-clock step between the kernel's stamp
/// and our read must not throw a frame far into the past.
const MAX_AGE: Duration = Duration::from_secs(1);

/// One datagram to send: `head` then `body` on the wire (either may be empty).
#[derive(Debug, Clone, Copy)]
pub struct OutDatagram<'a> {
    pub to: SocketAddr,
    pub head: &'a [u8],
    pub body: &'a [u8],
}

impl OutDatagram<'_> {
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the transport knows about one received datagram.
#[derive(Debug, Clone, Copy)]
pub struct RecvMeta {
    /// Bytes stored in the slot (at most [`SLOT`]).
    pub len: usize,
    pub from: SocketAddr,
    /// The datagram was longer than [`SLOT`] and only its start was kept.
    pub truncated: bool,
    /// How long before the read the kernel received it, when the transport knows.
    pub age: Option<Duration>,
}

impl Default for RecvMeta {
    fn default() -> Self {
        RecvMeta {
            len: 0,
            from: SocketAddr::from(([0, 0, 0, 0], 0)),
            truncated: false,
            age: None,
        }
    }
}

/// Reusable storage for one batch of received datagrams.
pub struct RecvBatch {
    buf: Vec<u8>,
    meta: Vec<RecvMeta>,
    count: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    pub fn new() -> Self {
        RecvBatch {
            buf: vec![0; BATCH * SLOT],
            meta: vec![RecvMeta::default(); BATCH],
            count: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The datagrams of the last receive, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &RecvMeta)> {
        self.meta
            .iter()
            .take(self.count)
            .zip(self.buf.chunks(SLOT))
            .map(|(m, slot)| (slot.get(..m.len).unwrap_or(slot), m))
    }

    /// Forget the last batch.
    pub fn clear(&mut self) {
        self.count = 0;
    }

    /// Append one datagram by copy (for transports that produce plaintext in user space, such
    /// as a tunnel). False when the batch is full.
    pub fn push(&mut self, data: &[u8], from: SocketAddr, age: Option<Duration>) -> bool {
        let i = self.count;
        let (Some(slot), Some(meta)) = (self.buf.chunks_mut(SLOT).nth(i), self.meta.get_mut(i))
        else {
            return false;
        };
        let n = data.len().min(SLOT);
        if let (Some(dst), Some(src)) = (slot.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        *meta = RecvMeta {
            len: n,
            from,
            truncated: data.len() > SLOT,
            age,
        };
        self.count += 1;
        true
    }
}

/// The outcome of one [`Transport::send_batch`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Datagrams handed to the kernel.
    pub sent: u64,
    pub bytes: u64,
    /// Datagrams given up (refused, or no room in the send buffer in time).
    pub failed: u64,
    /// System calls made.
    pub calls: u64,
}

/// Socket-level figures for the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Datagrams the kernel dropped because the receive buffer was full.
    pub kernel_drops: u64,
    /// Receive and send buffer sizes in bytes, as the kernel reports them.
    pub rcvbuf: u64,
    pub sndbuf: u64,
    /// Whether runs of datagrams to one address go out as UDP GSO messages.
    pub gso: bool,
}

/// Where a tunnel stands with its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelState {
    /// No session and no handshake under way (not started yet, or given up until traffic or
    /// the keepalive asks for one).
    Down,
    /// Handshake initiations sent, no answer yet.
    Handshaking,
    /// A session is established: datagrams flow.
    Up,
}

impl TunnelState {
    pub fn as_str(self) -> &'static str {
        match self {
            TunnelState::Down => "down",
            TunnelState::Handshaking => "handshaking",
            TunnelState::Up => "up",
        }
    }
}

/// A tunnel's health, for the snapshot and the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelStats {
    pub state: TunnelState,
    /// The outer socket's address (what the peer's endpoint names).
    pub listen: SocketAddr,
    /// Where the peer is reached (configured, or learnt from its last authenticated packet).
    pub endpoint: Option<SocketAddr>,
    /// Time since the current session's handshake; None without a session.
    pub last_handshake: Option<Duration>,
    /// Handshakes completed, and initiations sent.
    pub handshakes: u64,
    pub handshake_attempts: u64,
    /// Bytes of outer datagrams sent, and of authenticated ones received.
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Outer datagrams dropped: garbage, or not authenticated by the peer's key.
    pub dropped_outer: u64,
    /// Authenticated packets dropped: not IPv4/UDP to our address and port, or from a source
    /// outside the allowed IPs.
    pub dropped_inner: u64,
    /// Datagrams not sent: their destination is outside the allowed IPs.
    pub no_route: u64,
    /// Our public key (derived from the private one; not secret).
    pub public_key: [u8; 32],
}

/// Datagram I/O of one engine. Every method takes `&self`: the engine thread receives and sends
/// ticks while Python's thread sends signalling.
pub trait Transport: Send + Sync {
    /// The address peers send to.
    fn local_addr(&self) -> SocketAddr;
    /// A descriptor that is readable when `recv_batch` has something to return.
    fn poll_fd(&self) -> RawFd;
    /// Fill `batch` with what is waiting (never blocks); returns how many datagrams it holds.
    fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize>;
    /// Send every datagram, in order per destination.
    fn send_batch(&self, out: &[OutDatagram<'_>]) -> SendReport;
    /// Send one datagram now.
    fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()>;
    fn stats(&self) -> TransportStats;
    /// Periodic upkeep (a tunnel's handshake and keepalive timers), called by the engine thread
    /// every few ticks; true when [`Transport::tunnel`]'s state changed since the last call.
    fn maintain(&self) -> bool {
        false
    }
    /// Whether `maintain` has timers to run: the engine keeps its clock while it does.
    fn needs_upkeep(&self) -> bool {
        false
    }
    /// The tunnel's health, for a transport that is a tunnel.
    fn tunnel(&self) -> Option<TunnelStats> {
        None
    }
}

/// The plain UDP socket.
pub struct UdpTransport {
    socket: UdpSocket,
    local: SocketAddr,
    drops: AtomicU64,
    gso: AtomicBool,
    rcvbuf: u64,
    sndbuf: u64,
}

/// Receive buffer per leg: 100 ms of its datagrams (5) at a small datagram's kernel footprint
/// (~1.3 KB with the skb), so a host that stalls the engine that long drops nothing.
pub const RCVBUF_PER_LEG: usize = 5 * 1_300;
/// Send buffer per leg: one tick's datagram in flight, twice over.
pub const SNDBUF_PER_LEG: usize = 2 * 1_300;
/// Never below the kernel's usual default.
const MIN_BUFFER: usize = 212_992;
const MAX_BUFFER: usize = 256 << 20;

impl UdpTransport {
    /// Bind `addr` and size the buffers for `legs` legs. A buffer the kernel caps below the
    /// wanted size (`net.core.rmem_max` without `CAP_NET_ADMIN`) is used as it is; `stats()`
    /// reports what was granted.
    pub fn bind(addr: SocketAddr, legs: usize) -> io::Result<UdpTransport> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        let fd = socket.as_raw_fd();
        // Both are best effort: without them frames get their read time and drops go uncounted.
        let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1);
        let want_rcv = legs
            .saturating_mul(RCVBUF_PER_LEG)
            .clamp(MIN_BUFFER, MAX_BUFFER);
        let want_snd = legs
            .saturating_mul(SNDBUF_PER_LEG)
            .clamp(MIN_BUFFER, MAX_BUFFER);
        grow_buffer(fd, libc::SO_RCVBUF, libc::SO_RCVBUFFORCE, want_rcv);
        grow_buffer(fd, libc::SO_SNDBUF, libc::SO_SNDBUFFORCE, want_snd);
        let rcvbuf = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0);
        let sndbuf = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap_or(0);
        // UDP_SEGMENT is accepted as a socket option exactly where the kernel supports GSO;
        // it is then switched off again and asked for per message.
        let gso = sys::setsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT, 1200).is_ok()
            && sys::setsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT, 0).is_ok();
        Ok(UdpTransport {
            local: socket.local_addr()?,
            socket,
            drops: AtomicU64::new(0),
            gso: AtomicBool::new(gso),
            rcvbuf: u64::try_from(rcvbuf).unwrap_or(0),
            sndbuf: u64::try_from(sndbuf).unwrap_or(0),
        })
    }

    /// Turn GSO off (a kernel or device that refuses it), or back on for tests.
    pub fn set_gso(&self, on: bool) {
        self.gso.store(on, Ordering::Relaxed);
    }
}

/// Raise a buffer to `want` bytes: the privileged option first (not capped by the sysctl
/// maximum), then the plain one. Never shrinks it.
fn grow_buffer(fd: RawFd, plain: libc::c_int, force: libc::c_int, want: usize) {
    let have = sys::getsockopt_int(fd, libc::SOL_SOCKET, plain).unwrap_or(0);
    if usize::try_from(have).unwrap_or(0) >= want {
        return;
    }
    // The kernel doubles the value it is given (the other half is its bookkeeping).
    let ask = libc::c_int::try_from(want / 2).unwrap_or(libc::c_int::MAX);
    if sys::setsockopt_int(fd, libc::SOL_SOCKET, force, ask).is_err() {
        let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, plain, ask);
    }
}

impl Transport for UdpTransport {
    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn poll_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.count = 0;
        let got = sys::recvmmsg(self.socket.as_raw_fd(), batch)?;
        batch.count = got.count;
        if let Some(d) = got.drops {
            self.drops.fetch_max(u64::from(d), Ordering::Relaxed);
        }
        Ok(got.count)
    }

    fn send_batch(&self, out: &[OutDatagram<'_>]) -> SendReport {
        let mut report = SendReport::default();
        let fd = self.socket.as_raw_fd();
        let mut rest = out;
        while !rest.is_empty() {
            let gso = self.gso.load(Ordering::Relaxed);
            let (taken, r) = sys::sendmmsg(fd, rest, gso);
            report.sent += r.sent;
            report.bytes += r.bytes;
            report.failed += r.failed;
            report.calls += r.calls;
            if r.gso_refused {
                // Resent without GSO on the next round (quinn-udp does the same on EIO/EINVAL).
                self.gso.store(false, Ordering::Relaxed);
            }
            rest = rest.get(taken..).unwrap_or(&[]);
        }
        report
    }

    fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()> {
        self.socket.send_to(data, to).map(|_| ())
    }

    fn stats(&self) -> TransportStats {
        TransportStats {
            kernel_drops: self.drops.load(Ordering::Relaxed),
            rcvbuf: self.rcvbuf,
            sndbuf: self.sndbuf,
            gso: self.gso.load(Ordering::Relaxed),
        }
    }
}

/// Socket address to the kernel's representation.
fn to_storage(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is a plain C struct; all-zero bytes are a valid value of it.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            write_into(&mut storage, sin);
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            write_into(&mut storage, sin6);
            size_of::<libc::sockaddr_in6>()
        }
    };
    (
        storage,
        libc::socklen_t::try_from(len).unwrap_or(libc::socklen_t::MAX),
    )
}

/// Copy a `sockaddr_in`/`sockaddr_in6` into the front of a `sockaddr_storage`.
fn write_into<T: Copy>(storage: &mut libc::sockaddr_storage, value: T) {
    const {
        assert!(size_of::<libc::sockaddr_in6>() <= size_of::<libc::sockaddr_storage>());
    }
    // SAFETY: T is sockaddr_in or sockaddr_in6 (the only callers), both no larger than
    // sockaddr_storage (asserted above) and with no stricter alignment (sockaddr_storage is
    // aligned for every socket address type by definition); the write stays inside `storage`.
    unsafe {
        std::ptr::write_unaligned((storage as *mut libc::sockaddr_storage).cast::<T>(), value)
    }
}

/// The kernel's socket address back to a `SocketAddr` (None for a family we do not speak).
fn from_storage(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: ss_family says the kernel wrote a sockaddr_in, which fits in the storage
            // and has no stricter alignment; read_unaligned copies it out.
            let sin: libc::sockaddr_in = unsafe {
                std::ptr::read_unaligned(
                    (storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>(),
                )
            };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: libc::sockaddr_in6 = unsafe {
                std::ptr::read_unaligned(
                    (storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>(),
                )
            };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The syscall wrappers: the only `unsafe` code of the transport.
mod sys;

#[cfg(test)]
mod tests;
