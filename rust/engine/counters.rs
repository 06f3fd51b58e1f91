//! What the engine counts: datagrams, queues, tick lateness and the local radio's frames.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::LATENESS_WINDOW;

/// Counters kept by the socket thread; read with [`Engine::counters`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) datagrams_in: AtomicU64,
    pub(super) bytes_in: AtomicU64,
    pub(super) malformed: AtomicU64,
    pub(super) full_in: AtomicU64,
    pub(super) mini_in: AtomicU64,
    pub(super) trunk_in: AtomicU64,
    pub(super) video_dropped: AtomicU64,
    pub(super) media_unrouted: AtomicU64,
    pub(super) queue_overflow: AtomicU64,
    pub(super) datagrams_out: AtomicU64,
    pub(super) bytes_out: AtomicU64,
    pub(super) send_errors: AtomicU64,
    pub(super) recv_errors: AtomicU64,
    pub(super) truncated: AtomicU64,
    pub(super) recv_calls: AtomicU64,
    pub(super) send_calls: AtomicU64,
    pub(super) wakeups: AtomicU64,
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
    /// Datagrams longer than the engine reads whole (counted, never parsed).
    pub truncated: u64,
    /// Datagrams the kernel dropped because the socket's receive buffer was full.
    pub kernel_drops: u64,
    /// System calls that read (`recvmmsg`) and sent a tick's output (`sendmmsg`).
    pub recv_calls: u64,
    pub send_calls: u64,
    /// Times the engine thread woke (a tick, a readable socket, or a drain while busy).
    pub wakeups: u64,
    /// Socket buffer sizes the kernel granted, in bytes.
    pub rcvbuf_bytes: u64,
    pub sndbuf_bytes: u64,
}

impl Counters {
    pub(super) fn snapshot(&self) -> CounterSnapshot {
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
            truncated: r(&self.truncated),
            recv_calls: r(&self.recv_calls),
            send_calls: r(&self.send_calls),
            wakeups: r(&self.wakeups),
            ..CounterSnapshot::default()
        }
    }
}

pub(super) fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// Tick timing, for the counters: how late each tick ran against its deadline.
#[derive(Debug)]
pub(super) struct TickStats {
    pub(super) ticks: u64,
    pub(super) skipped: u64,
    pub(super) lateness_us: Vec<u32>,
    pub(super) next: usize,
    pub(super) max_us: u32,
}

impl TickStats {
    pub(super) fn record(&mut self, late: Duration) {
        let us = u32::try_from(late.as_micros()).unwrap_or(u32::MAX);
        self.ticks += 1;
        self.max_us = self.max_us.max(us);
        if self.lateness_us.len() < LATENESS_WINDOW {
            self.lateness_us.push(us);
        } else if let Some(slot) = self.lateness_us.get_mut(self.next) {
            *slot = us;
        }
        self.next = (self.next + 1) % LATENESS_WINDOW;
    }
}

/// Tick timing as reported: count, restarts after stalls, lateness percentiles (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickSnapshot {
    pub ticks: u64,
    pub skipped: u64,
    pub p50_us: u32,
    pub p99_us: u32,
    pub max_us: u32,
}

/// Lengths of the engine's queues at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepths {
    pub frames: usize,
    pub events: usize,
    pub commands: usize,
    pub speaker: usize,
}

/// What happened to the local radio's frames, per direction: "rx" is the radio's receiver
/// (captured, toward the network), "tx" its transmitter (played). Counted in 20 ms frames while a
/// device is attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocalCounters {
    /// Captured frames handed to the engine.
    pub rx_frames: u64,
    /// Ticks that needed a captured frame (the local radio in the conference, or keyed) and
    /// found none (the device delivered late; the tick went on without it).
    pub rx_late: u64,
    /// Captured frames discarded because the engine had fallen behind by a full queue.
    pub rx_dropped: u64,
    /// Frames the device took to play.
    pub tx_frames: u64,
    /// Frames the device needed while the local radio was in the conference and none was ready
    /// (the engine was late; silence was played in their place).
    pub tx_late: u64,
    /// Frames for the device discarded because it had fallen behind by a full queue.
    pub tx_dropped: u64,
}
