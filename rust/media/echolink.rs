//! EchoLink legs: a station's GSM audio in the conference like an IAX2 leg's.
//!
//! An EchoLink leg is an ordinary [`Leg`] (the same jitter buffer, concealment, resampling to
//! the station rate, mix-minus, keying and events, with a leg id from [`FIRST_LEG`] up, outside
//! IAX2's 15-bit call numbers) plus an [`EchoLinkEdge`] in place of IAX2's codec edge:
//!
//! - **Receive.** A packet from the station's address carries four GSM frames (80 ms). Each is
//!   decoded as it arrives, in the packet's order, by the leg's own decoder (GSM predicts from
//!   the frames before, so a stream keeps one decoder), and goes into the jitter buffer as a
//!   20 ms slin frame at `seq * 80 + i * 20` ms: the buffer, its level tracking and the
//!   concealment then work on it exactly as on an IAX2 leg's frames.
//! - **Send.** While the conference has audio for the leg, each tick's mix is resampled to
//!   8 kHz and GSM-encoded; every fourth frame completes a packet to the station, sequence
//!   numbers from 0 per leg. When the audio stops, the packet under way is completed with the
//!   quiet frames that follow and [`TX_HANG_MS`] of them are sent, so the last word is never
//!   held back in a half-filled packet and the far end hears a clean tail.

use std::net::{IpAddr, SocketAddr};

use crate::codec::Codec;
use crate::echolink::{self, GsmFrame, FRAMES_PER_PACKET, PACKET_LEN};
use crate::gsm::{self, FRAME_SAMPLES};

use super::leg::Edge;
use super::*;

/// The first EchoLink leg id: IAX2 call numbers are 15 bits (1..=32767), so EchoLink legs never
/// share an id with a call.
pub const FIRST_LEG: u16 = 32768;

/// How long a leg keeps sending after the conference's audio for it stops (whole packets).
pub const TX_HANG_MS: u64 = 80;

/// Milliseconds of audio in one packet.
const PACKET_MS: u32 = FRAME_MS * FRAMES_PER_PACKET as u32;
/// A silence after which the next packet starts a new over (see `EchoLinkEdge::rx_ts`): longer
/// than a working network's jitter, shorter than a pause between overs. A packet held back
/// longer than this mid-over is timed late rather than dropped: the buffer plays it and the
/// rest of the over with more delay, which it then sheds.
const PAUSE_MS: u64 = 600;

/// What Python tells the engine when an EchoLink station's audio starts.
#[derive(Debug, Clone)]
pub struct EchoLinkLegSpec {
    /// The leg id (at least [`FIRST_LEG`]).
    pub leg: u16,
    /// Where the station's audio comes from (its packets are matched by address alone).
    pub ip: IpAddr,
    /// Where our audio for it goes: its audio port (5198 by the protocol).
    pub to: SocketAddr,
    pub mode: LegMode,
    pub keying: RxKeying,
    /// Decode in-band DTMF in the station's audio.
    pub dtmf: bool,
}

/// What one EchoLink leg counted since it was added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EchoLinkLegStats {
    /// Audio packets taken from the station.
    pub packets_in: u64,
    /// GSM frames decoded into the jitter buffer.
    pub frames_in: u64,
    /// Packets of the station's address that are not a GSM audio packet (dropped).
    pub packets_malformed: u64,
    /// Frames without the GSM signature (dropped; the buffer conceals them).
    pub frames_bad: u64,
    /// Packets whose sequence number skipped ahead (the gap is what the network lost).
    pub seq_gaps: u64,
    /// Packets and frames sent to the station.
    pub packets_out: u64,
    pub frames_out: u64,
}

/// The GSM and packet side of an EchoLink leg.
#[derive(Debug)]
pub(super) struct EchoLinkEdge {
    ip: IpAddr,
    to: SocketAddr,
    decoder: gsm::Decoder,
    encoder: gsm::Encoder,
    /// The last packet received: its sequence number, the buffer timestamp given to its first
    /// frame, and when it arrived.
    rx_seq: Option<u16>,
    rx_ts: u32,
    rx_at_ms: u64,
    /// Frames of the packet being filled.
    tx_frames: [GsmFrame; FRAMES_PER_PACKET],
    tx_count: usize,
    tx_seq: u16,
    /// Sending (a talk spurt, its hang or the rest of its packet), and until when the hang runs.
    talking: bool,
    hang_until_ms: u64,
    stats: EchoLinkLegStats,
}

/// Where a datagram of the audio port went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoLinkRoute {
    /// Its frames went to the leg of its source address.
    Played,
    /// No leg has its source address.
    Unrouted,
    /// The leg's station sent something that is not a GSM audio packet.
    Malformed,
}

