//! The engine: the one thread that owns the IAX2 UDP socket.
//!
//! Datagrams come and go through a [`Transport`] (`transport.rs`: batched `recvmmsg` and
//! `sendmmsg` on a UDP socket, or `wireguard.rs`: the same through a userspace WireGuard
//! tunnel), so the socket I/O is one small interface. Every datagram is parsed here, in Rust. Malformed datagrams are counted and
//! dropped. Full frames (signalling, and the rare full voice frame) are queued for Python, which
//! drains them in batches when the wakeup descriptor becomes readable; mini and trunk voice
//! frames stay in Rust and never cost a Python call. Python sends through [`Engine::send_to`], which writes straight
//! to the shared socket from the caller's thread.
//!
//! The thread wakes for each datagram while the load is light, so signalling reaches Python at
//! once. Under load (at least [`BUSY_DATAGRAMS`] in the last tick) it stops waking per datagram
//! and drains the socket every [`BUSY_DRAIN`] and just before each tick instead: media frames
//! are only consumed by the tick, and each keeps the kernel's receive time, so reading them in
//! batches adds no latency and the jitter buffer still sees their true arrival.
//!
//! This is the only module that starts the engine thread or reads the clock (the transport
//! reads the wall clock only to age the kernel's receive stamps).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::codec::Codec;
use crate::device::{DeviceEdge, DeviceError};
use crate::frame::{self, Frame, FullFrame};
use crate::jitter::{ControlKind, JitterStats};
use crate::media::{LegMode, LegSpec, MediaEvent, RxKeying, Station, TickOutput, FRAME_MS};
use crate::parrot::ParrotSettings;
use crate::player::Destination;
use crate::transport::{OutDatagram, RecvBatch, Transport, TunnelStats, UdpTransport};

/// Datagrams in one tick from which the engine counts as busy and drains on a timer.
pub const BUSY_DATAGRAMS: u64 = 32;

/// Interval between two drains of the socket while busy. Short enough that a tick's worth of
/// datagrams at 2,000 legs (~2,000) fits any receive buffer the engine asks for several times
/// over; long enough that each wake reads hundreds of datagrams in a handful of syscalls.
pub const BUSY_DRAIN: Duration = Duration::from_millis(5);

/// The media clock.
const TICK: Duration = Duration::from_millis(FRAME_MS as u64);

/// A tick this late (the host stalled) is not caught up with a burst: the clock restarts.
const MAX_TICK_LAG: Duration = Duration::from_millis(5 * FRAME_MS as u64);

/// Tick lateness samples kept for the percentiles in the counters (one minute of ticks).
const LATENESS_WINDOW: usize = 3000;

/// Ticks between two publications of the legs' jitter statistics. Their readers (a PONG per
/// call every 21 s, `GET /stats`) are rare, so half a second old is fresh enough.
const STATS_EVERY_TICKS: u32 = 25;

/// Ticks between two calls of the transport's upkeep ([`Transport::maintain`]: a tunnel's
/// handshake and keepalive timers, which count in seconds).
const MAINTAIN_EVERY_TICKS: u32 = 5;

/// Frames of local microphone or speaker audio buffered between the device and the engine.
const LOCAL_QUEUE_FRAMES: usize = 4;

/// Engine settings fixed at start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where the UDP socket binds.
    pub bind: SocketAddr,
    /// The station rate the conference mixes at (8000 or 16000).
    pub rate: u32,
    /// Mix-minus (true) or full mix.
    pub mix_minus: bool,
    /// Full frames waiting for Python beyond this many are dropped and counted: if the asyncio
    /// loop stalls, memory stays bounded and the stall is visible in the counters.
    pub queue_limit: usize,
    /// Legs the node is configured to carry: the socket buffers are sized for this many.
    pub legs: usize,
}

