//! A userspace WireGuard tunnel as the engine's transport (`[wireguard]`).
//!
//! Every IAX2 datagram the engine sends becomes an IPv4/UDP packet from our tunnel address
//! (`ipv4.rs`), encrypted by boringtun's Noise state machine and sent over one outer UDP socket
//! to the peer's endpoint; every outer datagram is decrypted, and the UDP datagrams inside that
//! are addressed to us and come from the peer's allowed IPs are handed to the engine as if they
//! had arrived from their inner source. No TUN device, no root: the node's tunnel address exists
//! only inside this module.
//!
//! One peer (a hub, or the other node): the common shape of a node on a linking network. The
//! outer socket is a [`UdpTransport`], so a tick's encrypted datagrams still leave in one
//! `sendmmsg` (as one GSO message when their sizes match).
//!
//! boringtun's calling conventions, honoured here:
//! - `decapsulate` may answer with a packet to send (a handshake response, a cookie, the
//!   keepalive that confirms a session); after any such answer it is called again with an empty
//!   datagram until it says `Done`, which flushes the datagrams it queued while the handshake ran.
//! - `update_timers` runs every [`Transport::maintain`] call (the engine calls it every 100 ms):
//!   handshake retransmission, rekeying, keepalives, session expiry.
//! - Buffers given to it are at least 148 bytes and 32 bytes longer than the plaintext.
//!
//! Outer datagrams that do not authenticate, and authenticated packets that are not UDP to our
//! address and port from an allowed source, are counted and dropped. boringtun's packet handling
//! runs under `catch_unwind`: a bug in a dependency's parser must cost one datagram, never the
//! engine thread.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

use boringtun::noise::errors::WireGuardError;
use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};

use crate::ipv4::{self, Ipv4Net};
use crate::transport::{
    OutDatagram, RecvBatch, RecvMeta, SendReport, Transport, TransportStats, TunnelState,
    TunnelStats, UdpTransport, BATCH, SLOT,
};

/// WireGuard message types (the first byte of every outer datagram, little-endian u32).
const HANDSHAKE_INIT: u8 = 1;
const HANDSHAKE_RESP: u8 = 2;
const DATA: u8 = 4;

/// A data packet's overhead over its plaintext, and the size of the largest handshake message.
const DATA_OVERHEAD: usize = 32;
const HANDSHAKE_INIT_LEN: usize = 148;

/// WireGuard pads plaintext to a multiple of this, so lengths say less about the content.
const PADDING: usize = 16;

/// The longest datagram the tunnel carries: its outer datagram (inner headers, padding,
/// WireGuard's overhead) must still fit the receiving side's [`SLOT`], or it would arrive
/// truncated and be dropped. IAX2 datagrams are far shorter (Asterisk trunks stop at 5,120 bytes).
pub const MAX_DATAGRAM: usize = SLOT - ipv4::HEADER_LEN - PADDING - DATA_OVERHEAD;

/// Room for anything boringtun writes: a handshake message, or the largest datagram sealed.
const SCRATCH: usize = SLOT + HANDSHAKE_INIT_LEN;

/// Queued datagrams boringtun flushes after a handshake (its queue holds 256); a bound on the
/// "call again until Done" loop even if that ever changed.
const MAX_FLUSH: usize = 512;

/// How a node's tunnel is set up. `Debug` never shows the keys.
#[derive(Clone)]
pub struct WgConfig {
    pub private_key: StaticSecret,
    pub peer_public_key: PublicKey,
    pub preshared_key: Option<[u8; 32]>,
    /// Our address and port inside the tunnel (the node's IAX2 address there).
    pub address: SocketAddrV4,
    /// Where the outer UDP socket binds.
    pub listen: SocketAddr,
    /// The peer's outer address; None to wait for the peer to make contact.
    pub endpoint: Option<SocketAddr>,
    /// Inner addresses routed to the peer and accepted from it.
    pub allowed_ips: Vec<Ipv4Net>,
    /// Seconds between keepalives (None: off). With it the tunnel also keeps itself up:
    /// a handshake at start and again whenever the session lapses.
    pub persistent_keepalive: Option<u16>,
}

