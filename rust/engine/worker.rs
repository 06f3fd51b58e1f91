//! The engine thread: read the socket, hand frames to Python or the station, tick, send.

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::frame::{self, Frame};
use crate::media::{MediaError, MediaEvent, Station, TickOutput};
use crate::transport::{OutDatagram, RecvBatch};

use super::*;

/// The engine thread's own state: the media station is touched by nobody else.
pub(super) struct Worker {
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
    /// Readable when a command, a device or a stop wants the thread out of a clockless sleep.
    wake_rx: UnixStream,
}

impl Worker {
    pub(super) fn new(shared: Arc<Shared>, station: Station, wake_rx: UnixStream) -> Worker {
        Worker {
            shared,
            station,
            epoch: Instant::now(),
            tick_out: TickOutput::default(),
            media_events: Vec::new(),
            stats_age: 0,
            stats_legs: 0,
            tick_datagrams: 0,
            busy: false,
            maintain_age: 0,
            wake_rx,
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
        let mut failures = Vec::new();
        for cmd in commands {
            let result = self.apply(cmd, now_ms);
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

    /// One command on the station; the events it produces go to `media_events`.
    fn apply(&mut self, cmd: Command, now_ms: u64) -> Result<(), MediaError> {
        let st = &mut self.station;
        let events = &mut self.media_events;
        match cmd {
            Command::AddLeg(spec) => return st.add_leg(spec, now_ms),
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

    pub(super) fn tick(&mut self, now_ms: u64) {
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
            self.station.fill_levels(&mut lock(&self.shared.levels));
            self.stats_age = 0;
            self.stats_legs = legs;
        }
    }

    /// Whether the clock may stop: nothing in the station changes with time alone, no device
    /// trades frames with it, and the transport has no timers of its own.
    fn idle(&self) -> bool {
        self.station.idle()
            && lock(&self.shared.local).attached == 0
            && !self.shared.transport.needs_upkeep()
    }

    /// Sleep without a clock until a datagram arrives or a command, a device or a stop wakes
    /// the thread (an idle node wakes nobody 50 times a second). True when datagrams wait.
    fn sleep_idle(&mut self, fd: RawFd) -> bool {
        let shared = &self.shared;
        shared.sleeping.store(true, Ordering::SeqCst);
        // The last look, after `sleeping` is visible: whoever changes these from now on wakes us.
        if shared.commands_pending.load(Ordering::SeqCst) || shared.stop.load(Ordering::SeqCst) {
            shared.sleeping.store(false, Ordering::SeqCst);
            return false;
        }
        let ready = wait_any(&[fd, self.wake_rx.as_raw_fd()], None);
        shared.sleeping.store(false, Ordering::SeqCst);
        bump(&shared.counters.wakeups, 1);
        let mut sink = [0u8; 64];
        while matches!((&self.wake_rx).read(&mut sink), Ok(n) if n > 0) {}
        ready[0]
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
            if !self.busy && self.idle() {
                if self.stats_legs != self.station.leg_count() {
                    // The last leg went: nobody may read its figures after it.
                    self.station
                        .fill_jitter_stats(&mut lock(&self.shared.jitter));
                    self.station.fill_levels(&mut lock(&self.shared.levels));
                    self.stats_legs = self.station.leg_count();
                }
                if self.sleep_idle(fd) {
                    self.drain_socket(&mut batch, Instant::now() + TICK);
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
pub(super) fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    wait_any(&[fd], Some(timeout))[0]
}

/// Wait until one of `fds` (at most two) is readable or `timeout` has passed (None: no time
/// limit); which ones are readable.
pub(super) fn wait_any(fds: &[RawFd], timeout: Option<Duration>) -> [bool; 2] {
    let mut pfds = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 2];
    let count = fds.len().min(2);
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
    [ready(&pfds[0]), ready(&pfds[1])]
}