/// The audio packets of one tick, to go out of the EchoLink audio port.
#[derive(Debug, Default)]
pub struct EchoLinkOutput {
    /// Packets back to back, [`PACKET_LEN`] bytes each (the buffer is kept across ticks).
    bytes: Vec<u8>,
    to: Vec<SocketAddr>,
}

impl EchoLinkOutput {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.to.clear();
    }

    /// Each packet with its destination.
    pub fn packets(&self) -> impl Iterator<Item = (&[u8], SocketAddr)> {
        self.bytes
            .chunks_exact(PACKET_LEN)
            .zip(self.to.iter().copied())
    }

    pub fn len(&self) -> usize {
        self.to.len()
    }

    pub fn is_empty(&self) -> bool {
        self.to.is_empty()
    }

    pub(super) fn capacity(&self) -> usize {
        self.bytes.capacity() + self.to.capacity()
    }
}

impl EchoLinkEdge {
    fn new(ip: IpAddr, to: SocketAddr) -> Self {
        EchoLinkEdge {
            ip,
            to,
            decoder: gsm::Decoder::default(),
            encoder: gsm::Encoder::default(),
            rx_seq: None,
            rx_ts: 0,
            rx_at_ms: 0,
            tx_frames: [[0; gsm::FRAME_BYTES]; FRAMES_PER_PACKET],
            tx_count: 0,
            tx_seq: 0,
            talking: false,
            hang_until_ms: 0,
            stats: EchoLinkLegStats::default(),
        }
    }

    /// The jitter-buffer timestamp of the first frame of the packet with `seq`, arriving at
    /// `now_ms`.
    ///
    /// Within an over a packet is timed by its sequence number (80 ms a step), so network
    /// jitter and reordering reach the buffer as they are. But a station sends nothing between
    /// overs and its sequence numbers go on from the last packet (EchoLink has no timestamps):
    /// timed by sequence alone, the next over's packets would look as late as the pause was
    /// long, and the buffer would drop and conceal them until it resynchronised. So a packet
    /// that follows its predecessor in sequence after a silence longer than any jitter the
    /// buffer follows is timed by its arrival: the pause moves the timestamps on, as an IAX2
    /// peer's clock does.
    fn rx_ts(&mut self, seq: u16, now_ms: u64) -> u32 {
        if let Some(last) = self.rx_seq {
            let step = i32::from(seq.wrapping_sub(last) as i16);
            if step > 1 {
                self.stats.seq_gaps += 1;
            }
            let by_seq = self
                .rx_ts
                .wrapping_add_signed(step.wrapping_mul(PACKET_MS as i32));
            let silent_ms = now_ms.saturating_sub(self.rx_at_ms);
            self.rx_ts = if step > 0 && silent_ms > PAUSE_MS {
                // Whole frames, so the buffer's frame grid stays where it was.
                let by_clock = self
                    .rx_ts
                    .wrapping_add((silent_ms / u64::from(FRAME_MS) * u64::from(FRAME_MS)) as u32);
                // Whichever is later: a burst the network held back is not moved earlier.
                if (by_clock.wrapping_sub(by_seq) as i32) > 0 {
                    by_clock
                } else {
                    by_seq
                }
            } else {
                by_seq
            };
        }
        self.rx_seq = Some(seq);
        self.rx_at_ms = now_ms;
        self.rx_ts
    }

    /// One tick's audio for the station (`None`: the conference has none for it): encode it,
    /// and complete a packet every fourth frame.
    fn transmit(
        &mut self,
        now_ms: u64,
        mix: Option<&[i16]>,
        silence: &[i16],
        tx_edge: &mut Edge,
        scratch: &mut Vec<i16>,
        out: &mut EchoLinkOutput,
    ) {
        let pcm = match mix {
            Some(mix) => {
                self.talking = true;
                self.hang_until_ms = now_ms + TX_HANG_MS;
                mix
            }
            None if self.talking && (now_ms < self.hang_until_ms || self.tx_count != 0) => silence,
            None => {
                self.talking = false;
                return;
            }
        };
        tx_edge.run(pcm, scratch);
        scratch.resize(FRAME_SAMPLES, 0);
        let frame: &[i16; FRAME_SAMPLES] = match scratch.as_slice().try_into() {
            Ok(f) => f,
            Err(_) => return,
        };
        if let Some(slot) = self.tx_frames.get_mut(self.tx_count) {
            *slot = self.encoder.encode(frame);
            self.tx_count += 1;
            self.stats.frames_out += 1;
        }
        if self.tx_count == FRAMES_PER_PACKET {
            echolink::build(self.tx_seq, &self.tx_frames, &mut out.bytes);
            out.to.push(self.to);
            self.tx_seq = self.tx_seq.wrapping_add(1);
            self.tx_count = 0;
            self.stats.packets_out += 1;
        }
    }
}