impl fmt::Debug for WgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WgConfig")
            .field("private_key", &"***")
            .field("peer_public_key", &self.peer_public_key.as_bytes())
            .field("preshared_key", &self.preshared_key.map(|_| "***"))
            .field("address", &self.address)
            .field("listen", &self.listen)
            .field("endpoint", &self.endpoint)
            .field("allowed_ips", &self.allowed_ips)
            .field("persistent_keepalive", &self.persistent_keepalive)
            .finish()
    }
}

/// The public key of a private key (both raw 32 bytes; the private one is clamped as X25519
/// requires, as `wg pubkey` does).
pub fn public_key(private: [u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(private)).to_bytes()
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    tx_bytes: u64,
    rx_bytes: u64,
    handshakes: u64,
    handshake_attempts: u64,
    dropped_outer: u64,
    dropped_inner: u64,
    no_route: u64,
}

/// Everything the tunnel changes, behind one lock (the engine thread and Python's send both
/// encrypt).
struct State {
    tunn: Tunn,
    endpoint: Option<SocketAddr>,
    /// IPv4 identification of the next packet.
    ip_id: u16,
    /// boringtun's output for decapsulation and timers.
    scratch: Vec<u8>,
    /// The inner packet being encrypted.
    plain: Vec<u8>,
    /// The encrypted datagrams of one send, back to back.
    arena: Vec<u8>,
    /// Initiations sent since the last session began.
    initiating: bool,
    /// A handshake is due at the first upkeep (keepalive configured, endpoint known).
    kick: bool,
    counts: Counts,
    reported: TunnelState,
}

/// What happened to one datagram on its way out.
enum Sealed {
    /// Encrypted into `arena[start..start + len]`.
    Ready {
        start: usize,
        len: usize,
    },
    /// Queued inside boringtun until a handshake completes (the initiation it asked for, if
    /// any, has been sent).
    Queued,
    NoRoute,
    Failed,
}

/// What became of one outer datagram.
enum Fate {
    /// Authenticated as the peer's (its data, or a handshake completed with it).
    Authenticated,
    /// Valid but proving nothing (a cookie reply, a repeated handshake).
    Accepted,
    /// Authenticated, but the packet inside is not for us.
    Refused,
    /// Garbage, or not from the peer.
    Dropped,
}

/// The engine's transport through a WireGuard tunnel to one peer.
pub struct WgTransport {
    outer: UdpTransport,
    address: SocketAddrV4,
    allowed: Vec<Ipv4Net>,
    keepalive: bool,
    public_key: [u8; 32],
    state: Mutex<State>,
    /// The outer socket's receive batch (the engine thread's only).
    rx: Mutex<RecvBatch>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A session index base that differs between runs, so a restarted node's indices do not
/// collide with the ones its peer still remembers (std's hasher keys are random per process).
fn random_index() -> u32 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    (h.finish() & 0x00ff_ffff) as u32
}

impl WgTransport {
    /// Bind the outer socket (buffers sized for `legs` legs) and set up the tunnel.
    pub fn bind(config: WgConfig, legs: usize) -> io::Result<WgTransport> {
        let outer = UdpTransport::bind(config.listen, legs)?;
        let public_key = PublicKey::from(&config.private_key).to_bytes();
        let keepalive = config.persistent_keepalive.filter(|&s| s > 0);
        let tunn = Tunn::new(
            config.private_key,
            config.peer_public_key,
            config.preshared_key,
            keepalive,
            random_index(),
            None,
        );
        Ok(WgTransport {
            outer,
            address: config.address,
            allowed: config.allowed_ips,
            keepalive: keepalive.is_some(),
            public_key,
            state: Mutex::new(State {
                tunn,
                endpoint: config.endpoint,
                ip_id: 0,
                scratch: vec![0; SCRATCH],
                plain: Vec::with_capacity(SLOT),
                arena: Vec::with_capacity(BATCH * 256),
                initiating: false,
                kick: keepalive.is_some() && config.endpoint.is_some(),
                counts: Counts::default(),
                reported: TunnelState::Down,
            }),
            rx: Mutex::new(RecvBatch::new()),
        })
    }