impl EngineConfig {
    pub fn new(bind: SocketAddr) -> Self {
        EngineConfig {
            bind,
            rate: 8000,
            mix_minus: true,
            queue_limit: 4096,
            legs: 64,
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
    /// A station rate other than 8000 or 16000.
    Rate(u32),
    /// A sound card the engine cannot take.
    Device(DeviceError),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Bind { addr, source } => write!(f, "cannot bind UDP {addr}: {source}"),
            EngineError::Io(e) => write!(f, "engine I/O error: {e}"),
            EngineError::Stopped => write!(f, "the engine is stopped"),
            EngineError::Rate(r) => write!(f, "station rate {r} Hz (accepted: 8000, 16000)"),
            EngineError::Device(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Bind { source, .. } => Some(source),
            EngineError::Io(e) => Some(e),
            EngineError::Device(e) => Some(e),
            EngineError::Stopped | EngineError::Rate(_) => None,
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
    truncated: AtomicU64,
    recv_calls: AtomicU64,
    send_calls: AtomicU64,
    wakeups: AtomicU64,
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
            truncated: r(&self.truncated),
            recv_calls: r(&self.recv_calls),
            send_calls: r(&self.send_calls),
            wakeups: r(&self.wakeups),
            ..CounterSnapshot::default()
        }
    }
}

fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// A command from Python to the media path, applied by the engine thread.
#[derive(Debug, Clone)]
pub enum Command {
    AddLeg(LegSpec),
    RemoveLeg(u16),
    SetLegMode(u16, LegMode),
    SetLegCodec(u16, Codec),
    SetLegKeying(u16, RxKeying),
    /// Payload of a full voice frame Python received and acknowledged.
    PushVoice {
        callno: u16,
        codec: Codec,
        ts: u32,
        payload: Vec<u8>,
    },
    /// A control event that must stay ordered with the audio around it.
    PushControl {
        callno: u16,
        kind: ControlKind,
        ts: u32,
        payload: Vec<u8>,
    },
    SetMixMinus(bool),
    SetLocalRadio(bool),
    /// The operator's push-to-talk: the local source talks into every leg until unkeyed.
    SetLocalKeyed(bool),
    /// In-band DTMF detection on a leg's received audio.
    SetLegDtmf(u16, bool),
    /// In-band DTMF detection on the local radio's receive audio.
    SetLocalDtmf(bool),
    /// Play an announcement clip (station rate) from the next tick; `keys_local` only for the
    /// station ID under `cw_keys_when_idle`.
    Play {
        id: u32,
        pcm: Vec<i16>,
        destination: Destination,
        keys_local: bool,
    },
    /// Stop an announcement clip.
    StopPlay(u32),
    /// Parrot mode with these settings, or the conference (`None`).
    SetParrot(Option<ParrotSettings>),
    /// The local receiver has a carrier detector: its audio is heard only while keyed.
    SetLocalGated(bool),
}

/// Something the engine reports to Python, drained with [`Engine::drain_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    Media(MediaEvent),
    /// VOX on the local receiver's audio opened (`true`) or closed: reported by the device
    /// thread, as the audio is captured.
    Vox(bool),
    /// A command that could not be applied (e.g. it names a leg that is gone).
    CommandFailed(String),
    /// The transport's tunnel changed state (see [`Engine::tunnel`]).
    TunnelChanged,
}

/// Tick timing, for the counters: how late each tick ran against its deadline.
#[derive(Debug)]
struct TickStats {
    ticks: u64,
    skipped: u64,
    lateness_us: Vec<u32>,
    next: usize,
    max_us: u32,
}

impl TickStats {
    fn record(&mut self, late: Duration) {
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

/// The local radio's audio between the device thread and the engine (station rate, i16).
#[derive(Debug, Default)]
struct LocalPort {
    mic: VecDeque<Vec<i16>>,
    speaker: VecDeque<Vec<i16>>,
    /// Frame buffers to reuse, so steady state allocates nothing.
    spare: Vec<Vec<i16>>,
    /// Devices attached (a device switch overlaps the old and the new one briefly).
    attached: u32,
    /// Whether the local radio was a conference member at the last tick.
    local_on: bool,
    /// A frame has gone each way since the device attached: only then can one be late.
    mic_seen: bool,
    speaker_seen: bool,
    counters: LocalCounters,
}

impl LocalPort {
    fn buffer(&mut self, frame: &[i16]) -> Vec<i16> {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        buf
    }

    fn recycle(&mut self, buf: Vec<i16>) {
        if self.spare.len() < 2 * LOCAL_QUEUE_FRAMES + 2 {
            self.spare.push(buf);
        }
    }

    fn clear(&mut self) {
        while let Some(b) = self.mic.pop_front() {
            self.recycle(b);
        }
        while let Some(b) = self.speaker.pop_front() {
            self.recycle(b);
        }
        self.mic_seen = false;
        self.speaker_seen = false;
    }

    /// A captured frame from the device.
    fn push_mic(&mut self, frame: &[i16]) {
        if self.mic.len() >= LOCAL_QUEUE_FRAMES {
            if let Some(old) = self.mic.pop_front() {
                self.recycle(old);
            }
            self.counters.rx_dropped += 1;
        }
        let buf = self.buffer(frame);
        self.mic.push_back(buf);
        self.mic_seen = true;
        self.counters.rx_frames += 1;
    }

    /// The next frame for the device to play, into `dst`; false when none is ready.
    fn pull_speaker(&mut self, dst: &mut [i16]) -> bool {
        match self.speaker.pop_front() {
            Some(frame) => {
                let fits = frame.len() == dst.len();
                if fits {
                    dst.copy_from_slice(&frame);
                    self.counters.tx_frames += 1;
                }
                self.recycle(frame);
                fits
            }
            None => {
                if self.local_on && self.speaker_seen && self.attached > 0 {
                    self.counters.tx_late += 1;
                }
                false
            }
        }
    }

    /// The engine's side of a tick: the captured frame for it, if any.
    fn take_mic(&mut self, wanted: bool) -> Option<Vec<i16>> {
        let frame = self.mic.pop_front();
        if frame.is_none() && wanted && self.mic_seen && self.attached > 0 {
            self.counters.rx_late += 1;
        }
        frame
    }

    /// The engine's side of a tick: what the local radio hears, for the device to play.
    fn put_speaker(&mut self, local_on: bool, frame: &[i16]) {
        self.local_on = local_on;
        if !local_on || self.attached == 0 {
            return;
        }
        if self.speaker.len() >= LOCAL_QUEUE_FRAMES {
            if let Some(old) = self.speaker.pop_front() {
                self.recycle(old);
            }
            self.counters.tx_dropped += 1;
        }
        let buf = self.buffer(frame);
        self.speaker.push_back(buf);
        self.speaker_seen = true;
    }
}

/// State shared by the socket thread and the handle Python holds.
struct Shared {
    transport: Box<dyn Transport>,
    queue: Mutex<VecDeque<Received>>,
    events: Mutex<VecDeque<EngineEvent>>,
    commands: Mutex<Vec<Command>>,
    commands_pending: AtomicBool,
    local: Mutex<LocalPort>,
    ticks: Mutex<TickStats>,
    jitter: Mutex<Vec<(u16, JitterStats)>>,
    queue_limit: usize,
    frame_len: usize,
    counters: Counters,
    stop: AtomicBool,
    /// Written (one byte) when a queue goes from empty to non-empty.
    wake_tx: UnixStream,
}

/// A lock that survives a panic elsewhere: every critical section here is a single push, take
/// or copy, so a poisoned lock never guards half-updated data.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn wake(&self) {
        // A full pipe means a wakeup is already pending: losing this byte loses nothing.
        let _ = (&self.wake_tx).write(&[1]);
    }

