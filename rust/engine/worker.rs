//! The engine thread: read the socket, hand frames to Python or the station, tick, send.

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::frame::{self, Frame};
use crate::jitter::JitterStats;
use crate::media::{EchoLinkRoute, MediaError, MediaEvent, Station, TickOutput};
use crate::transport::{OutDatagram, RecvBatch};

use super::echolink::EchoLinkPorts;
use super::*;

/// A local link: leg `a.1` of station `a.0` and leg `b.1` of station `b.0` trade their
/// frames between ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LocalLink {
    a: (usize, u16),
    b: (usize, u16),
}

/// The engine thread's own state: the media stations are touched by nobody else.
pub(super) struct Worker {
    shared: Arc<Shared>,
    /// One per hosted node; index 0 is the first node's.
    stations: Vec<Station>,
    local_links: Vec<LocalLink>,
    /// Scratch for a frame crossing a local link, and for one station's jitter statistics.
    crossing: Vec<i16>,
    station_stats: Vec<(u16, JitterStats)>,
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
    /// Readable when a command, a device or a stop wants the thread out of a clockless sleep.
    wake_rx: UnixStream,
    /// The EchoLink ports this thread polls (its own reference: they close once it lets go).
    echolink: Option<Arc<EchoLinkPorts>>,
}

impl Worker {
    pub(super) fn new(shared: Arc<Shared>, stations: Vec<Station>, wake_rx: UnixStream) -> Worker {
        Worker {
            shared,
            stations,
            local_links: Vec::new(),
            crossing: Vec::new(),
            station_stats: Vec::new(),
            epoch: Instant::now(),
            tick_out: TickOutput::default(),
            media_events: Vec::new(),
            stats_age: 0,
            stats_legs: 0,
            tick_datagrams: 0,
            busy: false,
            maintain_age: 0,
            wake_rx,
            echolink: None,
        }
    }