    /// The outer socket's address (what the peer's endpoint must name).
    pub fn outer_addr(&self) -> SocketAddr {
        self.outer.local_addr()
    }

    fn routed(&self, to: SocketAddr) -> Option<SocketAddrV4> {
        match to {
            SocketAddr::V4(v4) if self.allowed.iter().any(|n| n.contains(*v4.ip())) => Some(v4),
            _ => None,
        }
    }

    /// Send one outer datagram to the peer's endpoint, counting it; initiations are noted.
    fn send_outer(&self, counts: &mut Counts, initiating: &mut bool, pkt: &[u8], to: SocketAddr) {
        if pkt.first() == Some(&HANDSHAKE_INIT) {
            counts.handshake_attempts += 1;
            *initiating = true;
        }
        if self.outer.send_to(pkt, to).is_ok() {
            counts.tx_bytes += pkt.len() as u64;
        }
    }

    /// Encrypt one datagram into the arena.
    fn seal(&self, st: &mut State, to: SocketAddr, head: &[u8], body: &[u8]) -> Sealed {
        let Some(dst) = self.routed(to) else {
            st.counts.no_route += 1;
            return Sealed::NoRoute;
        };
        if head.len() + body.len() > MAX_DATAGRAM {
            return Sealed::Failed;
        }
        let len = ipv4::packet_len(head.len() + body.len());
        let padded = len.next_multiple_of(PADDING);
        st.plain.clear();
        st.plain.resize(padded, 0);
        st.ip_id = st.ip_id.wrapping_add(1);
        if ipv4::write_udp(&mut st.plain, self.address, dst, st.ip_id, head, body).is_err() {
            return Sealed::Failed;
        }
        let start = st.arena.len();
        st.arena
            .resize(start + (padded + DATA_OVERHEAD).max(HANDSHAKE_INIT_LEN), 0);
        let out = st.arena.get_mut(start..).unwrap_or(&mut []);
        let sealed = match st.tunn.encapsulate(&st.plain, out) {
            TunnResult::WriteToNetwork(pkt) if pkt.first() == Some(&DATA) => Some(pkt.len()),
            TunnResult::WriteToNetwork(pkt) => {
                // No session: boringtun queued the datagram and asks for a handshake.
                let pkt: &[u8] = pkt;
                if let Some(endpoint) = st.endpoint {
                    self.send_outer(&mut st.counts, &mut st.initiating, pkt, endpoint);
                }
                None
            }
            _ => None,
        };
        match sealed {
            Some(n) => {
                st.arena.truncate(start + n);
                Sealed::Ready { start, len: n }
            }
            None => {
                st.arena.truncate(start);
                Sealed::Queued
            }
        }
    }

