//! The USRP radio: the packet stream app_rpt's chan_usrp and DVSwitch's Analog_Bridge speak, as
//! the station's local radio.
//!
//! A USRP packet is a 32-byte header (`USRP`, then seven big-endian u32: sequence, memory,
//! keyup, talkgroup, type, mpxid, reserved) and a payload whose meaning the type gives: voice
//! (type 0) is 160 little-endian 16-bit samples at 8 kHz, one 20 ms frame; a DTMF packet
//! (type 1) carries one digit in its first byte; a text packet (type 2) carries either a
//! NUL-terminated string or, from DVSwitch, a "set info" TLV with the digital caller's ids and
//! callsign. A header alone with keyup 0 is the end of a transmission.
//!
//! [`parse`] and the builders (`packet.rs`) are the wire; [`UsrpRadio`] is the `&mut self` kernel
//! the engine thread drives: datagrams in (`receive`), one 20 ms tick out (`tick`), which hands the
//! station a received frame (reordered, resampled, gain applied, metered), takes the station's
//! frame for the peer while keyed and builds the packets to send. It never reads a clock: every
//! input carries `now_ms`.

use std::collections::VecDeque;
use std::fmt;

use crate::level::{gain_db_valid, gain_from_db, LevelMeter, Reading, GAIN_DB_MAX, GAIN_DB_MIN};
use crate::resample::{Downsampler, Resample, Upsampler};

mod packet;
pub use packet::*;

// --- the radio kernel --------------------------------------------------------------------------

/// Settings of a [`UsrpRadio`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsrpConfig {
    /// The station's rate: 8000 or 16000.
    pub station_rate: u32,
    /// Frames held before a transmission starts playing (absorbs the peer's jitter).
    pub prefill_frames: usize,
    /// Most frames held; a burst beyond it is dropped and counted.
    pub queue_frames: usize,
    /// Voice gap after which a transmission without its keyup-0 packet is over (the peer lost).
    pub rx_timeout_ms: u64,
    /// The talkgroup written into our packets (Analog_Bridge may use it; chan_usrp ignores it).
    pub talkgroup: u32,
}

impl Default for UsrpConfig {
    fn default() -> Self {
        UsrpConfig {
            station_rate: 8000,
            prefill_frames: 3,
            queue_frames: 25,
            rx_timeout_ms: 300,
            talkgroup: 0,
        }
    }
}

/// Settings out of range.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum UsrpConfigError {
    StationRate(u32),
    Gain { db: f64 },
    Queue { prefill: usize, queue: usize },
}

impl fmt::Display for UsrpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsrpConfigError::StationRate(r) => {
                write!(f, "station rate {r} Hz (accepted: 8000, 16000)")
            }
            UsrpConfigError::Gain { db } => write!(
                f,
                "gain {db} dB is out of range (accepted: {GAIN_DB_MIN} to +{GAIN_DB_MAX} dB)"
            ),
            UsrpConfigError::Queue { prefill, queue } => write!(
                f,
                "USRP buffer of {queue} frames with a prefill of {prefill} (accepted: prefill \
                 0 to 25, buffer above the prefill, at most 500)"
            ),
        }
    }
}

impl std::error::Error for UsrpConfigError {}

/// What the radio reports to the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsrpEvent {
    /// The peer's transmission started (`true`: keyup-1 voice) or ended.
    Carrier(bool),
    /// A DTMF digit from the peer.
    Dtmf(char),
    /// The digital side's caller.
    Meta(Metadata),
    /// The peer went quiet mid-transmission (`false`), or was heard again (`true`).
    Peer(bool),
}

/// Counters of the USRP radio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsrpCounters {
    pub rx_packets: u64,
    pub rx_voice: u64,
    /// Datagrams that are not USRP packets we take.
    pub rx_garbage: u64,
    /// Voice frames dropped because the buffer was full (a burst faster than real time).
    pub rx_overflow: u64,
    /// Voice frames that came after their turn or twice.
    pub rx_late: u64,
    /// Sequence gaps seen (frames the peer sent that never came).
    pub rx_lost: u64,
    /// Ticks of a transmission with no frame to play.
    pub rx_underrun: u64,
    pub rx_dtmf: u64,
    pub rx_meta: u64,
    /// Packets of types we do not use.
    pub rx_ignored: u64,
    pub tx_voice: u64,
    pub tx_unkey: u64,
    /// Transmissions the peer ended without a keyup-0 packet.
    pub peer_lost: u64,
}

/// One received frame in the buffer.
#[derive(Debug, Clone)]
struct Slot {
    seq: u32,
    pcm: [i16; VOICE_SAMPLES],
}