    fn enqueue(&self, item: Received) {
        let was_empty = {
            let mut q = lock(&self.queue);
            if q.len() >= self.queue_limit {
                bump(&self.counters.queue_overflow, 1);
                return;
            }
            let was_empty = q.is_empty();
            q.push_back(item);
            was_empty
        };
        if was_empty {
            self.wake();
        }
    }

    fn emit(&self, events: impl Iterator<Item = EngineEvent>) {
        let was_empty;
        {
            let mut q = lock(&self.events);
            was_empty = q.is_empty();
            for e in events {
                if q.len() >= self.queue_limit {
                    bump(&self.counters.queue_overflow, 1);
                    continue;
                }
                q.push_back(e);
            }
            if q.is_empty() {
                return;
            }
        }
        if was_empty {
            self.wake();
        }
    }
}

/// The engine thread's own state: the media station is touched by nobody else.
struct Worker {
    shared: Arc<Shared>,
    station: Station,
    epoch: Instant,
    tick_out: TickOutput,
    media_events: Vec<MediaEvent>,
    /// Ticks since the jitter statistics were last published, and the leg count then.
    stats_age: u32,
    stats_legs: usize,
    /// Datagrams read since the last tick, and whether the last tick had enough to be busy.
    tick_datagrams: u64,
    busy: bool,
    /// Ticks since the transport's last upkeep.
    maintain_age: u32,
}

