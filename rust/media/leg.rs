//! A leg: one call's audio at the station's edge, and the commands that add, change and feed it.

use std::net::SocketAddr;

use crate::codec::Codec;
use crate::frame::MiniFrame;
use crate::jitter::{level_dbfs, Concealer, ControlKind, JitterBuffer, LEVEL_UNKNOWN};

/// Samples decoded on the stack to measure a received frame's level (60 ms of slin16).
const LEVEL_SCRATCH: usize = 960;
use crate::parrot::Parrot;
use crate::resample::{Downsampler, Resample, Upsampler};

use super::*;

/// Which resampler sits at a leg's edge.
#[derive(Debug)]
pub(super) enum Edge {
    Same,
    Up(Upsampler),
    Down(Downsampler),
}

impl Edge {
    pub(super) fn new(from_rate: u32, to_rate: u32) -> Edge {
        match (from_rate, to_rate) {
            (a, b) if a == b => Edge::Same,
            (8000, 16000) => Edge::Up(Upsampler::new()),
            _ => Edge::Down(Downsampler::new()),
        }
    }

    /// What `run` would give for `input` now, leaving this edge as it is: `spare` (an edge
    /// built for the same rates) takes its state and runs instead. With a spare of other
    /// rates `out` stays empty.
    pub(super) fn peek(&self, input: &[i16], out: &mut Vec<i16>, spare: &mut Edge) {
        out.clear();
        match (self, spare) {
            (Edge::Same, _) => out.extend_from_slice(input),
            (Edge::Up(u), Edge::Up(s)) => {
                s.copy_state_from(u);
                s.process(input, out);
            }
            (Edge::Down(d), Edge::Down(s)) => {
                s.copy_state_from(d);
                s.process(input, out);
            }
            _ => {}
        }
    }

    pub(super) fn run(&mut self, input: &[i16], out: &mut Vec<i16>) {
        out.clear();
        match self {
            Edge::Same => out.extend_from_slice(input),
            Edge::Up(u) => u.process(input, out),
            Edge::Down(d) => d.process(input, out),
        }
    }
}

impl Leg {
    /// The peer's audio at its (unwrapped) timestamp, from a full voice frame or a mini frame.
    pub(super) fn put_voice(&mut self, ts: u32, payload: &[u8], now_ms: u64) {
        // Every accepted timestamp becomes the reference, which keeps the mini unwrap exact.
        self.rx_last_full_ts = ts;
        if self.spec.mode.receives() {
            let level = self.level_of(payload);
            let _ = self.jitter.put_voice_level(ts, payload, level, now_ms);
        }
    }

    /// The frame's level, so the jitter buffer changes its delay only in pauses (decoded on
    /// the stack: 20 ms of any codec fits, and a larger payload is refused by the buffer).
    fn level_of(&self, payload: &[u8]) -> i16 {
        let mut pcm = [0i16; LEVEL_SCRATCH];
        match self.rx_codec.map(|c| c.decode_into(payload, &mut pcm)) {
            Some(Ok(n)) => level_dbfs(pcm.get(..n).unwrap_or(&[])),
            _ => LEVEL_UNKNOWN,
        }
    }

    pub(super) fn set_rx_keyed(&mut self, keyed: bool, events: &mut Vec<MediaEvent>) {
        if self.rx_keyed != keyed {
            self.rx_keyed = keyed;
            events.push(MediaEvent::RxKey {
                callno: self.spec.callno,
                keyed,
            });
        }
    }
}

impl Station {
    /// The leg of call `callno`.
    pub(super) fn leg_mut(&mut self, callno: u16) -> Result<&mut Leg, MediaError> {
        self.by_callno
            .get(&callno)
            .and_then(|&idx| self.legs.get_mut(idx))
            .ok_or(MediaError::NoSuchLeg(callno))
    }

    /// Turn in-band DTMF detection on a leg's received audio on or off.
    pub fn set_leg_dtmf(&mut self, callno: u16, on: bool) -> Result<(), MediaError> {
        // A missing leg is reported before a station rate without in-band detection.
        let fresh = on.then(|| self.inband());
        let leg = self.leg_mut(callno)?;
        let fresh = fresh.transpose()?;
        leg.spec.dtmf = on;
        if !on {
            leg.inband = None;
        } else if leg.inband.is_none() {
            leg.inband = fresh;
        }
        Ok(())
    }

    pub fn add_leg(&mut self, spec: LegSpec, now_ms: u64) -> Result<(), MediaError> {
        if self.by_callno.contains_key(&spec.callno) {
            return Err(MediaError::LegExists(spec.callno));
        }
        let slot = self.conference.add();
        let idx = self.legs.len();
        let leg = Leg {
            rx_edge: Edge::new(spec.codec.rate(), self.rate),
            peek_edge: Edge::new(spec.codec.rate(), self.rate),
            tx_edge: Edge::new(self.rate, spec.codec.rate()),
            ts_base: spec.call_ts_ms,
            ts_origin_ms: now_ms,
            slot,
            jitter: JitterBuffer::new(self.jitter_cfg).map_err(|_| MediaError::Jitter)?,
            rx_codec: None,
            rx_last_full_ts: 0,
            plc: Concealer::new(self.rate, self.frame_len, self.concealment),
            pcm: vec![0; self.frame_len],
            talking_out: false,
            last_full_ts: None,
            last_tx_codec: None,
            mini_before_full_reported: false,
            rx_keyed: false,
            last_audio_ms: 0,
            vox_until_ms: 0,
            inband: if spec.dtmf {
                Some(self.inband()?)
            } else {
                None
            },
            parrot: self
                .parrot
                .map(|p| Parrot::new(self.rate, self.frame_len, p)),
            local: None,
            echolink: None,
            rx_meter: LoudnessMeter::new(self.rate),
            tx_meter: LoudnessMeter::new(self.rate),
            tx_shared: false,
            normalizer: spec
                .normalize
                .unwrap_or(self.normalize)
                .then(|| Normalizer::new(self.rate, self.normalize_settings)),
            normalizing: false,
            spec,
        };
        self.by_callno.insert(leg.spec.callno, idx);
        self.by_peer
            .insert((leg.spec.peer, leg.spec.peer_callno), idx);
        self.legs.push(leg);
        Ok(())
    }

