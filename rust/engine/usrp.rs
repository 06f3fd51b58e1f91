//! The USRP radio's thread: it owns the USRP socket and its own 20 ms clock, and trades frames
//! with the local radio member exactly as the sound card's thread does (`DeviceLink`).
//!
//! Each 20 ms it ticks the [`UsrpRadio`] kernel: the received frame goes to the local port's
//! microphone queue, the local port's speaker frame goes to the peer while the radio is keyed.
//! Between ticks it waits on the socket with a timeout that ends at the next tick, so a burst
//! from the peer is parsed as it comes but played at real time (the kernel bounds the buffer).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{lock, EngineEvent, Shared};
use crate::usrp::{UsrpEvent, UsrpRadio};

/// Ticks behind after which the clock restarts rather than catching up in a burst.
const STALL_TICKS: u32 = 5;
const TICK: Duration = Duration::from_millis(20);

/// What the Python handle and the thread share.
#[derive(Debug)]
pub struct UsrpShared {
    pub radio: Mutex<UsrpRadio>,
    stop: AtomicBool,
    /// sendto failures (the peer's port closed, no route).
    pub send_errors: std::sync::atomic::AtomicU64,
    /// Ticks the thread missed (a stalled host), skipped rather than replayed.
    pub missed_ticks: std::sync::atomic::AtomicU64,
    started: Instant,
}

impl UsrpShared {
    /// Milliseconds on the thread's clock.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// A USRP radio attached to the engine's local radio member (`Engine::attach_usrp`). Dropping it
/// stops the thread, which first releases the peer (one keyup-0 packet when it was keyed).
pub struct UsrpLink {
    engine: Arc<Shared>,
    /// The station whose local radio it is.
    station: usize,
    pub(super) shared: Arc<UsrpShared>,
    thread: Option<JoinHandle<()>>,
    local_addr: SocketAddr,
    peer: SocketAddr,
}

impl UsrpLink {
    pub(super) fn start(
        engine: Arc<Shared>,
        station: usize,
        radio: UsrpRadio,
        listen: SocketAddr,
        peer: SocketAddr,
    ) -> io::Result<UsrpLink> {
        let socket = UdpSocket::bind(listen)?;
        let local_addr = socket.local_addr()?;
        let shared = Arc::new(UsrpShared {
            radio: Mutex::new(radio),
            stop: AtomicBool::new(false),
            send_errors: Default::default(),
            missed_ticks: Default::default(),
            started: Instant::now(),
        });
        let (e, s) = (Arc::clone(&engine), Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("usrp".into())
            .spawn(move || run(&e, station, &s, &socket, peer))?;
        Ok(UsrpLink {
            engine,
            station,
            shared,
            thread: Some(thread),
            local_addr,
            peer,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn shared(&self) -> &UsrpShared {
        &self.shared
    }

    /// Key or release the transmitter toward the peer (the PTT).
    pub fn set_keyed(&self, keyed: bool) {
        lock(&self.shared.radio).set_keyed(keyed);
    }
}

impl Drop for UsrpLink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut port = self.engine.local(self.station);
        port.attached = port.attached.saturating_sub(1);
        if port.attached == 0 {
            port.clear();
        }
    }
}

fn send(shared: &UsrpShared, socket: &UdpSocket, peer: SocketAddr, buf: &[u8]) {
    if socket.send_to(buf, peer).is_err() {
        shared.send_errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// The radio of a link, locked (the binding's stats and gains).
pub fn lock_usrp(link: &UsrpLink) -> std::sync::MutexGuard<'_, UsrpRadio> {
    lock(&link.shared.radio)
}

/// One tick: the kernel's frame to the station, the station's frame to the peer, events out.
fn tick(
    engine: &Shared,
    station: usize,
    shared: &UsrpShared,
    socket: &UdpSocket,
    peer: SocketAddr,
    spk: &mut [i16],
) {
    let have = engine.local(station).pull_speaker(spk);
    let mut radio = lock(&shared.radio);
    let out = radio.tick(shared.now_ms(), |dst| {
        if have && dst.len() == spk.len() {
            dst.copy_from_slice(spk);
        }
        have
    });
    if let Some(frame) = out.rx {
        engine.local(station).push_mic(frame);
    }
    if let Some(v) = out.voice {
        send(shared, socket, peer, v);
    }
    if let Some(u) = out.unkey {
        send(shared, socket, peer, u);
    }
    let events = std::iter::from_fn(|| radio.next_event())
        .map(|e| EngineEvent::at(station, EngineEvent::Usrp(e)));
    engine.emit(events);
}

fn run(engine: &Shared, station: usize, shared: &UsrpShared, socket: &UdpSocket, peer: SocketAddr) {
    let mut buf = [0u8; 2048];
    let mut spk = vec![0i16; lock(&shared.radio).frame_len()];
    let mut next = Instant::now() + TICK;
    while !shared.stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now >= next {
            tick(engine, station, shared, socket, peer, &mut spk);
            next += TICK;
            if now > next + TICK * STALL_TICKS {
                let behind = (now - next).as_millis() / TICK.as_millis();
                shared
                    .missed_ticks
                    .fetch_add(u64::try_from(behind).unwrap_or(0), Ordering::Relaxed);
                next = now + TICK;
            }
            continue;
        }
        let _ = socket.set_read_timeout(Some((next - now).max(Duration::from_millis(1))));
        if let Ok((n, _from)) = socket.recv_from(&mut buf) {
            let now_ms = shared.now_ms();
            // Garbage is counted by the kernel and dropped here.
            let _ = lock(&shared.radio).receive(buf.get(..n).unwrap_or_default(), now_ms);
        }
    }
    // Never leave anything keyed: release the peer (the tick sends the keyup-0 the release
    // owes) and end a transmission being received (its carrier-off event goes out too).
    lock(&shared.radio).stop();
    tick(engine, station, shared, socket, peer, &mut spk);
}

impl From<UsrpEvent> for EngineEvent {
    fn from(e: UsrpEvent) -> Self {
        EngineEvent::Usrp(e)
    }
}