    /// One outer datagram: decrypt it, answer what needs an answer, keep the IAX2 inside.
    fn receive_outer(&self, st: &mut State, data: &[u8], meta: &RecvMeta, batch: &mut RecvBatch) {
        let kind = data.first().copied();
        let from = meta.from;
        let State {
            tunn,
            scratch,
            counts,
            endpoint,
            initiating,
            ..
        } = st;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut flush = false;
            let fate = match tunn.decapsulate(Some(from.ip()), data, scratch) {
                // A keepalive that decrypted; or a cookie reply, which proves nothing about
                // where the peer is.
                TunnResult::Done if kind == Some(DATA) => Fate::Authenticated,
                TunnResult::Done => Fate::Accepted,
                TunnResult::Err(_) => Fate::Dropped,
                TunnResult::WriteToNetwork(pkt) => {
                    let answer = pkt.first().copied();
                    // A response to their initiation, or the keepalive confirming ours; a
                    // cookie (boringtun under load) authenticates nothing.
                    let completed = (kind == Some(HANDSHAKE_INIT)
                        && answer == Some(HANDSHAKE_RESP))
                        || kind == Some(HANDSHAKE_RESP);
                    if completed {
                        counts.handshakes += 1;
                        *initiating = false;
                    }
                    if self.outer.send_to(pkt, from).is_ok() {
                        counts.tx_bytes += pkt.len() as u64;
                    }
                    flush = true;
                    if completed {
                        Fate::Authenticated
                    } else {
                        Fate::Accepted
                    }
                }
                TunnResult::WriteToTunnelV4(pkt, _) => match self.deliver(pkt, meta, batch) {
                    Ok(()) => Fate::Authenticated,
                    Err(()) => Fate::Refused,
                },
                TunnResult::WriteToTunnelV6(..) => Fate::Refused,
            };
            if matches!(fate, Fate::Authenticated | Fate::Refused) {
                // WireGuard roaming: the peer is where its last authenticated packet came from.
                *endpoint = Some(from);
            }
            if flush {
                for _ in 0..MAX_FLUSH {
                    match tunn.decapsulate(None, &[], scratch) {
                        TunnResult::WriteToNetwork(pkt) => {
                            let to = endpoint.unwrap_or(from);
                            if self.outer.send_to(pkt, to).is_ok() {
                                counts.tx_bytes += pkt.len() as u64;
                            }
                        }
                        _ => break,
                    }
                }
            }
            fate
        }));
        let c = &mut st.counts;
        match outcome {
            Ok(Fate::Authenticated | Fate::Accepted) => c.rx_bytes += data.len() as u64,
            Ok(Fate::Refused) => {
                c.rx_bytes += data.len() as u64;
                c.dropped_inner += 1;
            }
            Ok(Fate::Dropped) | Err(_) => c.dropped_outer += 1,
        }
    }

    /// An authenticated inner packet: into `batch` when it is UDP from an allowed source to us.
    fn deliver(&self, pkt: &[u8], meta: &RecvMeta, batch: &mut RecvBatch) -> Result<(), ()> {
        let d = ipv4::parse_udp(pkt).map_err(|_| ())?;
        if d.dst != self.address || !self.allowed.iter().any(|n| n.contains(*d.src.ip())) {
            return Err(());
        }
        if batch.push(d.payload, SocketAddr::V4(d.src), meta.age) {
            Ok(())
        } else {
            Err(())
        }
    }

    fn state_of(st: &State) -> TunnelState {
        if st.tunn.time_since_last_handshake().is_some() {
            TunnelState::Up
        } else if st.initiating && !st.tunn.is_expired() {
            TunnelState::Handshaking
        } else {
            TunnelState::Down
        }
    }

    /// Start a handshake now (a forced one even when one is under way).
    fn initiate(&self, st: &mut State) {
        let Some(to) = st.endpoint else { return };
        let State {
            tunn,
            scratch,
            counts,
            initiating,
            ..
        } = st;
        if let TunnResult::WriteToNetwork(pkt) = tunn.format_handshake_initiation(scratch, false) {
            self.send_outer(counts, initiating, pkt, to);
        }
    }
}