/// What a tick hands the socket: up to one voice packet and one unkey packet.
#[derive(Debug)]
pub struct TickOut<'a> {
    /// A voice frame for the station (station rate), when one played this tick.
    pub rx: Option<&'a [i16]>,
    /// A voice packet to send (we are keyed).
    pub voice: Option<&'a [u8]>,
    /// A keyup-0 packet to send (we just unkeyed).
    pub unkey: Option<&'a [u8]>,
}

/// The USRP radio's state: receive buffer and carrier, transmit sequence and keying, gains and
/// meters.
#[derive(Debug)]
pub struct UsrpRadio {
    cfg: UsrpConfig,
    rx_gain_db: f64,
    tx_gain_db: f64,
    rx_gain: f32,
    tx_gain: f32,
    /// Received frames in sequence order (bounded by `queue_frames`).
    queue: VecDeque<Slot>,
    /// Reused slots, so steady state allocates nothing.
    spare: Vec<Slot>,
    /// The sequence number the next played frame should have.
    next_seq: Option<u32>,
    /// A transmission is being received.
    carrier: bool,
    /// Playing (prefill reached) in this transmission.
    playing: bool,
    /// The peer sent keyup 0: play what is buffered, then drop the carrier.
    ending: bool,
    last_voice_ms: Option<u64>,
    last_packet_ms: Option<u64>,
    peer_lost: bool,
    up: Upsampler,
    down: Downsampler,
    /// The station frame of this tick (received), at the station rate.
    rx_frame: Vec<i16>,
    /// The station's frame for the peer, at the station rate.
    tx_frame: Vec<i16>,
    /// The 8 kHz frame for the peer.
    tx8: [i16; VOICE_SAMPLES],
    tx_pkt: [u8; VOICE_PACKET_LEN],
    unkey_pkt: [u8; HEADER_LEN],
    keyed: bool,
    /// We sent voice since the last unkey: a keyup-0 packet is owed.
    unkey_owed: bool,
    tx_seq: u32,
    rx_meter: LevelMeter,
    tx_meter: LevelMeter,
    events: VecDeque<UsrpEvent>,
    counters: UsrpCounters,
    /// The last caller's metadata and when it came.
    meta: Option<(Metadata, u64)>,
}

/// Most events held for the node; more are dropped (the node drains every tick).
const EVENTS_MAX: usize = 64;

impl UsrpRadio {
    pub fn new(cfg: UsrpConfig) -> Result<Self, UsrpConfigError> {
        if cfg.station_rate != 8000 && cfg.station_rate != 16000 {
            return Err(UsrpConfigError::StationRate(cfg.station_rate));
        }
        if cfg.prefill_frames > 25
            || cfg.queue_frames <= cfg.prefill_frames
            || cfg.queue_frames > 500
        {
            return Err(UsrpConfigError::Queue {
                prefill: cfg.prefill_frames,
                queue: cfg.queue_frames,
            });
        }
        let frame_len = (cfg.station_rate / 50) as usize;
        let blank = Slot {
            seq: 0,
            pcm: [0; VOICE_SAMPLES],
        };
        Ok(UsrpRadio {
            cfg,
            rx_gain_db: 0.0,
            tx_gain_db: 0.0,
            rx_gain: 1.0,
            tx_gain: 1.0,
            queue: VecDeque::with_capacity(cfg.queue_frames + 1),
            spare: vec![blank; cfg.queue_frames + 1],
            next_seq: None,
            carrier: false,
            playing: false,
            ending: false,
            last_voice_ms: None,
            last_packet_ms: None,
            peer_lost: false,
            up: Upsampler::new(),
            down: Downsampler::new(),
            rx_frame: vec![0; frame_len],
            tx_frame: vec![0; frame_len],
            tx8: [0; VOICE_SAMPLES],
            tx_pkt: [0; VOICE_PACKET_LEN],
            unkey_pkt: [0; HEADER_LEN],
            keyed: false,
            unkey_owed: false,
            tx_seq: 0,
            rx_meter: LevelMeter::new(cfg.station_rate),
            tx_meter: LevelMeter::new(USRP_RATE),
            events: VecDeque::with_capacity(EVENTS_MAX),
            counters: UsrpCounters::default(),
            meta: None,
        })
    }

    pub fn config(&self) -> &UsrpConfig {
        &self.cfg
    }

    /// Samples in one station frame.
    pub fn frame_len(&self) -> usize {
        self.rx_frame.len()
    }

    /// Gain on the received audio (toward the station), in dB.
    pub fn set_rx_gain_db(&mut self, db: f64) -> Result<(), UsrpConfigError> {
        self.rx_gain = linear_gain(db)?;
        self.rx_gain_db = db;
        Ok(())
    }

    /// Gain on the transmitted audio (toward the peer), in dB.
    pub fn set_tx_gain_db(&mut self, db: f64) -> Result<(), UsrpConfigError> {
        self.tx_gain = linear_gain(db)?;
        self.tx_gain_db = db;
        Ok(())
    }