    pub(super) fn now_ms(&self, at: Instant) -> u64 {
        u64::try_from(at.duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) fn apply_commands(&mut self, now_ms: u64) {
        if !self.shared.commands_pending.swap(false, Ordering::SeqCst) {
            return;
        }
        let commands = std::mem::take(&mut *lock(&self.shared.commands));
        for (station, cmd) in commands {
            if let Err(e) = self.apply(station, cmd, now_ms) {
                let failed = EngineEvent::CommandFailed(e.to_string());
                self.shared
                    .emit(std::iter::once(EngineEvent::at(station, failed)));
            }
            self.flush(station);
        }
    }

    /// Hand the media events a station produced to Python, marked with the station.
    fn flush(&mut self, station: usize) {
        if !self.media_events.is_empty() {
            self.shared.emit(
                self.media_events
                    .drain(..)
                    .map(|e| EngineEvent::at(station, EngineEvent::Media(e))),
            );
        }
    }

    /// One command on station `station`; the events it produces go to `media_events`.
    fn apply(&mut self, station: usize, cmd: Command, now_ms: u64) -> Result<(), MediaError> {
        if let Command::AddLocalLink {
            id,
            mode,
            station: far,
            peer_id,
            peer_mode,
        } = cmd
        {
            return self.add_local_link((station, id, mode), (far, peer_id, peer_mode), now_ms);
        }
        if let Command::RemoveLeg(c) = cmd {
            // A local link ends with either of its legs; the other stays until removed.
            self.local_links
                .retain(|l| l.a != (station, c) && l.b != (station, c));
        }
        // Commands were checked against the station count when queued.
        let Some(st) = self.stations.get_mut(station) else {
            return Ok(());
        };
        let events = &mut self.media_events;
        match cmd {
            Command::AddLocalLink { .. } => {}
            Command::AddLeg(spec) => return st.add_leg(spec, now_ms),
            Command::AddEchoLinkLeg(spec) => return st.add_echolink_leg(spec, now_ms),
            Command::RemoveLeg(c) => return st.remove_leg(c),
            Command::SetLegMode(c, m) => return st.set_leg_mode(c, m),
            Command::SetLegCodec(c, codec) => return st.set_leg_codec(c, codec),
            Command::SetLegKeying(c, k) => return st.set_leg_keying(c, k, events),
            Command::PushVoice {
                callno,
                codec,
                ts,
                payload,
            } => return st.push_full_voice(callno, codec, ts, &payload, now_ms),
            Command::PushControl {
                callno,
                kind,
                ts,
                payload,
            } => return st.push_control(callno, kind, ts, &payload, now_ms),
            Command::SetLegDtmf(c, on) => return st.set_leg_dtmf(c, on),
            Command::SetLocalDtmf(on) => return st.set_local_dtmf(on),
            Command::Play {
                id,
                pcm,
                destination,
                keys_local,
            } => return st.play(id, pcm, destination, keys_local, events),
            // The settings below cannot fail.
            Command::SetMixMinus(on) => st.set_mix_minus(on),
            Command::SetLocalRadio(on) => st.set_local_radio(on),
            Command::SetLocalKeyed(on) => st.set_local_keyed(on),
            Command::StopPlay(id) => st.stop_playing(id, events),
            Command::SetParrot(settings) => st.set_parrot(settings),
            Command::SetLocalGated(on) => st.set_local_gated(on),
            Command::SetNormalize(on, settings) => st.set_normalize(on, settings),
        }
        Ok(())
    }

    /// Both ends of a local link, each a leg of its station; neither is added when either
    /// cannot be.
    fn add_local_link(
        &mut self,
        (sa, a, mode_a): (usize, u16, crate::media::LegMode),
        (sb, b, mode_b): (usize, u16, crate::media::LegMode),
        now_ms: u64,
    ) -> Result<(), MediaError> {
        if (sa, a) == (sb, b) {
            return Err(MediaError::LegExists(a));
        }
        let st = self.stations.get_mut(sa).ok_or(MediaError::NoSuchLeg(a))?;
        st.add_local_leg(a, mode_a, now_ms)?;
        let added = match self.stations.get_mut(sb) {
            Some(other) => other.add_local_leg(b, mode_b, now_ms),
            None => Err(MediaError::NoSuchLeg(b)),
        };
        if let Err(e) = added {
            if let Some(st) = self.stations.get_mut(sa) {
                let _ = st.remove_leg(a);
            }
            return Err(e);
        }
        self.local_links.push(LocalLink {
            a: (sa, a),
            b: (sb, b),
        });
        Ok(())
    }

    /// What each local link's ends heard this tick becomes what the other end says next tick.
    fn cross_local_links(&mut self) {
        for i in 0..self.local_links.len() {
            let Some(&LocalLink { a, b }) = self.local_links.get(i) else {
                continue;
            };
            for (from, to) in [(a, b), (b, a)] {
                let heard = self
                    .stations
                    .get(from.0)
                    .and_then(|st| st.local_leg_tx(from.1));
                let Some(pcm) = heard else { continue };
                self.crossing.clear();
                self.crossing.extend_from_slice(pcm);
                if let Some(st) = self.stations.get_mut(to.0) {
                    st.put_local_leg_rx(to.1, &self.crossing);
                }
            }
        }
    }

    fn leg_count(&self) -> usize {
        self.stations.iter().map(Station::leg_count).sum()
    }

    /// Every station's legs' jitter statistics and meters, and the EchoLink legs' counters,
    /// for the handle's readers.
    fn publish_stats(&mut self) {
        let mut all = lock(&self.shared.jitter);
        all.clear();
        for st in &self.stations {
            st.fill_jitter_stats(&mut self.station_stats);
            all.append(&mut self.station_stats);
        }
        drop(all);
        let mut levels = lock(&self.shared.levels);
        for (st, out) in self.stations.iter().zip(levels.iter_mut()) {
            st.fill_levels(out);
        }
        drop(levels);
        let mut el = lock(&self.shared.echolink_legs);
        el.clear();
        let mut one = Vec::new();
        for st in &self.stations {
            st.fill_echolink_stats(&mut one);
            el.append(&mut one);
        }
    }

    /// Take the EchoLink ports Python opened or closed since the last look.
    fn refresh_echolink(&mut self) {
        if self.shared.echolink_changed.swap(false, Ordering::SeqCst) {
            self.echolink = lock(&self.shared.echolink).clone();
        }
    }

    /// Commands queued while the thread waited apply before what woke it is read: a leg added
    /// just before its first datagram hears that datagram.
    fn before_reading(&mut self) {
        self.apply_commands(self.now_ms(Instant::now()));
        self.refresh_echolink();
    }

    /// The descriptors to wait on: the transport's, then the EchoLink ports' while open.
    fn poll_fds(&self, transport_fd: RawFd) -> ([RawFd; 3], usize) {
        match &self.echolink {
            Some(p) => {
                let [a, c] = p.fds();
                ([transport_fd, a, c], 3)
            }
            None => ([transport_fd, -1, -1], 1),
        }
    }

    /// Read what waits on the EchoLink ports: audio to the stations' EchoLink legs, the rest
    /// to Python.
    pub(super) fn drain_echolink(&mut self) {
        let Some(ports) = self.echolink.clone() else {
            return;
        };
        let now_ms = self.now_ms(Instant::now());
        let mut others = Vec::new();
        let shared = Arc::clone(&self.shared);
        ports.read(
            &shared.echolink_counters,
            |data, from| self.echolink_audio(data, from, now_ms),
            |d| others.push(EngineEvent::EchoLink(d)),
        );
        if !others.is_empty() {
            self.shared.emit(others.into_iter());
        }
    }

    /// One audio packet from an EchoLink station: only a station with a leg is heard (in
    /// whichever hosted node holds it).
    fn echolink_audio(&mut self, data: &[u8], from: SocketAddr, now_ms: u64) {
        let mut route = EchoLinkRoute::Unrouted;
        for st in &mut self.stations {
            route = st.on_echolink_audio(from, data, now_ms);
            if route != EchoLinkRoute::Unrouted {
                break;
            }
        }
        let c = &self.shared.echolink_counters;
        match route {
            EchoLinkRoute::Played => {}
            EchoLinkRoute::Unrouted => bump(&c.audio_unrouted, 1),
            EchoLinkRoute::Malformed => bump(&c.audio_malformed, 1),
        }
    }

    /// This tick's audio packets for EchoLink stations, from the EchoLink audio port.
    fn send_echolink(&self) {
        let out = &self.tick_out.echolink;
        if out.is_empty() {
            return;
        }
        let c = &self.shared.echolink_counters;
        match &self.echolink {
            Some(ports) => {
                for (packet, to) in out.packets() {
                    ports.send_audio(packet, to, c);
                }
            }
            // A leg without open ports (Python closed them first): nothing can go.
            None => bump(&c.send_errors, out.len() as u64),
        }
    }

    /// A mini frame to the station holding its leg; false when none does.
    fn route_mini(&mut self, from: SocketAddr, mini: &frame::MiniFrame, now_ms: u64) -> bool {
        for (i, st) in self.stations.iter_mut().enumerate() {
            if st.on_mini(from, mini, now_ms, &mut self.media_events) {
                self.flush(i);
                return true;
            }
        }
        false
    }

    /// Read everything waiting (up to the next tick), each datagram at its kernel arrival time.
    pub(super) fn drain_socket(&mut self, batch: &mut RecvBatch, next_tick: Instant) {
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

    pub(super) fn handle_datagram(&mut self, data: &[u8], from: SocketAddr, now_ms: u64) {
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
                if !self.route_mini(from, &mini, now_ms) {
                    bump(&self.shared.counters.media_unrouted, 1);
                }
            }
            Ok(Frame::Trunk(trunk)) => {
                bump(&c.trunk_in, 1);
                for mini in trunk.minis() {
                    bump(&self.shared.counters.mini_in, 1);
                    if !self.route_mini(from, &mini, now_ms) {
                        bump(&self.shared.counters.media_unrouted, 1);
                    }
                }
            }
            Ok(Frame::Video(_)) => bump(&c.video_dropped, 1),
        }
    }