impl Worker {
    fn now_ms(&self, at: Instant) -> u64 {
        u64::try_from(at.duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    fn apply_commands(&mut self, now_ms: u64) {
        if !self.shared.commands_pending.swap(false, Ordering::AcqRel) {
            return;
        }
        let commands = std::mem::take(&mut *lock(&self.shared.commands));
        let mut failures = Vec::new();
        for cmd in commands {
            let result = match cmd {
                Command::AddLeg(spec) => self.station.add_leg(spec, now_ms),
                Command::RemoveLeg(c) => self.station.remove_leg(c),
                Command::SetLegMode(c, m) => self.station.set_leg_mode(c, m),
                Command::SetLegCodec(c, codec) => self.station.set_leg_codec(c, codec),
                Command::SetLegKeying(c, k) => {
                    self.station.set_leg_keying(c, k, &mut self.media_events)
                }
                Command::PushVoice {
                    callno,
                    codec,
                    ts,
                    payload,
                } => self
                    .station
                    .push_full_voice(callno, codec, ts, &payload, now_ms),
                Command::PushControl {
                    callno,
                    kind,
                    ts,
                    payload,
                } => self
                    .station
                    .push_control(callno, kind, ts, &payload, now_ms),
                Command::SetMixMinus(on) => {
                    self.station.set_mix_minus(on);
                    Ok(())
                }
                Command::SetLocalRadio(on) => {
                    self.station.set_local_radio(on);
                    Ok(())
                }
                Command::SetLocalKeyed(on) => {
                    self.station.set_local_keyed(on);
                    Ok(())
                }
                Command::SetLegDtmf(c, on) => self.station.set_leg_dtmf(c, on),
                Command::SetLocalDtmf(on) => self.station.set_local_dtmf(on),
                Command::Play {
                    id,
                    pcm,
                    destination,
                    keys_local,
                } => self
                    .station
                    .play(id, pcm, destination, keys_local, &mut self.media_events),
                Command::StopPlay(id) => {
                    self.station.stop_playing(id, &mut self.media_events);
                    Ok(())
                }
                Command::SetParrot(settings) => {
                    self.station.set_parrot(settings);
                    Ok(())
                }
                Command::SetLocalGated(on) => {
                    self.station.set_local_gated(on);
                    Ok(())
                }
            };
            if let Err(e) = result {
                failures.push(EngineEvent::CommandFailed(e.to_string()));
            }
        }
        if !failures.is_empty() {
            self.shared.emit(failures.into_iter());
        }
        if !self.media_events.is_empty() {
            self.shared
                .emit(self.media_events.drain(..).map(EngineEvent::Media));
        }
    }

    /// Read everything waiting (up to the next tick), each datagram at its kernel arrival time.
    fn drain_socket(&mut self, batch: &mut RecvBatch, next_tick: Instant) {
        loop {
            bump(&self.shared.counters.recv_calls, 1);
            let n = match self.shared.transport.recv_batch(batch) {
                Ok(n) => n,
                // ICMP errors reported on the socket (e.g. port unreachable from an earlier
                // send) must not stop the node.
                Err(_) => {
                    bump(&self.shared.counters.recv_errors, 1);
                    return;
                }
            };
            if n == 0 {
                return;
            }
            let now = Instant::now();
            for (data, meta) in batch.iter() {
                let at = meta
                    .age
                    .and_then(|age| now.checked_sub(age))
                    .unwrap_or(now)
                    .max(self.epoch);
                let at_ms = self.now_ms(at);
                if meta.truncated {
                    let c = &self.shared.counters;
                    bump(&c.datagrams_in, 1);
                    bump(&c.truncated, 1);
                    bump(&c.malformed, 1);
                    continue;
                }
                self.handle_datagram(data, meta.from, at_ms);
            }
            self.tick_datagrams += n as u64;
            if n < crate::transport::BATCH || Instant::now() >= next_tick {
                return;
            }
        }
    }

    fn handle_datagram(&mut self, data: &[u8], from: SocketAddr, now_ms: u64) {
        let c = &self.shared.counters;
        bump(&c.datagrams_in, 1);
        bump(&c.bytes_in, data.len() as u64);
        match frame::parse(data) {
            Err(_) => bump(&c.malformed, 1),
            Ok(Frame::Full(frame)) => {
                bump(&c.full_in, 1);
                self.shared.enqueue(Received { from, frame });
            }
            Ok(Frame::Mini(mini)) => {
                bump(&c.mini_in, 1);
                if !self
                    .station
                    .on_mini(from, &mini, now_ms, &mut self.media_events)
                {
                    bump(&c.media_unrouted, 1);
                }
            }
            Ok(Frame::Trunk(trunk)) => {
                bump(&c.trunk_in, 1);
                for mini in trunk.minis() {
                    bump(&c.mini_in, 1);
                    if !self
                        .station
                        .on_mini(from, &mini, now_ms, &mut self.media_events)
                    {
                        bump(&c.media_unrouted, 1);
                    }
                }
            }
            Ok(Frame::Video(_)) => bump(&c.video_dropped, 1),
        }
        if !self.media_events.is_empty() {
            self.shared
                .emit(self.media_events.drain(..).map(EngineEvent::Media));
        }
    }

    fn tick(&mut self, now_ms: u64) {
        // The microphone is heard while the local radio is a member or the operator keys it.
        let local_on = self.station.local_radio();
        let mic_wanted = local_on || self.station.local_keyed();
        let mic = lock(&self.shared.local).take_mic(mic_wanted);
        if let Some(pcm) = mic {
            self.station.put_local(&pcm);
            lock(&self.shared.local).recycle(pcm);
        }
        self.tick_out.clear();
        self.station.tick(now_ms, &mut self.tick_out);
        if !self.tick_out.datagrams.is_empty() {
            let batch = send_batch_of(&self.tick_out);
            let r = self.shared.transport.send_batch(&batch);
            let c = &self.shared.counters;
            bump(&c.datagrams_out, r.sent);
            bump(&c.bytes_out, r.bytes);
            bump(&c.send_errors, r.failed);
            bump(&c.send_calls, r.calls);
        }
        lock(&self.shared.local)
            .put_speaker(self.station.local_speaker(), self.station.local_output());
        if !self.tick_out.events.is_empty() {
            self.shared
                .emit(self.tick_out.events.drain(..).map(EngineEvent::Media));
        }
        self.stats_age += 1;
        let legs = self.station.leg_count();
        if self.stats_age >= STATS_EVERY_TICKS || legs != self.stats_legs {
            self.station
                .fill_jitter_stats(&mut lock(&self.shared.jitter));
            self.stats_age = 0;
            self.stats_legs = legs;
        }
    }

    fn run(mut self) {
        let mut batch = RecvBatch::new();
        let mut next_tick = Instant::now() + TICK;
        let mut last_drain = Instant::now();
        let fd = self.shared.transport.poll_fd();
        while !self.shared.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            let now_ms = self.now_ms(now);
            self.apply_commands(now_ms);
            if now >= next_tick {
                // What arrived since the last read plays in this tick.
                if self.busy {
                    self.drain_socket(&mut batch, now + TICK);
                    last_drain = now;
                }
                let late = now - next_tick;
                self.tick(self.now_ms(next_tick));
                self.busy = self.tick_datagrams >= BUSY_DATAGRAMS;
                self.tick_datagrams = 0;
                self.maintain_age += 1;
                if self.maintain_age >= MAINTAIN_EVERY_TICKS {
                    self.maintain_age = 0;
                    if self.shared.transport.maintain() {
                        self.shared
                            .emit(std::iter::once(EngineEvent::TunnelChanged));
                    }
                }
                let mut stats = lock(&self.shared.ticks);
                stats.record(late);
                next_tick += TICK;
                if late > MAX_TICK_LAG {
                    stats.skipped += 1;
                    next_tick = now + TICK;
                }
                continue;
            }
            if self.busy {
                let drain_at = (last_drain + BUSY_DRAIN).min(next_tick);
                if now < drain_at {
                    std::thread::sleep(drain_at - now);
                    bump(&self.shared.counters.wakeups, 1);
                    continue;
                }
                self.drain_socket(&mut batch, next_tick);
                last_drain = now;
                continue;
            }
            let readable = wait_readable(fd, next_tick - now);
            bump(&self.shared.counters.wakeups, 1);
            if readable {
                self.drain_socket(&mut batch, next_tick);
            }
        }
    }
}

/// A tick's datagrams as the transport sends them: each mini header with its (shared) payload.
pub fn send_batch_of(out: &TickOutput) -> Vec<OutDatagram<'_>> {
    out.datagrams
        .iter()
        .map(|d| OutDatagram {
            to: d.to,
            head: &d.head,
            body: out.payload(d),
        })
        .collect()
}