    pub fn rx_gain_db(&self) -> f64 {
        self.rx_gain_db
    }

    pub fn tx_gain_db(&self) -> f64 {
        self.tx_gain_db
    }

    pub fn rx_level(&self) -> Reading {
        self.rx_meter.reading()
    }

    pub fn tx_level(&self) -> Reading {
        self.tx_meter.reading()
    }

    pub fn counters(&self) -> UsrpCounters {
        self.counters
    }

    /// A transmission from the peer is being received.
    pub fn carrier(&self) -> bool {
        self.carrier
    }

    /// We are transmitting to the peer.
    pub fn keyed(&self) -> bool {
        self.keyed
    }

    /// Frames buffered now.
    pub fn buffered(&self) -> usize {
        self.queue.len()
    }

    /// Milliseconds since the peer's last packet (None: never heard).
    pub fn heard_ago_ms(&self, now_ms: u64) -> Option<u64> {
        self.last_packet_ms.map(|t| now_ms.saturating_sub(t))
    }

    /// The digital caller's metadata and when it came.
    pub fn meta(&self) -> Option<&(Metadata, u64)> {
        self.meta.as_ref()
    }

    /// The next event for the node.
    pub fn next_event(&mut self) -> Option<UsrpEvent> {
        self.events.pop_front()
    }

    fn emit(&mut self, e: UsrpEvent) {
        if self.events.len() < EVENTS_MAX {
            self.events.push_back(e);
        }
    }

    /// Key (`true`) or release our transmitter: while keyed every tick sends a voice packet;
    /// the release sends one keyup-0 packet.
    pub fn set_keyed(&mut self, keyed: bool) {
        self.keyed = keyed;
    }

    /// The radio is going away: release the transmitter (the next tick sends its keyup-0) and
    /// end a transmission being received, so nothing is left keyed on either side.
    pub fn stop(&mut self) {
        self.keyed = false;
        while let Some(slot) = self.queue.pop_front() {
            self.spare.push(slot);
        }
        if self.carrier {
            self.carrier = false;
            self.playing = false;
            self.ending = false;
            self.emit(UsrpEvent::Carrier(false));
        }
    }

    /// One datagram from the peer. Garbage is counted and dropped (the error is returned for
    /// logging only).
    pub fn receive(&mut self, buf: &[u8], now_ms: u64) -> Result<(), UsrpError> {
        let packet = match parse(buf) {
            Ok(p) => p,
            Err(e) => {
                self.counters.rx_garbage += 1;
                return Err(e);
            }
        };
        self.counters.rx_packets += 1;
        self.last_packet_ms = Some(now_ms);
        if self.peer_lost {
            self.peer_lost = false;
            self.emit(UsrpEvent::Peer(true));
        }
        match packet.body {
            Body::Voice(payload) => {
                self.counters.rx_voice += 1;
                if packet.header.keyup {
                    self.voice(packet.header.seq, payload, now_ms);
                } else if self.carrier {
                    self.ending = true;
                }
            }
            Body::Unkey => {
                if self.carrier {
                    self.ending = true;
                }
            }
            Body::Dtmf(c) => {
                self.counters.rx_dtmf += 1;
                self.emit(UsrpEvent::Dtmf(c));
            }
            Body::Meta(m) => {
                self.counters.rx_meta += 1;
                self.meta = Some((m.clone(), now_ms));
                self.emit(UsrpEvent::Meta(m));
            }
            Body::Text(_) | Body::Ping | Body::Other => self.counters.rx_ignored += 1,
        }
        Ok(())
    }

    fn voice(&mut self, seq: u32, payload: &[u8], now_ms: u64) {
        self.last_voice_ms = Some(now_ms);
        if !self.carrier {
            self.carrier = true;
            self.playing = false;
            self.ending = false;
            self.next_seq = None;
            self.emit(UsrpEvent::Carrier(true));
        }
        self.ending = false;
        // Sequence numbers compare by wrapping distance from the next frame to play.
        if let Some(next) = self.next_seq {
            if (seq.wrapping_sub(next) as i32) < 0 {
                self.counters.rx_late += 1;
                return;
            }
        }
        let pos = self
            .queue
            .iter()
            .position(|s| (seq.wrapping_sub(s.seq) as i32) < 0)
            .unwrap_or(self.queue.len());
        if pos > 0 && self.queue.get(pos - 1).is_some_and(|s| s.seq == seq) {
            self.counters.rx_late += 1;
            return;
        }
        if self.queue.len() >= self.cfg.queue_frames {
            // A burst faster than real time: the buffer holds its bound, the excess goes.
            self.counters.rx_overflow += 1;
            return;
        }
        let mut slot = self.spare.pop().unwrap_or(Slot {
            seq: 0,
            pcm: [0; VOICE_SAMPLES],
        });
        slot.seq = seq;
        for (d, b) in slot.pcm.iter_mut().zip(payload.chunks_exact(2)) {
            *d = i16::from_le_bytes([b[0], b[1]]);
        }
        self.queue.insert(pos, slot);
    }