    pub(super) fn tick(&mut self, now_ms: u64) {
        for i in 0..self.stations.len() {
            self.tick_station(i, now_ms);
        }
        self.cross_local_links();
        self.stats_age += 1;
        let legs = self.leg_count();
        if self.stats_age >= STATS_EVERY_TICKS || legs != self.stats_legs {
            self.publish_stats();
            self.stats_age = 0;
            self.stats_legs = legs;
        }
    }

    fn tick_station(&mut self, i: usize, now_ms: u64) {
        let Some(station) = self.stations.get_mut(i) else {
            return;
        };
        // The microphone is heard while the local radio is a member or the operator keys it.
        let mic_wanted = station.local_radio() || station.local_keyed();
        let mic = self.shared.local(i).take_mic(mic_wanted);
        if let Some(pcm) = mic {
            station.put_local(&pcm);
            self.shared.local(i).recycle(pcm);
        }
        self.tick_out.clear();
        station.tick(now_ms, &mut self.tick_out);
        if !self.tick_out.datagrams.is_empty() {
            let batch = send_batch_of(&self.tick_out);
            let r = self.shared.transport.send_batch(&batch);
            let c = &self.shared.counters;
            bump(&c.datagrams_out, r.sent);
            bump(&c.bytes_out, r.bytes);
            bump(&c.send_errors, r.failed);
            bump(&c.send_calls, r.calls);
        }
        self.shared
            .local(i)
            .put_speaker(station.local_speaker(), station.local_output());
        self.send_echolink();
        if !self.tick_out.events.is_empty() {
            self.shared.emit(
                self.tick_out
                    .events
                    .drain(..)
                    .map(|e| EngineEvent::at(i, EngineEvent::Media(e))),
            );
        }
    }

    /// Whether the clock may stop: nothing in the station changes with time alone, no device
    /// trades frames with it, and the transport has no timers of its own.
    fn idle(&self) -> bool {
        self.stations.iter().all(Station::idle)
            && self.shared.locals.iter().all(|m| lock(m).attached == 0)
            && !self.shared.transport.needs_upkeep()
    }

