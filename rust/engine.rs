//! The engine: the one thread that owns the IAX2 UDP socket.
//!
//! Every datagram is parsed here, in Rust. Malformed datagrams are counted and dropped. Full
//! frames (signalling, and the rare full voice frame) are queued for Python, which drains them in
//! batches when the wakeup descriptor becomes readable; mini and trunk voice frames stay in Rust
//! and never cost a Python call. Python sends through [`Engine::send_to`], which writes straight
//! to the shared socket from the caller's thread.
//!
//! This is the only module that starts a thread or reads the clock.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::frame::{self, Frame, FullFrame};

/// Largest datagram we read. IAX2 frames fit in one MTU, but a larger datagram must be read
/// whole so it is counted as what it is instead of being silently truncated.
const RECV_BUFFER: usize = 65_536;

/// How long the socket thread blocks in `recv_from` before it re-checks the stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Engine settings fixed at start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where the UDP socket binds.
    pub bind: SocketAddr,
    /// Full frames waiting for Python beyond this many are dropped and counted: if the asyncio
    /// loop stalls, memory stays bounded and the stall is visible in the counters.
    pub queue_limit: usize,
}

impl EngineConfig {
    pub fn new(bind: SocketAddr) -> Self {
        EngineConfig {
            bind,
            queue_limit: 4096,
        }
    }
}

/// Errors of the engine itself (socket and thread), wrapped for Python in the binding.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// The socket could not be bound.
    Bind { addr: SocketAddr, source: io::Error },
    /// Any other I/O failure (wakeup pair, thread spawn, send).
    Io(io::Error),
    /// The engine was stopped and cannot be used any more.
    Stopped,
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Bind { addr, source } => write!(f, "cannot bind UDP {addr}: {source}"),
            EngineError::Io(e) => write!(f, "engine I/O error: {e}"),
            EngineError::Stopped => write!(f, "the engine is stopped"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Bind { source, .. } => Some(source),
            EngineError::Io(e) => Some(e),
            EngineError::Stopped => None,
        }
    }
}

impl From<io::Error> for EngineError {
    fn from(e: io::Error) -> Self {
        EngineError::Io(e)
    }
}

/// One full frame received, with its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub from: SocketAddr,
    pub frame: FullFrame,
}

/// Counters kept by the socket thread; read with [`Engine::counters`].
#[derive(Debug, Default)]
struct Counters {
    datagrams_in: AtomicU64,
    bytes_in: AtomicU64,
    malformed: AtomicU64,
    full_in: AtomicU64,
    mini_in: AtomicU64,
    trunk_in: AtomicU64,
    video_dropped: AtomicU64,
    media_unrouted: AtomicU64,
    queue_overflow: AtomicU64,
    datagrams_out: AtomicU64,
    bytes_out: AtomicU64,
    send_errors: AtomicU64,
    recv_errors: AtomicU64,
}

/// A consistent-enough copy of the counters (each value is read atomically).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Every datagram read from the socket.
    pub datagrams_in: u64,
    pub bytes_in: u64,
    /// Datagrams that are not valid IAX2 (counted and dropped).
    pub malformed: u64,
    /// Full frames queued for Python (or dropped on overflow).
    pub full_in: u64,
    /// Mini voice frames, and mini frames carried inside trunk frames.
    pub mini_in: u64,
    /// Meta trunk frames.
    pub trunk_in: u64,
    /// Video mini frames: recognised and dropped (the node carries no video).
    pub video_dropped: u64,
    /// Media frames for which no leg exists (no call, or not yet answered).
    pub media_unrouted: u64,
    /// Full frames dropped because Python did not drain the queue in time.
    pub queue_overflow: u64,
    pub datagrams_out: u64,
    pub bytes_out: u64,
    pub send_errors: u64,
    pub recv_errors: u64,
}

impl Counters {
    fn snapshot(&self) -> CounterSnapshot {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CounterSnapshot {
            datagrams_in: r(&self.datagrams_in),
            bytes_in: r(&self.bytes_in),
            malformed: r(&self.malformed),
            full_in: r(&self.full_in),
            mini_in: r(&self.mini_in),
            trunk_in: r(&self.trunk_in),
            video_dropped: r(&self.video_dropped),
            media_unrouted: r(&self.media_unrouted),
            queue_overflow: r(&self.queue_overflow),
            datagrams_out: r(&self.datagrams_out),
            bytes_out: r(&self.bytes_out),
            send_errors: r(&self.send_errors),
            recv_errors: r(&self.recv_errors),
        }
    }
}

fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// State shared by the socket thread and the handle Python holds.
struct Shared {
    socket: UdpSocket,
    queue: Mutex<VecDeque<Received>>,
    queue_limit: usize,
    counters: Counters,
    stop: AtomicBool,
    /// Written (one byte) when the queue goes from empty to non-empty.
    wake_tx: UnixStream,
}

impl Shared {
    fn lock_queue(&self) -> MutexGuard<'_, VecDeque<Received>> {
        // A panic while holding the lock cannot leave the queue half-updated (push/drain are
        // single calls), so a poisoned lock is still safe to use.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enqueue(&self, item: Received) {
        let was_empty = {
            let mut q = self.lock_queue();
            if q.len() >= self.queue_limit {
                bump(&self.counters.queue_overflow, 1);
                return;
            }
            let was_empty = q.is_empty();
            q.push_back(item);
            was_empty
        };
        if was_empty {
            // A full pipe means a wakeup is already pending: losing this byte loses nothing.
            let _ = (&self.wake_tx).write(&[1]);
        }
    }

    fn handle_datagram(&self, data: &[u8], from: SocketAddr) {
        bump(&self.counters.datagrams_in, 1);
        bump(&self.counters.bytes_in, data.len() as u64);
        match frame::parse(data) {
            Err(_) => bump(&self.counters.malformed, 1),
            Ok(Frame::Full(frame)) => {
                bump(&self.counters.full_in, 1);
                self.enqueue(Received { from, frame });
            }
            Ok(Frame::Mini(_)) => {
                bump(&self.counters.mini_in, 1);
                // No media legs are routed by the engine yet: every mini frame is unrouted.
                bump(&self.counters.media_unrouted, 1);
            }
            Ok(Frame::Trunk(trunk)) => {
                bump(&self.counters.trunk_in, 1);
                let n = trunk.minis().count() as u64;
                bump(&self.counters.mini_in, n);
                bump(&self.counters.media_unrouted, n);
            }
            Ok(Frame::Video(_)) => bump(&self.counters.video_dropped, 1),
        }
    }

    fn run(&self) {
        let mut buf = vec![0u8; RECV_BUFFER];
        while !self.stop.load(Ordering::Acquire) {
            match self.socket.recv_from(&mut buf) {
                Ok((n, from)) => {
                    if let Some(data) = buf.get(..n) {
                        self.handle_datagram(data, from);
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors reported on the socket (e.g. port unreachable from an earlier
                // send) must not stop the node.
                Err(_) => bump(&self.counters.recv_errors, 1),
            }
        }
    }
}

/// The handle to a running engine. Dropping it stops the thread.
pub struct Engine {
    shared: Arc<Shared>,
    wake_rx: UnixStream,
    local_addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Engine {
    /// Bind the socket and start the engine thread.
    pub fn start(cfg: EngineConfig) -> Result<Engine, EngineError> {
        let socket = UdpSocket::bind(cfg.bind).map_err(|source| EngineError::Bind {
            addr: cfg.bind,
            source,
        })?;
        socket.set_read_timeout(Some(POLL_INTERVAL))?;
        let local_addr = socket.local_addr()?;
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            socket,
            queue: Mutex::new(VecDeque::new()),
            queue_limit: cfg.queue_limit.max(1),
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            wake_tx,
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("iax-engine".into())
            .spawn(move || worker.run())?;
        Ok(Engine {
            shared,
            wake_rx,
            local_addr,
            thread: Some(thread),
        })
    }

    /// The address the socket is bound to (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A descriptor that becomes readable when full frames are waiting; register it with the
    /// event loop and call [`Engine::drain`] when it fires.
    pub fn wakeup_fd(&self) -> RawFd {
        self.wake_rx.as_raw_fd()
    }

    /// Take every queued full frame, oldest first.
    ///
    /// The wakeup bytes are consumed *before* the queue is taken: a frame queued between the two
    /// steps then either lands in this batch or writes a fresh wakeup byte, so none is stranded.
    #[must_use]
    pub fn drain(&self) -> Vec<Received> {
        let mut sink = [0u8; 256];
        while let Ok(n) = (&self.wake_rx).read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        let mut q = self.shared.lock_queue();
        q.drain(..).collect()
    }

    /// Send one datagram from the engine's socket.
    pub fn send_to(&self, data: &[u8], to: SocketAddr) -> Result<(), EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        match self.shared.socket.send_to(data, to) {
            Ok(_) => {
                bump(&self.shared.counters.datagrams_out, 1);
                bump(&self.shared.counters.bytes_out, data.len() as u64);
                Ok(())
            }
            Err(e) => {
                bump(&self.shared.counters.send_errors, 1);
                Err(EngineError::Io(e))
            }
        }
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.shared.counters.snapshot()
    }

    pub fn is_running(&self) -> bool {
        self.thread.is_some()
    }

    /// Stop the thread and wait for it (at most one poll interval). Idempotent.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    fn wait_for<F: FnMut() -> bool>(mut cond: F) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    fn poke(scall: u16) -> Vec<u8> {
        let mut f = FullFrame::new(6, 30).expect("POKE is encodable");
        f.scall = scall;
        f.ts = 1234;
        Frame::Full(f).to_bytes()
    }

    #[test]
    fn queues_full_frames_and_counts_garbage() {
        let mut engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        let to = engine.local_addr();
        peer.send_to(&[0xff], to).expect("send garbage");
        peer.send_to(&[0x80, 0x01, 0, 0, 0], to).expect("send truncated full");
        peer.send_to(&poke(7), to).expect("send poke");
        assert!(wait_for(|| engine.counters().datagrams_in == 3));
        let got = engine.drain();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].from, peer.local_addr().expect("addr"));
        assert_eq!(got[0].frame.scall, 7);
        assert_eq!(got[0].frame.ts, 1234);
        let c = engine.counters();
        assert_eq!(c.malformed, 2);
        assert_eq!(c.full_in, 1);
        engine.stop();
        assert!(!engine.is_running());
        assert!(matches!(engine.send_to(b"x", to), Err(EngineError::Stopped)));
    }

    #[test]
    fn wakeup_fd_signals_once_per_batch() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        for i in 2..12 {
            peer.send_to(&poke(i), engine.local_addr()).expect("send");
        }
        assert!(wait_for(|| engine.counters().full_in == 10));
        // At least one wakeup byte is pending; drain consumes it with the frames.
        let mut probe = [0u8; 1];
        let pending = (&engine.wake_rx).peek(&mut probe).unwrap_or(0);
        assert_eq!(pending, 1);
        assert_eq!(engine.drain().len(), 10);
        assert!((&engine.wake_rx).peek(&mut probe).is_err(), "no stale wakeup after drain");
        assert!(engine.drain().is_empty());
    }

    #[test]
    fn queue_is_bounded() {
        let mut cfg = EngineConfig::new(loopback());
        cfg.queue_limit = 3;
        let engine = Engine::start(cfg).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        for i in 2..10 {
            peer.send_to(&poke(i), engine.local_addr()).expect("send");
        }
        assert!(wait_for(|| engine.counters().datagrams_in == 8));
        assert_eq!(engine.drain().len(), 3);
        assert_eq!(engine.counters().queue_overflow, 5);
    }

    #[test]
    fn media_frames_stay_in_rust() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        let mini = [0x00, 0x05, 0x00, 0x3c, 0xff, 0xff];
        peer.send_to(&mini, engine.local_addr()).expect("send");
        assert!(wait_for(|| engine.counters().mini_in == 1));
        assert!(engine.drain().is_empty());
        assert_eq!(engine.counters().media_unrouted, 1);
    }

    #[test]
    fn send_reaches_peer() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        peer.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let pkt = poke(9);
        engine
            .send_to(&pkt, peer.local_addr().expect("addr"))
            .expect("send");
        let mut buf = [0u8; 64];
        let (n, from) = peer.recv_from(&mut buf).expect("recv");
        assert_eq!(&buf[..n], &pkt[..]);
        assert_eq!(from, engine.local_addr());
        assert_eq!(engine.counters().datagrams_out, 1);
    }
}
