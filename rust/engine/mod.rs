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
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::codec::Codec;
use crate::device::{DeviceEdge, DeviceError};
use crate::frame::FullFrame;
use crate::jitter::{Concealment, ControlKind, JitterConfig, JitterStats};
use crate::media::{
    EchoLinkLegSpec, EchoLinkLegStats, LegMode, LegSpec, MediaEvent, RxKeying, Station, FRAME_MS,
};
use crate::parrot::ParrotSettings;
use crate::player::Destination;
use crate::transport::{Transport, TunnelStats, UdpTransport};

mod counters;
mod echolink;
mod local;
mod usrp;

pub use usrp::{lock_usrp, UsrpLink, UsrpShared};
#[cfg(test)]
mod tests;
mod worker;

pub use counters::{CounterSnapshot, LocalCounters, QueueDepths, TickSnapshot};
pub use echolink::{EchoLinkCounterSnapshot, EchoLinkDatagram, EchoLinkKind};
pub use worker::send_batch_of;

use counters::{bump, Counters, TickStats};
use echolink::{EchoLinkCounters, EchoLinkPorts};
use local::LocalPort;
use worker::Worker;

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
    /// How legs conceal lost frames.
    pub concealment: Concealment,
    /// Every leg's jitter buffer.
    pub jitter: JitterConfig,
    /// Stations (conferences) the engine mixes, each with its own legs and local radio: one
    /// per node the process hosts. Station 0 is the first node's; commands and devices that
    /// name no station address it.
    pub stations: usize,
}