/// Wait until `fd` is readable or `timeout` has passed; true when readable.
///
/// `ppoll` takes a nanosecond timeout and sleeps on a high-resolution timer, where a socket
/// receive timeout is rounded up to the kernel's tick (4 ms at HZ=250) and would make the
/// 20 ms media clock late by that much on every tick.
fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // c_long is 32 bits on 32-bit ARM hosts, where the conversion is fallible.
    #[allow(clippy::unnecessary_fallible_conversions)]
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::try_from(timeout.subsec_nanos()).unwrap_or(0),
    };
    // SAFETY: `pfd` is one valid, initialised pollfd that lives for the whole call and the
    // count passed is 1; `ts` is a valid timespec borrowed for the call; a null signal mask
    // means "leave the mask unchanged". ppoll writes only `pfd.revents`.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    n > 0 && (pfd.revents & (libc::POLLIN | libc::POLLERR)) != 0
}

/// The handle to a running engine. Dropping it stops the thread.
pub struct Engine {
    shared: Arc<Shared>,
    wake_rx: UnixStream,
    local_addr: SocketAddr,
    rate: u32,
    thread: Option<JoinHandle<()>>,
}

impl Engine {
    /// Bind the UDP socket (buffers sized for `cfg.legs`) and start the engine thread.
    pub fn start(cfg: EngineConfig) -> Result<Engine, EngineError> {
        if cfg.rate != 8000 && cfg.rate != 16000 {
            return Err(EngineError::Rate(cfg.rate));
        }
        let transport =
            UdpTransport::bind(cfg.bind, cfg.legs).map_err(|source| EngineError::Bind {
                addr: cfg.bind,
                source,
            })?;
        Self::start_with(cfg, Box::new(transport))
    }

