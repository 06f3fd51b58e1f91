//! A leg: one call's audio at the station's edge, and the commands that add, change and feed it.

use std::net::SocketAddr;

use crate::codec::Codec;
use crate::frame::MiniFrame;
use crate::inband::InbandDtmf;
use crate::jitter::{ControlKind, JitterBuffer};
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

    pub(super) fn run(&mut self, input: &[i16], out: &mut Vec<i16>) {
        out.clear();
        match self {
            Edge::Same => out.extend_from_slice(input),
            Edge::Up(u) => u.process(input, out),
            Edge::Down(d) => d.process(input, out),
        }
    }
}

#[derive(Debug)]
pub(super) struct Leg {
    pub(super) spec: LegSpec,
    pub(super) slot: usize,
    pub(super) jitter: JitterBuffer,
    /// Codec of the peer's audio: the format of its last full voice frame.
    pub(super) rx_codec: Option<Codec>,
    pub(super) rx_edge: Edge,
    pub(super) tx_edge: Edge,
    /// Timestamp of the peer's last full frame, for unwrapping mini frame timestamps.
    pub(super) rx_last_full_ts: u32,
    /// Last good station-rate frame from this leg, for concealment.
    pub(super) last_pcm: Vec<i16>,
    /// This tick's frame of the leg (good or concealed).
    pub(super) pcm: Vec<i16>,
    /// Our send clock: the call timestamp corresponding to `ts_origin_ms` of the engine clock.
    pub(super) ts_base: u32,
    pub(super) ts_origin_ms: u64,
    pub(super) talking_out: bool,
    pub(super) last_full_ts: Option<u32>,
    pub(super) last_tx_codec: Option<Codec>,
    pub(super) mini_before_full_reported: bool,
    /// Whether the leg's receiver is keyed now (reported on every change).
    pub(super) rx_keyed: bool,
    /// When the leg last delivered audio (voice or concealment), for [`RX_LINGER_MS`].
    pub(super) last_audio_ms: u64,
    /// The VOX gate is open until this time.
    pub(super) vox_until_ms: u64,
    /// In-band DTMF detection, when on for this leg.
    pub(super) inband: Option<InbandDtmf>,
    /// The leg's own parrot, in parrot mode (then it is not mixed into the conference).
    pub(super) parrot: Option<Parrot>,
}

impl Leg {
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
    /// Turn in-band DTMF detection on a leg's received audio on or off.
    pub fn set_leg_dtmf(&mut self, callno: u16, on: bool) -> Result<(), MediaError> {
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        let fresh = if on { Some(self.inband()?) } else { None };
        if let Some(leg) = self.legs.get_mut(idx) {
            leg.spec.dtmf = on;
            if !on {
                leg.inband = None;
            } else if leg.inband.is_none() {
                leg.inband = fresh;
            }
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
            tx_edge: Edge::new(self.rate, spec.codec.rate()),
            ts_base: spec.call_ts_ms,
            ts_origin_ms: now_ms,
            slot,
            jitter: JitterBuffer::new(self.jitter_cfg).map_err(|_| MediaError::Jitter)?,
            rx_codec: None,
            rx_last_full_ts: 0,
            last_pcm: vec![0; self.frame_len],
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
        self.by_peer.remove(&(leg.spec.peer, leg.spec.peer_callno));
        let _ = self.conference.remove(leg.slot);
        // The leg that moved into `idx` needs its index updated in both maps.
        if let Some(moved) = self.legs.get(idx) {
            self.by_callno.insert(moved.spec.callno, idx);
            self.by_peer
                .insert((moved.spec.peer, moved.spec.peer_callno), idx);
        }
        Ok(())
    }

    /// Change what a leg does (e.g. a monitor link upgraded to transceive) without re-adding it.
    pub fn set_leg_mode(&mut self, callno: u16, mode: LegMode) -> Result<(), MediaError> {
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        if let Some(leg) = self.legs.get_mut(idx) {
            leg.spec.mode = mode;
        }
        Ok(())
    }

    /// Change how a leg's receiver keys (a link's newkey handshake decided its dialect).
    pub fn set_leg_keying(
        &mut self,
        callno: u16,
        keying: RxKeying,
        events: &mut Vec<MediaEvent>,
    ) -> Result<(), MediaError> {
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        if let Some(leg) = self.legs.get_mut(idx) {
            if leg.spec.keying != keying {
                leg.spec.keying = keying;
                // The new dialect starts unkeyed: a legacy peer keys with its next RADIO_KEY.
                leg.set_rx_keyed(false, events);
            }
        }
        Ok(())
    }

    /// Change the codec we send on a leg (the next frame goes out as a full voice frame).
    pub fn set_leg_codec(&mut self, callno: u16, codec: Codec) -> Result<(), MediaError> {
        let rate = self.rate;
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        if let Some(leg) = self.legs.get_mut(idx) {
            leg.spec.codec = codec;
            leg.tx_edge = Edge::new(rate, codec.rate());
        }
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
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        let leg = self
            .legs
            .get_mut(idx)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        if codec.samples_for_bytes(payload.len()).is_err() {
            return Err(MediaError::BadPayload(callno));
        }
        if leg.rx_codec != Some(codec) {
            leg.rx_codec = Some(codec);
            leg.rx_edge = Edge::new(codec.rate(), rate);
        }
        leg.rx_last_full_ts = ts;
        leg.mini_before_full_reported = false;
        if leg.spec.mode.receives() {
            let _ = leg.jitter.put_voice(ts, payload, now_ms);
        }
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
        let idx = *self
            .by_callno
            .get(&callno)
            .ok_or(MediaError::NoSuchLeg(callno))?;
        let leg = self
            .legs
            .get_mut(idx)
            .ok_or(MediaError::NoSuchLeg(callno))?;
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
        // Every accepted timestamp becomes the reference, which keeps the unwrap exact.
        leg.rx_last_full_ts = ts;
        if leg.spec.mode.receives() {
            let _ = leg.jitter.put_voice(ts, &mini.payload, now_ms);
        }
        true
    }
}