impl EngineConfig {
    pub fn new(bind: SocketAddr) -> Self {
        EngineConfig {
            bind,
            rate: 8000,
            mix_minus: true,
            queue_limit: 4096,
            legs: 64,
            concealment: Concealment::default(),
            jitter: JitterConfig::default(),
            stations: 1,
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
    /// The USRP radio could not start (its port, its settings).
    Usrp(String),
    /// A station the engine does not have (it has `count`), or a station count out of range.
    NoStation { station: usize, count: usize },
    /// An EchoLink send while the EchoLink ports are closed.
    EchoLinkClosed,
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Bind { addr, source } => write!(f, "cannot bind UDP {addr}: {source}"),
            EngineError::Io(e) => write!(f, "engine I/O error: {e}"),
            EngineError::Stopped => write!(f, "the engine is stopped"),
            EngineError::Rate(r) => write!(f, "station rate {r} Hz (accepted: 8000, 16000)"),
            EngineError::Device(e) => e.fmt(f),
            EngineError::Usrp(msg) => f.write_str(msg),
            EngineError::NoStation { station, count } => write!(
                f,
                "station {station} does not exist (the engine has {count}: 0 to {})",
                count.saturating_sub(1)
            ),
            EngineError::EchoLinkClosed => write!(f, "the EchoLink ports are not open"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Bind { source, .. } => Some(source),
            EngineError::Io(e) => Some(e),
            EngineError::Device(e) => Some(e),
            EngineError::Stopped
            | EngineError::Rate(_)
            | EngineError::Usrp(_)
            | EngineError::NoStation { .. }
            | EngineError::EchoLinkClosed => None,
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

/// A command from Python to the media path, applied by the engine thread.
#[derive(Debug, Clone)]
pub enum Command {
    AddLeg(LegSpec),
    /// An EchoLink station's leg (removed with `RemoveLeg`, like any leg).
    AddEchoLinkLeg(EchoLinkLegSpec),
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
    /// Link this station to `station` locally: leg `id` here and leg `peer_id` there, each
    /// a member of its conference, their audio handed over by the engine (no datagram).
    AddLocalLink {
        id: u16,
        mode: LegMode,
        station: usize,
        peer_id: u16,
        peer_mode: LegMode,
    },
}

/// Largest number of stations one engine mixes (a host's nodes).
pub const MAX_STATIONS: usize = 64;

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
    /// The USRP radio's carrier, DTMF, caller metadata or peer state.
    Usrp(crate::usrp::UsrpEvent),
    /// A control datagram, or a text datagram of the audio port, from an EchoLink station.
    EchoLink(EchoLinkDatagram),
    /// An event of a station other than the first (station 0's events come unwrapped, so a
    /// one-node engine reports exactly as before).
    Station(usize, Box<EngineEvent>),
}

impl EngineEvent {
    /// `event` as station `station` reports it.
    pub fn at(station: usize, event: EngineEvent) -> EngineEvent {
        if station == 0 {
            event
        } else {
            EngineEvent::Station(station, Box::new(event))
        }
    }
}

/// State shared by the socket thread and the handle Python holds.
struct Shared {
    transport: Box<dyn Transport>,
    queue: Mutex<VecDeque<Received>>,
    events: Mutex<VecDeque<EngineEvent>>,
    /// Commands, each with the station it addresses.
    commands: Mutex<Vec<(usize, Command)>>,
    commands_pending: AtomicBool,
    /// Each station's local radio port.
    locals: Vec<Mutex<LocalPort>>,
    ticks: Mutex<TickStats>,
    jitter: Mutex<Vec<(u16, JitterStats)>>,
    queue_limit: usize,
    frame_len: usize,
    counters: Counters,
    stop: AtomicBool,
    /// Written (one byte) when a queue goes from empty to non-empty.
    wake_tx: UnixStream,
    /// The engine thread sleeps without a clock (nothing in the station changes with time
    /// alone): a command, a device or a stop must write `engine_wake_tx` to wake it.
    sleeping: AtomicBool,
    /// Written (one byte) to wake the engine thread from such a sleep.
    engine_wake_tx: UnixStream,
    /// The EchoLink ports while open; `echolink_changed` tells the engine thread to take the
    /// new value (and poll its sockets) before it next waits.
    echolink: Mutex<Option<Arc<EchoLinkPorts>>>,
    echolink_changed: AtomicBool,
    echolink_counters: EchoLinkCounters,
    /// Every EchoLink leg's counters, published with the jitter statistics.
    echolink_legs: Mutex<Vec<(u16, EchoLinkLegStats)>>,
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

    /// Wake the engine thread if it sleeps without a clock. Called after the change it must
    /// see is published (a command queued, a device attached, stop set): the thread sets
    /// `sleeping` before it looks at them one last time, so with both sides sequentially
    /// consistent either it sees the change or this sees it sleeping.
    fn wake_engine(&self) {
        if self.sleeping.load(Ordering::SeqCst) {
            let _ = (&self.engine_wake_tx).write(&[1]);
        }
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

    /// Station `station`'s local radio port (the caller checked the index; a wrong one falls
    /// back to the first station's rather than panic).
    fn local(&self, station: usize) -> MutexGuard<'_, LocalPort> {
        match self.locals.get(station).or_else(|| self.locals.first()) {
            Some(m) => lock(m),
            // `start_with` never builds fewer than one port.
            None => unreachable!("an engine has at least one station"),
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

/// The handle to a running engine. Dropping it stops the thread.
pub struct Engine {
    shared: Arc<Shared>,
    wake_rx: UnixStream,
    local_addr: SocketAddr,
    rate: u32,
    stations: usize,
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
        if cfg.stations == 0 || cfg.stations > MAX_STATIONS {
            return Err(EngineError::NoStation {
                station: cfg.stations,
                count: MAX_STATIONS,
            });
        }
        let local_addr = transport.local_addr();
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let (engine_wake_tx, engine_wake_rx) = UnixStream::pair()?;
        engine_wake_tx.set_nonblocking(true)?;
        engine_wake_rx.set_nonblocking(true)?;
        let stations: Vec<Station> = (0..cfg.stations)
            .map(|_| {
                let mut station = Station::new(cfg.rate, cfg.mix_minus);
                station.set_concealment(cfg.concealment);
                station.set_jitter_config(cfg.jitter);
                station
            })
            .collect();
        let frame_len = Station::new(cfg.rate, cfg.mix_minus).frame_len();
        let shared = Arc::new(Shared {
            transport,
            queue: Mutex::new(VecDeque::new()),
            events: Mutex::new(VecDeque::new()),
            commands: Mutex::new(Vec::new()),
            commands_pending: AtomicBool::new(false),
            locals: (0..cfg.stations)
                .map(|_| Mutex::new(LocalPort::default()))
                .collect(),
            ticks: Mutex::new(TickStats {
                ticks: 0,
                skipped: 0,
                lateness_us: Vec::with_capacity(LATENESS_WINDOW),
                next: 0,
                max_us: 0,
            }),
            jitter: Mutex::new(Vec::new()),
            queue_limit: cfg.queue_limit.max(1),
            frame_len,
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            wake_tx,
            sleeping: AtomicBool::new(false),
            engine_wake_tx,
            echolink: Mutex::new(None),
            echolink_changed: AtomicBool::new(false),
            echolink_counters: EchoLinkCounters::default(),
            echolink_legs: Mutex::new(Vec::new()),
        });
        let worker = Worker::new(Arc::clone(&shared), stations, engine_wake_rx);
        let thread = std::thread::Builder::new()
            .name("iax-engine".into())
            .spawn(move || worker.run())?;
        Ok(Engine {
            shared,
            wake_rx,
            local_addr,
            rate: cfg.rate,
            stations: cfg.stations,
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

    /// How many stations the engine mixes.
    pub fn stations(&self) -> usize {
        self.stations
    }

    fn check_station(&self, station: usize) -> Result<(), EngineError> {
        if station < self.stations {
            Ok(())
        } else {
            Err(EngineError::NoStation {
                station,
                count: self.stations,
            })
        }
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

    /// Queue a command for the first station; it is applied before the next datagram or tick.
    pub fn command(&self, cmd: Command) -> Result<(), EngineError> {
        self.command_at(0, cmd)
    }

    /// Queue a command for station `station`.
    pub fn command_at(&self, station: usize, cmd: Command) -> Result<(), EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        self.check_station(station)?;
        if let Command::AddLocalLink { station: peer, .. } = cmd {
            self.check_station(peer)?;
        }
        lock(&self.shared.commands).push((station, cmd));
        self.shared.commands_pending.store(true, Ordering::SeqCst);
        self.shared.wake_engine();
        Ok(())
    }

    /// Connect a sound card: the edge converts between its blocks and the station's frames, and
    /// the returned link exchanges them with the local radio member. Queued local audio from an
    /// earlier device is dropped.
    pub fn attach_device(&self, edge: DeviceEdge) -> Result<DeviceLink, EngineError> {
        self.attach(0, edge, true)
    }

    /// [`attach_device`](Engine::attach_device) for station `station`'s local radio.
    pub fn attach_device_at(
        &self,
        station: usize,
        edge: DeviceEdge,
        trades: bool,
    ) -> Result<DeviceLink, EngineError> {
        self.attach(station, edge, trades)
    }

    /// Attach a device that trades no blocks (the null backend): its port converts and meters
    /// nothing, and it neither counts as attached for the local queues nor keeps the engine's
    /// clock running.
    pub fn attach_quiet_device(&self, edge: DeviceEdge) -> Result<DeviceLink, EngineError> {
        self.attach(0, edge, false)
    }

    fn attach(
        &self,
        station: usize,
        edge: DeviceEdge,
        trades: bool,
    ) -> Result<DeviceLink, EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        self.check_station(station)?;
        if edge.station_rate() != self.rate {
            return Err(EngineError::Device(DeviceError::Rate {
                device: edge.device_rate(),
                station: self.rate,
            }));
        }
        if trades {
            let mut port = self.shared.local(station);
            if port.attached == 0 {
                port.clear();
            }
            port.attached += 1;
            drop(port);
            // A device trades a frame every tick: the clock runs again.
            self.shared.wake_engine();
        }
        Ok(DeviceLink {
            shared: Arc::clone(&self.shared),
            station,
            edge,
            trades,
        })
    }

    /// Attach a USRP radio as the local radio: its thread binds `listen`, sends to `peer` and
    /// trades 20 ms frames with the local radio member. Queued local audio from an earlier
    /// device is dropped.
    pub fn attach_usrp(
        &self,
        radio: crate::usrp::UsrpRadio,
        listen: SocketAddr,
        peer: SocketAddr,
    ) -> Result<UsrpLink, EngineError> {
        self.attach_usrp_at(0, radio, listen, peer)
    }

    /// [`attach_usrp`](Engine::attach_usrp) for station `station`'s local radio.
    pub fn attach_usrp_at(
        &self,
        station: usize,
        radio: crate::usrp::UsrpRadio,
        listen: SocketAddr,
        peer: SocketAddr,
    ) -> Result<UsrpLink, EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        self.check_station(station)?;
        let mut port = self.shared.local(station);
        if port.attached == 0 {
            port.clear();
        }
        port.attached += 1;
        drop(port);
        // The USRP radio trades a frame every tick: the clock runs again.
        self.shared.wake_engine();
        UsrpLink::start(Arc::clone(&self.shared), station, radio, listen, peer).map_err(|e| {
            let mut port = self.shared.local(station);
            port.attached = port.attached.saturating_sub(1);
            EngineError::Usrp(format!("cannot open the USRP port {listen}: {e}"))
        })
    }

    /// What happened to the first station's local radio frames since the engine started.
    pub fn local_counters(&self) -> LocalCounters {
        self.shared.local(0).counters
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

    /// Bind the EchoLink ports on `ip` (audio, then control; the protocol's are 5198 and
    /// 5199, 0 picks a free port) and poll them from the engine thread; returns the bound
    /// addresses. Ports already open are closed first.
    pub fn echolink_open(
        &self,
        ip: IpAddr,
        audio_port: u16,
        control_port: u16,
    ) -> Result<(SocketAddr, SocketAddr), EngineError> {
        if self.thread.is_none() {
            return Err(EngineError::Stopped);
        }
        self.echolink_close();
        let ports = EchoLinkPorts::bind(ip, audio_port, control_port)
            .map_err(|(addr, source)| EngineError::Bind { addr, source })?;
        let addrs = ports.addrs()?;
        self.set_echolink(Some(Arc::new(ports)));
        Ok(addrs)
    }

    /// Close the EchoLink ports (the engine thread lets go of them before it next waits).
    pub fn echolink_close(&self) {
        self.set_echolink(None);
    }

    fn set_echolink(&self, ports: Option<Arc<EchoLinkPorts>>) {
        *lock(&self.shared.echolink) = ports;
        self.shared.echolink_changed.store(true, Ordering::SeqCst);
        self.shared.wake_engine();
    }

    /// The bound (audio, control) addresses while the EchoLink ports are open.
    pub fn echolink_addrs(&self) -> Option<(SocketAddr, SocketAddr)> {
        lock(&self.shared.echolink)
            .as_ref()
            .and_then(|p| p.addrs().ok())
    }

    /// Send a control datagram from the control port, or text from the audio port, to `to`.
    pub fn echolink_send(
        &self,
        kind: EchoLinkKind,
        data: &[u8],
        to: SocketAddr,
    ) -> Result<(), EngineError> {
        let ports = lock(&self.shared.echolink).clone();
        let ports = ports.ok_or(EngineError::EchoLinkClosed)?;
        ports
            .send(kind, data, to, &self.shared.echolink_counters)
            .map_err(EngineError::Io)
    }

    /// One EchoLink leg's counters, as of the last publication (with the jitter statistics).
    pub fn echolink_leg_stats(&self, leg: u16) -> Option<EchoLinkLegStats> {
        lock(&self.shared.echolink_legs)
            .iter()
            .find(|(id, _)| *id == leg)
            .map(|(_, s)| *s)
    }

    /// What the EchoLink ports saw and sent since the engine started.
    pub fn echolink_counters(&self) -> EchoLinkCounterSnapshot {
        self.shared.echolink_counters.snapshot()
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
            speaker: self
                .shared
                .locals
                .iter()
                .map(|m| lock(m).speaker.len())
                .sum(),
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
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake_engine();
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
    /// The station whose local radio it is.
    station: usize,
    edge: DeviceEdge,
    /// It trades blocks with the local radio member (false: the null backend's quiet port).
    trades: bool,
}

impl DeviceLink {
    /// One device block each way (native-endian int16 at the device rate): `input` was
    /// captured, `output` is filled with what to play.
    pub fn exchange(&mut self, input: &[u8], output: &mut [u8]) -> Result<(), DeviceError> {
        let (shared, station) = (&self.shared, self.station);
        self.edge
            .capture(input, |frame| shared.local(station).push_mic(frame))?;
        if let Some(open) = self.edge.take_vox_change() {
            shared.emit(std::iter::once(EngineEvent::at(
                station,
                EngineEvent::Vox(open),
            )));
        }
        self.edge
            .playback(output, |dst| shared.local(station).pull_speaker(dst))
    }

    pub fn edge(&self) -> &DeviceEdge {
        &self.edge
    }

    pub fn edge_mut(&mut self) -> &mut DeviceEdge {
        &mut self.edge
    }

    /// What happened to the local radio's frames since the engine started.
    pub fn counters(&self) -> LocalCounters {
        self.shared.local(self.station).counters
    }
}

impl Drop for DeviceLink {
    fn drop(&mut self) {
        if !self.trades {
            return;
        }
        let mut port = self.shared.local(self.station);
        port.attached = port.attached.saturating_sub(1);
        if port.attached == 0 {
            port.clear();
        }
    }
}