    /// Sleep without a clock until a datagram arrives or a command, a device or a stop wakes
    /// the thread (an idle node wakes nobody 50 times a second). Which sockets have datagrams.
    fn sleep_idle(&mut self, fd: RawFd) -> Readable {
        let shared = &self.shared;
        shared.sleeping.store(true, Ordering::SeqCst);
        // The last look, after `sleeping` is visible: whoever changes these from now on wakes us.
        if shared.commands_pending.load(Ordering::SeqCst)
            || shared.stop.load(Ordering::SeqCst)
            || shared.echolink_changed.load(Ordering::SeqCst)
        {
            shared.sleeping.store(false, Ordering::SeqCst);
            return Readable::default();
        }
        let (fds, n) = self.poll_fds(fd);
        let mut all = [-1; 4];
        all[..n].copy_from_slice(&fds[..n]);
        all[n] = self.wake_rx.as_raw_fd();
        let ready = wait_any(&all[..=n], None);
        shared.sleeping.store(false, Ordering::SeqCst);
        bump(&shared.counters.wakeups, 1);
        let mut sink = [0u8; 64];
        while matches!((&self.wake_rx).read(&mut sink), Ok(n) if n > 0) {}
        Readable {
            transport: ready[0],
            echolink: n == 3 && (ready[1] || ready[2]),
        }
    }

    /// Wait for a datagram on any socket until `timeout`.
    fn wait_sockets(&self, fd: RawFd, timeout: Duration) -> Readable {
        let (fds, n) = self.poll_fds(fd);
        let ready = wait_any(&fds[..n], Some(timeout));
        Readable {
            transport: ready[0],
            echolink: ready[1] || ready[2],
        }
    }

    pub(super) fn run(mut self) {
        let mut batch = RecvBatch::new();
        let mut next_tick = Instant::now() + TICK;
        let mut last_drain = Instant::now();
        let fd = self.shared.transport.poll_fd();
        while !self.shared.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            let now_ms = self.now_ms(now);
            self.apply_commands(now_ms);
            self.refresh_echolink();
            if !self.busy && self.idle() {
                if self.stats_legs != self.leg_count() {
                    // The last leg went: nobody may read its figures after it.
                    self.publish_stats();
                    self.stats_legs = self.leg_count();
                }
                let ready = self.sleep_idle(fd);
                self.before_reading();
                if ready.transport {
                    self.drain_socket(&mut batch, Instant::now() + TICK);
                }
                if ready.echolink {
                    self.drain_echolink();
                }
                // The clock starts again from now: no tick is owed for the sleep.
                next_tick = Instant::now() + TICK;
                continue;
            }
            if now >= next_tick {
                // What arrived since the last read plays in this tick.
                if self.busy {
                    self.drain_socket(&mut batch, now + TICK);
                    last_drain = now;
                }
                self.drain_echolink();
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
                self.drain_echolink();
                last_drain = now;
                continue;
            }
            let ready = self.wait_sockets(fd, next_tick - now);
            bump(&self.shared.counters.wakeups, 1);
            self.before_reading();
            if ready.transport {
                self.drain_socket(&mut batch, next_tick);
            }
            if ready.echolink {
                self.drain_echolink();
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

/// Which sockets a wait found readable.
#[derive(Debug, Default, Clone, Copy)]
struct Readable {
    transport: bool,
    echolink: bool,
}

/// Wait until one of `fds` (at most four) is readable or `timeout` has passed (None: no time
/// limit); which ones are readable.
///
/// `ppoll` takes a nanosecond timeout and sleeps on a high-resolution timer, where a socket
/// receive timeout is rounded up to the kernel's tick (4 ms at HZ=250) and would make the
/// 20 ms media clock late by that much on every tick.
pub(super) fn wait_any(fds: &[RawFd], timeout: Option<Duration>) -> [bool; 4] {
    let mut pfds = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 4];
    let count = fds.len().min(4);
    for (pfd, &fd) in pfds.iter_mut().zip(fds) {
        pfd.fd = fd;
    }
    // c_long is 32 bits on 32-bit ARM hosts, where the conversion is fallible.
    #[allow(clippy::unnecessary_fallible_conversions)]
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::try_from(t.subsec_nanos()).unwrap_or(0),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` is an array of initialised pollfds that lives for the whole call and
    // `count` (at most its length) are passed; `ts_ptr` is null (no time limit) or points to a
    // timespec that outlives the call; a null signal mask leaves the mask unchanged. ppoll
    // writes only the `revents` fields.
    let n = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            count as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    let ready = |p: &libc::pollfd| n > 0 && (p.revents & (libc::POLLIN | libc::POLLERR)) != 0;
    [
        ready(&pfds[0]),
        ready(&pfds[1]),
        ready(&pfds[2]),
        ready(&pfds[3]),
    ]
}