    /// One 20 ms tick: play a received frame to the station, and while keyed take the
    /// station's frame (`pull` fills it, false when the station has none: silence is sent) and
    /// build the packet for the peer.
    pub fn tick(&mut self, now_ms: u64, pull: impl FnOnce(&mut [i16]) -> bool) -> TickOut<'_> {
        let rx = self.tick_rx(now_ms);
        let (voice, unkey) = self.tick_tx(pull);
        TickOut {
            rx: if rx { Some(&self.rx_frame) } else { None },
            voice: if voice { Some(&self.tx_pkt) } else { None },
            unkey: if unkey { Some(&self.unkey_pkt) } else { None },
        }
    }

    fn tick_rx(&mut self, now_ms: u64) -> bool {
        if !self.carrier {
            return false;
        }
        let quiet = self
            .last_voice_ms
            .is_some_and(|t| now_ms.saturating_sub(t) >= self.cfg.rx_timeout_ms);
        if !self.playing
            && (self.queue.len() > self.cfg.prefill_frames
                || (self.ending || quiet) && !self.queue.is_empty())
        {
            self.playing = true;
        }
        let mut played = false;
        if self.playing {
            if let Some(slot) = self.queue.pop_front() {
                if let Some(next) = self.next_seq {
                    let gap = slot.seq.wrapping_sub(next);
                    if gap > 0 && (gap as i32) > 0 {
                        self.counters.rx_lost += u64::from(gap);
                    }
                }
                self.next_seq = Some(slot.seq.wrapping_add(1));
                self.deliver_rx(&slot.pcm);
                self.spare.push(slot);
                played = true;
            } else if !self.ending && !quiet {
                self.counters.rx_underrun += 1;
            }
        }
        if self.queue.is_empty() && (self.ending || quiet) {
            if quiet && !self.ending {
                self.counters.peer_lost += 1;
                self.peer_lost = true;
                self.emit(UsrpEvent::Peer(false));
            }
            self.carrier = false;
            self.playing = false;
            self.ending = false;
            self.emit(UsrpEvent::Carrier(false));
        }
        played
    }

    fn deliver_rx(&mut self, pcm: &[i16; VOICE_SAMPLES]) {
        let g = self.rx_gain;
        if self.cfg.station_rate == USRP_RATE {
            for (d, &s) in self.rx_frame.iter_mut().zip(pcm.iter()) {
                *d = scale(s, g);
            }
        } else {
            let mut tmp = [0i16; VOICE_SAMPLES];
            for (d, &s) in tmp.iter_mut().zip(pcm.iter()) {
                *d = scale(s, g);
            }
            // The output is exactly twice the input: the frame is sized for it.
            let _ = self.up.process_into(&tmp, &mut self.rx_frame);
        }
        self.rx_meter.feed(&self.rx_frame);
    }

    fn tick_tx(&mut self, pull: impl FnOnce(&mut [i16]) -> bool) -> (bool, bool) {
        if !self.keyed {
            if self.unkey_owed {
                self.unkey_owed = false;
                write_unkey(&mut self.unkey_pkt, self.tx_seq, self.cfg.talkgroup);
                self.tx_seq = self.tx_seq.wrapping_add(1);
                self.counters.tx_unkey += 1;
                self.down.reset();
                return (false, true);
            }
            return (false, false);
        }
        if !pull(&mut self.tx_frame) {
            self.tx_frame.fill(0);
        }
        let g = self.tx_gain;
        if self.cfg.station_rate == USRP_RATE {
            for (d, &s) in self.tx8.iter_mut().zip(self.tx_frame.iter()) {
                *d = scale(s, g);
            }
        } else {
            let _ = self.down.process_into(&self.tx_frame, &mut self.tx8);
            for s in self.tx8.iter_mut() {
                *s = scale(*s, g);
            }
        }
        self.tx_meter.feed(&self.tx8);
        write_voice(&mut self.tx_pkt, self.tx_seq, self.cfg.talkgroup, &self.tx8);
        self.tx_seq = self.tx_seq.wrapping_add(1);
        self.unkey_owed = true;
        self.counters.tx_voice += 1;
        (true, false)
    }
}

fn linear_gain(db: f64) -> Result<f32, UsrpConfigError> {
    if gain_db_valid(db) {
        Ok(gain_from_db(db))
    } else {
        Err(UsrpConfigError::Gain { db })
    }
}

fn scale(s: i16, g: f32) -> i16 {
    if g == 1.0 {
        return s;
    }
    let v = (f32::from(s) * g).round();
    v.clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16
}

#[cfg(test)]
mod tests;