    /// Start the engine thread on a transport built by the caller (`cfg.bind` is not used).
    pub fn start_with(
        cfg: EngineConfig,
        transport: Box<dyn Transport>,
    ) -> Result<Engine, EngineError> {
        if cfg.rate != 8000 && cfg.rate != 16000 {
            return Err(EngineError::Rate(cfg.rate));
        }
        let local_addr = transport.local_addr();
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let station = Station::new(cfg.rate, cfg.mix_minus);
        let shared = Arc::new(Shared {
            transport,
            queue: Mutex::new(VecDeque::new()),
            events: Mutex::new(VecDeque::new()),
            commands: Mutex::new(Vec::new()),
            commands_pending: AtomicBool::new(false),
            local: Mutex::new(LocalPort::default()),
            ticks: Mutex::new(TickStats {
                ticks: 0,
                skipped: 0,
                lateness_us: Vec::with_capacity(LATENESS_WINDOW),
                next: 0,
                max_us: 0,
            }),
            jitter: Mutex::new(Vec::new()),
            queue_limit: cfg.queue_limit.max(1),
            frame_len: station.frame_len(),
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            wake_tx,
        });
        let worker = Worker {
            shared: Arc::clone(&shared),
            station,
            epoch: Instant::now(),
            tick_out: TickOutput::default(),
            media_events: Vec::new(),
            stats_age: 0,
            stats_legs: 0,
            tick_datagrams: 0,
            busy: false,
            maintain_age: 0,
        };
        let thread = std::thread::Builder::new()
            .name("iax-engine".into())
            .spawn(move || worker.run())?;
        Ok(Engine {
            shared,
            wake_rx,
            local_addr,
            rate: cfg.rate,
            thread: Some(thread),
        })
    }

    /// The address the socket is bound to (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The station rate.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// A descriptor that becomes readable when full frames or events are waiting; register it
    /// with the event loop and call [`Engine::drain`] and [`Engine::drain_events`] when it fires.
    pub fn wakeup_fd(&self) -> RawFd {
        self.wake_rx.as_raw_fd()
    }

    fn clear_wakeup(&self) {
        let mut sink = [0u8; 256];
        while let Ok(n) = (&self.wake_rx).read(&mut sink) {
            if n == 0 {
                break;
            }
        }
    }

    /// Take every queued full frame, oldest first.
    ///
    /// The wakeup bytes are consumed *before* the queue is taken: a frame queued between the two
    /// steps then either lands in this batch or writes a fresh wakeup byte, so none is stranded.
    /// Call [`Engine::drain_events`] in the same wakeup: the byte is shared.
    #[must_use]
    pub fn drain(&self) -> Vec<Received> {
        self.clear_wakeup();
        lock(&self.shared.queue).drain(..).collect()
    }

    /// Take every queued engine event, oldest first (after [`Engine::drain`]).
    #[must_use]
    pub fn drain_events(&self) -> Vec<EngineEvent> {
        lock(&self.shared.events).drain(..).collect()
    }