impl Transport for WgTransport {
    fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.address)
    }

    fn poll_fd(&self) -> RawFd {
        self.outer.poll_fd()
    }

    fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.clear();
        let mut outer = lock(&self.rx);
        loop {
            let n = self.outer.recv_batch(&mut outer)?;
            if n == 0 {
                break;
            }
            let mut st = lock(&self.state);
            for (data, meta) in outer.iter() {
                // An empty datagram would read as boringtun's "call again" and flush its queue.
                if meta.truncated || data.is_empty() {
                    st.counts.dropped_outer += 1;
                    continue;
                }
                self.receive_outer(&mut st, data, meta, batch);
            }
            drop(st);
            // Handshakes and keepalives yield nothing for the engine: read on rather than
            // report an empty batch while datagrams wait.
            if !batch.is_empty() || n < BATCH {
                break;
            }
        }
        Ok(batch.len())
    }

    fn send_batch(&self, out: &[OutDatagram<'_>]) -> SendReport {
        let mut report = SendReport::default();
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        st.arena.clear();
        let mut ready: Vec<(usize, usize)> = Vec::with_capacity(out.len());
        for d in out {
            match self.seal(st, d.to, d.head, d.body) {
                Sealed::Ready { start, len } => {
                    ready.push((start, len));
                    report.bytes += d.len() as u64;
                }
                Sealed::Queued => {
                    report.sent += 1;
                    report.bytes += d.len() as u64;
                }
                Sealed::NoRoute | Sealed::Failed => report.failed += 1,
            }
        }
        let Some(endpoint) = st.endpoint else {
            report.failed += ready.len() as u64;
            return report;
        };
        let datagrams: Vec<OutDatagram<'_>> = ready
            .iter()
            .map(|&(start, len)| OutDatagram {
                to: endpoint,
                head: st.arena.get(start..start + len).unwrap_or(&[]),
                body: &[],
            })
            .collect();
        let r = self.outer.send_batch(&datagrams);
        st.counts.tx_bytes += r.bytes;
        report.sent += r.sent;
        report.failed += r.failed;
        report.calls += r.calls;
        report
    }

    fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()> {
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        st.arena.clear();
        match self.seal(st, to, data, &[]) {
            Sealed::Ready { start, len } => {
                let Some(endpoint) = st.endpoint else {
                    return Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        "the tunnel's peer has no endpoint yet",
                    ));
                };
                let pkt = st.arena.get(start..start + len).unwrap_or(&[]);
                self.outer.send_to(pkt, endpoint)?;
                st.counts.tx_bytes += len as u64;
                Ok(())
            }
            Sealed::Queued => Ok(()),
            Sealed::NoRoute => Err(io::Error::new(
                io::ErrorKind::HostUnreachable,
                format!("{to} is outside the tunnel's allowed IPs"),
            )),
            Sealed::Failed => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a datagram of {} bytes is longer than the tunnel carries ({MAX_DATAGRAM})",
                    data.len()
                ),
            )),
        }
    }

    fn stats(&self) -> TransportStats {
        self.outer.stats()
    }

    fn needs_upkeep(&self) -> bool {
        // Handshakes, keepalives and rekeys run on timers.
        true
    }

    fn maintain(&self) -> bool {
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        if std::mem::take(&mut st.kick) {
            self.initiate(st);
        }
        let timers = {
            let State {
                tunn,
                scratch,
                counts,
                initiating,
                endpoint,
                ..
            } = &mut *st;
            match tunn.update_timers(scratch) {
                TunnResult::WriteToNetwork(pkt) => {
                    if let Some(to) = *endpoint {
                        self.send_outer(counts, initiating, pkt, to);
                    }
                    None
                }
                TunnResult::Err(e) => Some(e),
                _ => None,
            }
        };
        // Given up after 90 s of unanswered initiations, or a session 9 minutes without new
        // keys: with a keepalive the node wants its tunnel up, so it starts over (as the
        // kernel's keepalive does); without, the next datagram to send starts it.
        if matches!(timers, Some(WireGuardError::ConnectionExpired)) && self.keepalive {
            self.initiate(st);
        }
        let now = Self::state_of(st);
        if now == TunnelState::Up {
            st.initiating = false;
        }
        let changed = now != st.reported;
        st.reported = now;
        changed
    }

    fn tunnel(&self) -> Option<TunnelStats> {
        let st = lock(&self.state);
        let c = st.counts;
        Some(TunnelStats {
            state: Self::state_of(&st),
            listen: self.outer.local_addr(),
            endpoint: st.endpoint,
            last_handshake: st.tunn.time_since_last_handshake(),
            handshakes: c.handshakes,
            handshake_attempts: c.handshake_attempts,
            tx_bytes: c.tx_bytes,
            rx_bytes: c.rx_bytes,
            dropped_outer: c.dropped_outer,
            dropped_inner: c.dropped_inner,
            no_route: c.no_route,
            public_key: self.public_key,
        })
    }
}

#[cfg(test)]
mod tests;