impl Station {
    /// Add the leg of an EchoLink station: a leg of the conference like an IAX2 link's, fed
    /// and heard through [`EchoLinkEdge`].
    pub fn add_echolink_leg(
        &mut self,
        spec: EchoLinkLegSpec,
        now_ms: u64,
    ) -> Result<(), MediaError> {
        if spec.leg < FIRST_LEG {
            return Err(MediaError::EchoLinkLegId(spec.leg));
        }
        if self.by_echolink.contains_key(&spec.ip) {
            return Err(MediaError::EchoLinkStationExists(spec.ip));
        }
        let leg = LegSpec {
            callno: spec.leg,
            peer_callno: 0,
            peer: spec.to,
            // What travels through the jitter buffer: the decoded GSM, as 8 kHz slin.
            codec: Codec::Slin,
            mode: spec.mode,
            keying: spec.keying,
            call_ts_ms: 0,
            dtmf: spec.dtmf,
            link: true,
            // A station's voice is normalised as a link's is, when the node normalises.
            normalize: None,
        };
        self.add_leg(leg, now_ms)?;
        // The leg is found by its station's address, never by IAX2 mini frames.
        self.by_peer.remove(&(spec.to, 0));
        let leg = self.leg_mut(spec.leg)?;
        leg.rx_codec = Some(Codec::Slin);
        leg.echolink = Some(Box::new(EchoLinkEdge::new(spec.ip, spec.to)));
        self.by_echolink.insert(spec.ip, spec.leg);
        Ok(())
    }

    /// Forget an EchoLink leg's address (the leg itself goes in [`Station::remove_leg`]).
    pub(super) fn forget_echolink(&mut self, leg: &Leg) {
        if let Some(el) = leg.echolink.as_deref() {
            self.by_echolink.remove(&el.ip);
        }
    }

    /// An audio packet from `from` (the EchoLink audio port's first byte was 0xC0).
    pub fn on_echolink_audio(
        &mut self,
        from: SocketAddr,
        data: &[u8],
        now_ms: u64,
    ) -> EchoLinkRoute {
        let Some(&id) = self.by_echolink.get(&from.ip()) else {
            return EchoLinkRoute::Unrouted;
        };
        let Ok(leg) = self.leg_mut(id) else {
            return EchoLinkRoute::Unrouted;
        };
        let Some(el) = leg.echolink.as_deref_mut() else {
            return EchoLinkRoute::Unrouted;
        };
        let packet = match echolink::parse(data) {
            Ok(p) => p,
            Err(_) => {
                el.stats.packets_malformed += 1;
                return EchoLinkRoute::Malformed;
            }
        };
        el.stats.packets_in += 1;
        let ts = el.rx_ts(packet.seq, now_ms);
        let mut slin = [[0u8; FRAME_SAMPLES * 2]; FRAMES_PER_PACKET];
        let mut good = [false; FRAMES_PER_PACKET];
        let mut pcm = [0i16; FRAME_SAMPLES];
        for ((frame, out), ok) in packet.frames.iter().zip(&mut slin).zip(&mut good) {
            if el.decoder.decode(frame, &mut pcm).is_err() {
                el.stats.frames_bad += 1;
                continue;
            }
            for (bytes, s) in out.chunks_exact_mut(2).zip(pcm) {
                bytes.copy_from_slice(&s.to_be_bytes());
            }
            *ok = true;
            el.stats.frames_in += 1;
        }
        for (i, payload) in slin.iter().enumerate() {
            if good[i] {
                leg.put_voice(ts.wrapping_add(i as u32 * FRAME_MS), payload, now_ms);
            }
        }
        EchoLinkRoute::Played
    }

    /// Every EchoLink leg's counters, written into a reused buffer.
    pub fn fill_echolink_stats(&self, out: &mut Vec<(u16, EchoLinkLegStats)>) {
        out.clear();
        out.extend(
            self.legs
                .iter()
                .filter_map(|l| l.echolink.as_deref().map(|el| (l.spec.callno, el.stats))),
        );
    }

    /// One EchoLink leg's tick of sending (see [`EchoLinkEdge::transmit`]).
    pub(super) fn transmit_echolink(
        leg: &mut Leg,
        now_ms: u64,
        mix: Option<&[i16]>,
        silence: &[i16],
        scratch: &mut Vec<i16>,
        out: &mut EchoLinkOutput,
    ) {
        if let Some(el) = leg.echolink.as_deref_mut() {
            el.transmit(now_ms, mix, silence, &mut leg.tx_edge, scratch, out);
        }
    }
}

#[cfg(test)]
mod tests;