    /// Queue a command for the media path; it is applied before the next datagram or tick.
    pub fn command(&self, cmd: Command) -> Result<(), EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        lock(&self.shared.commands).push(cmd);
        self.shared.commands_pending.store(true, Ordering::Release);
        Ok(())
    }

    /// Connect a sound card: the edge converts between its blocks and the station's frames, and
    /// the returned link exchanges them with the local radio member. Queued local audio from an
    /// earlier device is dropped.
    pub fn attach_device(&self, edge: DeviceEdge) -> Result<DeviceLink, EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        if edge.station_rate() != self.rate {
            return Err(EngineError::Device(DeviceError::Rate {
                device: edge.device_rate(),
                station: self.rate,
            }));
        }
        let mut port = lock(&self.shared.local);
        if port.attached == 0 {
            port.clear();
        }
        port.attached += 1;
        drop(port);
        Ok(DeviceLink {
            shared: Arc::clone(&self.shared),
            edge,
        })
    }

    /// What happened to the local radio's frames since the engine started.
    pub fn local_counters(&self) -> LocalCounters {
        lock(&self.shared.local).counters
    }

    /// Samples in one 20 ms frame at the station rate.
    pub fn frame_len(&self) -> usize {
        self.shared.frame_len
    }

    /// Send one datagram from the engine's socket.
    pub fn send_to(&self, data: &[u8], to: SocketAddr) -> Result<(), EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        match self.shared.transport.send_to(data, to) {
            Ok(()) => {
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
        let t = self.shared.transport.stats();
        CounterSnapshot {
            kernel_drops: t.kernel_drops,
            rcvbuf_bytes: t.rcvbuf,
            sndbuf_bytes: t.sndbuf,
            ..self.shared.counters.snapshot()
        }
    }

    /// The tunnel's health when the transport is a tunnel (`[wireguard]`), else None.
    pub fn tunnel(&self) -> Option<TunnelStats> {
        self.shared.transport.tunnel()
    }

    /// What waits in the engine's queues now: full frames and events for Python, commands
    /// for the engine thread (flat under any steady load; the soak watches them).
    pub fn queue_depths(&self) -> QueueDepths {
        QueueDepths {
            frames: lock(&self.shared.queue).len(),
            events: lock(&self.shared.events).len(),
            commands: lock(&self.shared.commands).len(),
            speaker: lock(&self.shared.local).speaker.len(),
        }
    }

    /// Tick timing since start: count, clock restarts, lateness percentiles.
    pub fn tick_stats(&self) -> TickSnapshot {
        let stats = lock(&self.shared.ticks);
        let mut sorted = stats.lateness_us.clone();
        drop(stats);
        sorted.sort_unstable();
        let pct = |p: usize| -> u32 {
            if sorted.is_empty() {
                0
            } else {
                let i = ((sorted.len() - 1) * p) / 100;
                sorted.get(i).copied().unwrap_or(0)
            }
        };
        let stats = lock(&self.shared.ticks);
        TickSnapshot {
            ticks: stats.ticks,
            skipped: stats.skipped,
            p50_us: pct(50),
            p99_us: pct(99),
            max_us: stats.max_us,
        }
    }

    /// Jitter-buffer statistics of one leg, as of the last tick.
    pub fn leg_jitter_stats(&self, callno: u16) -> Option<JitterStats> {
        lock(&self.shared.jitter)
            .iter()
            .find(|(c, _)| *c == callno)
            .map(|(_, s)| *s)
    }

    /// Jitter-buffer statistics of every leg, as of the last tick.
    pub fn jitter_stats(&self) -> Vec<(u16, JitterStats)> {
        lock(&self.shared.jitter).clone()
    }

    pub fn is_running(&self) -> bool {
        self.thread.is_some()
    }

    /// Stop the thread and wait for it (at most one tick). Idempotent.
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

/// A sound card attached to the engine: each [`exchange`](DeviceLink::exchange) hands one
/// captured block to the local radio member and fills one block to play. Dropping it detaches
/// the device.
pub struct DeviceLink {
    shared: Arc<Shared>,
    edge: DeviceEdge,
}

impl DeviceLink {
    /// One device block each way (native-endian int16 at the device rate): `input` was
    /// captured, `output` is filled with what to play.
    pub fn exchange(&mut self, input: &[u8], output: &mut [u8]) -> Result<(), DeviceError> {
        let shared = &self.shared;
        self.edge
            .capture(input, |frame| lock(&shared.local).push_mic(frame))?;
        if let Some(open) = self.edge.take_vox_change() {
            shared.emit(std::iter::once(EngineEvent::Vox(open)));
        }
        self.edge
            .playback(output, |dst| lock(&shared.local).pull_speaker(dst))
    }

    pub fn edge(&self) -> &DeviceEdge {
        &self.edge
    }

    pub fn edge_mut(&mut self) -> &mut DeviceEdge {
        &mut self.edge
    }

    /// What happened to the local radio's frames since the engine started.
    pub fn counters(&self) -> LocalCounters {
        lock(&self.shared.local).counters
    }
}

impl Drop for DeviceLink {
    fn drop(&mut self) {
        let mut port = lock(&self.shared.local);
        port.attached = port.attached.saturating_sub(1);
        if port.attached == 0 {
            port.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
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
        peer.send_to(&[0x80, 0x01, 0, 0, 0], to)
            .expect("send truncated full");
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
        assert!(matches!(
            engine.send_to(b"x", to),
            Err(EngineError::Stopped)
        ));
    }

    #[test]
    fn wakeup_fd_signals_once_per_batch() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        for i in 2..12 {
            peer.send_to(&poke(i), engine.local_addr()).expect("send");
        }
        assert!(wait_for(|| engine.counters().full_in == 10));
        // Exactly one wakeup byte is pending for the whole burst.
        let mut probe = [0u8; 16];
        assert_eq!((&engine.wake_rx).read(&mut probe).ok(), Some(1));
        assert_eq!(engine.drain().len(), 10);
        assert!(
            (&engine.wake_rx).read(&mut probe).is_err(),
            "no stale wakeup after drain"
        );
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
    fn under_load_it_reads_in_batches_on_the_clock() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let peer = UdpSocket::bind(loopback()).expect("peer");
        let to = engine.local_addr();
        // 200 datagrams every 5 ms for 0.4 s: far above BUSY_DATAGRAMS per tick.
        for _ in 0..80 {
            for _ in 0..200 {
                peer.send_to(&[0xff], to).expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Every datagram is read, or counted by the kernel as dropped (a host that stalls the
        // engine thread for long enough overflows the buffer); the last one carries the count.
        std::thread::sleep(Duration::from_millis(50));
        peer.send_to(&[0xff], to).expect("send");
        assert!(wait_for(|| {
            let c = engine.counters();
            c.datagrams_in + c.kernel_drops == 16_001
        }));
        let c = engine.counters();
        assert_eq!(c.malformed, c.datagrams_in);
        // Read per datagram (the old loop) this would be one read per datagram; in batches of
        // up to 64 while busy, a small fraction of that.
        assert!(c.recv_calls < c.datagrams_in / 4, "{c:?}");
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

    fn ticks(engine: &Engine) -> u64 {
        engine.tick_stats().ticks
    }

    #[test]
    fn a_device_counts_frames_each_way_only_while_attached() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        engine.command(Command::SetLocalRadio(true)).expect("cmd");
        // Nothing attached: the conference's output for the radio is not queued or counted.
        let t0 = ticks(&engine);
        assert!(wait_for(|| ticks(&engine) >= t0 + 8));
        assert_eq!(engine.local_counters(), LocalCounters::default());

        let mut link = engine
            .attach_device(DeviceEdge::new(48000, 8000).expect("edge"))
            .expect("attach");
        // Nobody plays: after four frames wait, each new one drops the oldest.
        assert!(wait_for(|| link.counters().tx_dropped >= 3));
        // 5 ms blocks: 240 samples at 48 kHz are 40 at 8 kHz, so four blocks per frame.
        let mic = vec![0u8; 480];
        let mut out = vec![0u8; 480];
        for _ in 0..8 {
            link.exchange(&mic, &mut out).expect("exchange");
        }
        let c = link.counters();
        assert_eq!(c.rx_frames, 2);
        assert_eq!(c.tx_frames, 2);
        // Capture faster than the engine ticks: the queue holds four and drops the oldest.
        let before = ticks(&engine);
        for _ in 0..4 * 12 {
            link.exchange(&mic, &mut out).expect("exchange");
        }
        let c = link.counters();
        assert_eq!(c.rx_frames, 14);
        let ticked = ticks(&engine) - before;
        assert!(c.rx_dropped + ticked >= 14 - 4 - 2, "{c:?}, {ticked} ticks");
        // The queue drained, then the engine ticked without a frame: the device was late.
        assert!(wait_for(|| link.counters().rx_late >= 1));
        drop(link);
        let after = engine.local_counters();
        let t1 = ticks(&engine);
        assert!(wait_for(|| ticks(&engine) >= t1 + 5));
        assert_eq!(engine.local_counters(), after);
    }

    #[test]
    fn a_keyed_local_source_wants_the_microphone_but_feeds_no_speaker() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let mut link = engine
            .attach_device(DeviceEdge::new(8000, 8000).expect("edge"))
            .expect("attach");
        // The operator keys with the local radio out of the conference.
        engine.command(Command::SetLocalKeyed(true)).expect("cmd");
        let mut out = vec![0u8; 320];
        link.exchange(&[0u8; 320], &mut out).expect("exchange");
        assert!(wait_for(|| link.counters().rx_late >= 2));
        let c = link.counters();
        assert_eq!(
            (c.rx_frames, c.tx_frames, c.tx_dropped, c.tx_late),
            (1, 0, 0, 0)
        );
    }

    #[test]
    fn vox_edges_on_the_captured_audio_are_engine_events() {
        let engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let mut edge = DeviceEdge::new(8000, 8000).expect("edge");
        edge.set_vox(Some(crate::vox::VoxConfig {
            threshold_dbfs: -30.0,
            attack_ms: 20,
            release_ms: 20,
        }))
        .expect("vox");
        let mut link = engine.attach_device(edge).expect("attach");
        let loud: Vec<u8> = (0..160)
            .flat_map(|n| if n % 2 == 0 { 8000i16 } else { -8000 }.to_ne_bytes())
            .collect();
        let mut out = vec![0u8; 320];
        link.exchange(&loud, &mut out).expect("exchange");
        link.exchange(&[0u8; 320], &mut out).expect("exchange");
        let mut vox = Vec::new();
        assert!(wait_for(|| {
            vox.extend(engine.drain_events().into_iter().filter_map(|e| match e {
                EngineEvent::Vox(open) => Some(open),
                _ => None,
            }));
            vox.len() >= 2
        }));
        assert_eq!(vox, vec![true, false]);
    }

    #[test]
    fn a_device_at_the_wrong_station_rate_is_refused() {
        let mut engine = Engine::start(EngineConfig::new(loopback())).expect("bind");
        let edge = DeviceEdge::new(48000, 16000).expect("edge");
        match engine.attach_device(edge.clone()) {
            Err(EngineError::Device(DeviceError::Rate { device, station })) => {
                assert_eq!((device, station), (48000, 8000));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        engine.stop();
        assert!(matches!(
            engine.attach_device(edge),
            Err(EngineError::Stopped)
        ));
    }
}