    pub fn remove_leg(&mut self, callno: u16) -> Result<(), MediaError> {
        let idx = self
            .by_callno
            .remove(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        let leg = self.legs.swap_remove(idx);
        if leg.echolink.is_some() {
            self.forget_echolink(&leg);
        } else {
            self.by_peer.remove(&(leg.spec.peer, leg.spec.peer_callno));
        }
        let _ = self.conference.remove(leg.slot);
        // The leg that moved into `idx` needs its index updated in both maps (an EchoLink
        // leg is found by its station's address, not in `by_peer`).
        if let Some(moved) = self.legs.get(idx) {
            self.by_callno.insert(moved.spec.callno, idx);
            if moved.echolink.is_none() {
                self.by_peer
                    .insert((moved.spec.peer, moved.spec.peer_callno), idx);
            }
        }
        Ok(())
    }

    /// Change what a leg does (e.g. a monitor link upgraded to transceive) without re-adding it.
    pub fn set_leg_mode(&mut self, callno: u16, mode: LegMode) -> Result<(), MediaError> {
        self.leg_mut(callno)?.spec.mode = mode;
        Ok(())
    }

    /// Change how a leg's receiver keys (a link's newkey handshake decided its dialect).
    pub fn set_leg_keying(
        &mut self,
        callno: u16,
        keying: RxKeying,
        events: &mut Vec<MediaEvent>,
    ) -> Result<(), MediaError> {
        let leg = self.leg_mut(callno)?;
        if leg.spec.keying != keying {
            leg.spec.keying = keying;
            // The new dialect starts unkeyed: a legacy peer keys with its next RADIO_KEY.
            leg.set_rx_keyed(false, events);
        }
        Ok(())
    }

    /// Change the codec we send on a leg (the next frame goes out as a full voice frame).
    pub fn set_leg_codec(&mut self, callno: u16, codec: Codec) -> Result<(), MediaError> {
        let rate = self.rate;
        let leg = self.leg_mut(callno)?;
        leg.spec.codec = codec;
        leg.tx_edge = Edge::new(rate, codec.rate());
        Ok(())
    }

    /// The payload of a full voice frame Python received (and acknowledged) for `callno`.
    pub fn push_full_voice(
        &mut self,
        callno: u16,
        codec: Codec,
        ts: u32,
        payload: &[u8],
        now_ms: u64,
    ) -> Result<(), MediaError> {
        let rate = self.rate;
        let leg = self.leg_mut(callno)?;
        if codec.samples_for_bytes(payload.len()).is_err() {
            return Err(MediaError::BadPayload(callno));
        }
        if leg.rx_codec != Some(codec) {
            leg.rx_codec = Some(codec);
            leg.rx_edge = Edge::new(codec.rate(), rate);
            leg.peek_edge = Edge::new(codec.rate(), rate);
        }
        leg.mini_before_full_reported = false;
        leg.put_voice(ts, payload, now_ms);
        Ok(())
    }

    /// A control event from the peer that must stay in order with its audio (KEY/UNKEY,
    /// DTMF, TEXT with its text as payload).
    pub fn push_control(
        &mut self,
        callno: u16,
        kind: ControlKind,
        ts: u32,
        payload: &[u8],
        now_ms: u64,
    ) -> Result<(), MediaError> {
        let leg = self.leg_mut(callno)?;
        let _ = leg.jitter.put_control(ts, kind, payload, now_ms);
        Ok(())
    }

    /// A mini frame from the network. Returns false when no leg matches (counted by the engine).
    pub fn on_mini(
        &mut self,
        from: SocketAddr,
        mini: &MiniFrame,
        now_ms: u64,
        events: &mut Vec<MediaEvent>,
    ) -> bool {
        let Some(&idx) = self.by_peer.get(&(from, mini.scall)) else {
            return false;
        };
        let Some(leg) = self.legs.get_mut(idx) else {
            return false;
        };
        if leg.rx_codec.is_none() {
            // Asterisk answers a mini frame that precedes every full voice frame with VNAK so
            // the peer resends the full frame that sets the codec.
            if !leg.mini_before_full_reported {
                leg.mini_before_full_reported = true;
                events.push(MediaEvent::MiniBeforeFull {
                    callno: leg.spec.callno,
                });
            }
            return true;
        }
        let ts = crate::jitter::unwrap_mini(leg.rx_last_full_ts, mini.ts16);
        leg.put_voice(ts, &mini.payload, now_ms);
        true
    }
}
