//! One 20 ms tick: pull each leg's frame, mix, and push each listener's frame out.

use crate::codec::Codec;
use crate::jitter::{ControlKind, GetResult};
use crate::parrot::Parrot;

use super::*;

/// Mean power of a frame in dBFS (a full-scale sine is -3 dBFS); -inf for silence.
fn frame_dbfs(pcm: &[i16]) -> f64 {
    if pcm.is_empty() {
        return f64::NEG_INFINITY;
    }
    let energy: f64 = pcm.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    let ms = energy / pcm.len() as f64;
    10.0 * (ms / (32768.0 * 32768.0)).log10()
}

fn wrap_diff(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

impl Station {
    /// One 20 ms tick at `now_ms`.
    pub fn tick(&mut self, now_ms: u64, out: &mut TickOutput) {
        self.conference.begin_tick();
        if self.local_only_heard {
            self.local_only.fill(0);
            self.local_only_heard = false;
        }
        self.pull_legs(now_ms, out);
        if let Some(slot) = self.local_slot {
            let local_in = self.local_in.take();
            if let Some(pcm) = local_in.as_deref() {
                self.local_rx_meter.feed(pcm);
            }
            let muted = match self.local_dtmf.as_mut() {
                Some(ib) => ib.frame(local_in.as_deref(), &self.silence, |digit| {
                    out.events.push(MediaEvent::Dtmf {
                        callno: None,
                        digit,
                    })
                }),
                None => false,
            };
            // Parrot mode takes what the local radio says when it is a member; the operator's
            // key still talks to everyone.
            let parrot = self.local_parrot.as_mut().filter(|_| self.local_member);
            if let Some(parrot) = parrot {
                let frame = local_in
                    .as_deref()
                    .map(|pcm| if muted { &self.silence[..] } else { pcm });
                parrot.tick(now_ms, frame);
            } else {
                match local_in {
                    Some(pcm) => {
                        let frame = if muted { &self.silence } else { &pcm };
                        let _ = self.conference.put(slot, frame);
                    }
                    None if self.local_keyed => {
                        // Keyed with no microphone frame this tick: send silence rather than
                        // break the talk spurt.
                        self.decoded.clear();
                        self.decoded.resize(self.frame_len, 0);
                        let _ = self.conference.put(slot, &self.decoded);
                    }
                    None => {}
                }
            }
        }
        self.conference.mix();
        self.track_activity(now_ms, &mut out.events);
        self.player.tick(&mut self.player_events);
        out.events
            .extend(self.player_events.drain(..).map(MediaEvent::Play));
        self.push_legs(now_ms, out);
        self.local_hears = false;
        self.local_out.fill(0);
        if let (Some(slot), true) = (self.local_slot, self.local_member) {
            self.local_hears = self.conference.hears_audio(slot);
            if let Ok(o) = self.conference.output(slot) {
                self.local_out.copy_from_slice(o);
            }
        }
        if let Some(clips) = self.player.local() {
            add_saturating(&mut self.local_out, clips);
        }
        // The local radio's own parrot plays back to it like conference audio would.
        let echo = self.local_member
            && match self.local_parrot.as_ref().and_then(Parrot::output) {
                Some(echo) => {
                    add_saturating(&mut self.local_out, echo);
                    true
                }
                None => false,
            };
        // Local monitor links play on the local radio as conference audio would, never to the
        // other members.
        let local_only = self.local_only_heard;
        if local_only {
            add_saturating(&mut self.local_out, &self.local_only);
        }
        self.local_hears |= self.player.keys_local() || echo || (local_only && self.local_member);
        self.local_speaker = self.local_member || local_only || self.player.local().is_some();
        if self.local_speaker {
            self.local_tx_meter.feed(&self.local_out);
        }
        if self.local_hears != self.local_tx {
            self.local_tx = self.local_hears;
            out.events.push(MediaEvent::LocalTx {
                on: self.local_hears,
            });
        }
    }

    fn track_activity(&mut self, now_ms: u64, events: &mut Vec<MediaEvent>) {
        if self.conference.talkers() > 0 {
            self.active_until_ms = now_ms + ACTIVITY_HANG_MS;
            if !self.active {
                self.active = true;
                events.push(MediaEvent::Activity { active: true });
            }
        } else if self.active && now_ms >= self.active_until_ms {
            self.active = false;
            events.push(MediaEvent::Activity { active: false });
        }
    }

    fn pull_legs(&mut self, now_ms: u64, out: &mut TickOutput) {
        let frame_len = self.frame_len;
        for leg in &mut self.legs {
            // Control events due now come out ahead of the audio that follows them; then one
            // item fills the tick.
            let mut ready = false;
            let mut fresh = false;
            if let Some(end) = leg.local.as_mut() {
                // A local link's frame comes from the other station's last tick, already at
                // this station's rate: no jitter buffer, no codec.
                if end.take_rx(&mut leg.pcm) {
                    ready = true;
                    fresh = true;
                }
            }
            while leg.local.is_none() {
                match leg.jitter.get(now_ms) {
                    GetResult::Control { ts, kind, payload } => {
                        out.events.push(MediaEvent::Control {
                            callno: leg.spec.callno,
                            kind,
                            ts,
                            payload: payload.to_vec(),
                        });
                        match (leg.spec.keying, kind) {
                            (RxKeying::Control, ControlKind::Key) => {
                                leg.set_rx_keyed(true, &mut out.events)
                            }
                            (RxKeying::Control | RxKeying::Voice, ControlKind::Unkey) => {
                                leg.set_rx_keyed(false, &mut out.events)
                            }
                            _ => {}
                        }
                    }
                    GetResult::Dropped { .. } => {}
                    GetResult::Voice { payload, .. } => {
                        let Some(codec) = leg.rx_codec else { break };
                        self.decoded.clear();
                        if codec.decode(payload, &mut self.decoded).is_err() {
                            break;
                        }
                        leg.rx_edge.run(&self.decoded, &mut self.resampled);
                        fit(&mut self.resampled, frame_len);
                        leg.pcm.copy_from_slice(&self.resampled);
                        leg.plc.good(&mut leg.pcm);
                        ready = true;
                        fresh = true;
                        break;
                    }
                    GetResult::Interpolate { .. } => {
                        // The frame after the gap, when it is already queued: the gap is
                        // interpolated toward it (no added delay).
                        let ahead = leg.jitter.next_voice().and_then(|(gap, payload)| {
                            let codec = leg.rx_codec?;
                            self.decoded.clear();
                            codec.decode(payload, &mut self.decoded).ok()?;
                            leg.rx_edge.peek(
                                &self.decoded,
                                &mut self.resampled,
                                &mut leg.peek_edge,
                            );
                            (self.resampled.len() == frame_len).then_some(gap)
                        });
                        ready = match ahead {
                            Some(gap) => leg.plc.conceal_toward(&mut leg.pcm, &self.resampled, gap),
                            None => leg.plc.conceal(&mut leg.pcm),
                        };
                        break;
                    }
                    GetResult::Silence => {
                        leg.plc.reset();
                        break;
                    }
                }
            }
            if ready {
                leg.last_audio_ms = now_ms;
                leg.rx_meter.feed(&leg.pcm);
            }
            let mixed = match leg.spec.keying {
                RxKeying::Always => {
                    leg.set_rx_keyed(ready, &mut out.events);
                    ready
                }
                RxKeying::Vox => {
                    // The gate also opens for the frames just before a word (what the jitter
                    // buffer holds of it already), so a weak onset is not clipped.
                    if fresh
                        && (frame_dbfs(&leg.pcm) >= VOX_OPEN_DBFS
                            || leg
                                .jitter
                                .loud_ahead(VOX_LOOKAHEAD_FRAMES, VOX_OPEN_DBFS as i16))
                    {
                        leg.vox_until_ms = now_ms + VOX_HANG_MS;
                    }
                    let open = now_ms < leg.vox_until_ms;
                    leg.set_rx_keyed(open, &mut out.events);
                    ready && open
                }
                RxKeying::Voice => {
                    if fresh {
                        leg.set_rx_keyed(true, &mut out.events);
                    } else if leg.rx_keyed
                        && !ready
                        && now_ms.saturating_sub(leg.last_audio_ms) >= RX_LINGER_MS
                    {
                        leg.set_rx_keyed(false, &mut out.events);
                    }
                    ready
                }
                RxKeying::Control => ready && leg.rx_keyed,
            };
            let heard = mixed && leg.spec.mode.receives();
            // Written out here rather than shared with the local radio's: one shared call site
            // stops the compiler inlining the detector into this loop (measured: 9 % more
            // instructions per leg-frame with detection on).
            let muted = match leg.inband.as_mut() {
                Some(ib) => {
                    let callno = leg.spec.callno;
                    ib.frame(heard.then_some(&leg.pcm[..]), &self.silence, |digit| {
                        out.events.push(MediaEvent::Dtmf {
                            callno: Some(callno),
                            digit,
                        })
                    })
                }
                None => false,
            };
            // What the voice says is normalised after the DTMF detector heard it as it came.
            if let Some(norm) = leg.normalizer.as_mut() {
                if heard && !muted {
                    norm.process(&mut leg.pcm);
                    leg.normalizing = true;
                } else if leg.normalizing {
                    norm.pause();
                    leg.normalizing = false;
                }
            }
            // A muted tone still holds the talk spurt: silence, not a gap that would unkey
            // the links in the middle of a command.
            let frame = if muted {
                &self.silence[..]
            } else {
                &leg.pcm[..]
            };
            if let Some(parrot) = leg.parrot.as_mut() {
                parrot.tick(now_ms, heard.then_some(frame));
            } else if heard && leg.spec.mode == LegMode::LocalOnly {
                add_saturating(&mut self.local_only, frame);
                self.local_only_heard = true;
            } else if heard {
                let _ = self.conference.put(leg.slot, frame);
            }
        }
    }

    fn push_legs(&mut self, now_ms: u64, out: &mut TickOutput) {
        // Listeners that hear the plain conference (not a mix-minus of their own), in the same
        // codec at the station rate, get the same bytes: one encode per codec and tick, one
        // payload buffer shared by all their datagrams (Asterisk's softmix does the same).
        // Calls and links may hear different announcements, and a parrot's echo is its leg's
        // own, so the key is (codec, link) and an echoing leg never shares.
        let mut shared: Vec<((Codec, bool), usize)> = Vec::new();
        let mut shared_metered = [false; 2];
        for leg in &mut self.legs {
            let transmits = leg.spec.mode.transmits();
            // Announcements reach calls (to_air) and, only when asked, the links.
            let clips = match (transmits, leg.spec.link) {
                (false, _) => None,
                (true, false) => self.player.air(),
                (true, true) => self.player.links(),
            };
            let echo = leg.parrot.as_ref().and_then(Parrot::output);
            let hears = transmits
                && (self.conference.hears_audio(leg.slot) || clips.is_some() || echo.is_some());
            let elapsed = now_ms.saturating_sub(leg.ts_origin_ms);
            // Timestamps advance in whole frames so the peer's jitter buffer sees a steady clock.
            let ts = leg
                .ts_base
                .wrapping_add((elapsed / u64::from(FRAME_MS) * u64::from(FRAME_MS)) as u32);
            if leg.echolink.is_some() {
                let mix = if hears {
                    leg_mix(
                        &self.conference,
                        &mut self.with_clips,
                        leg.slot,
                        [clips, echo],
                    )
                } else {
                    None
                };
                Station::transmit_echolink(
                    leg,
                    now_ms,
                    mix,
                    &self.silence,
                    &mut self.resampled,
                    &mut out.echolink,
                );
                continue;
            }
            if !hears {
                if let Some(end) = leg.local.as_mut() {
                    end.quiet();
                    continue;
                }
                if leg.talking_out {
                    leg.talking_out = false;
                    out.events.push(MediaEvent::SpurtEnded {
                        callno: leg.spec.callno,
                        ts,
                    });
                }
                continue;
            }
            let Some(mix) = leg_mix(
                &self.conference,
                &mut self.with_clips,
                leg.slot,
                [clips, echo],
            ) else {
                continue;
            };
            if let Some(end) = leg.local.as_mut() {
                end.put_tx(mix);
                continue;
            }
            let codec = leg.spec.codec;
            let stateless_edge = matches!(leg.tx_edge, Edge::Same);
            let shareable =
                stateless_edge && echo.is_none() && self.conference.hears_total(leg.slot);
            // The mix is the same for every leg that hears the total with the same clips,
            // whatever its codec or edge: metered once per tick for them all.
            leg.tx_shared = self.conference.hears_total(leg.slot) && echo.is_none();
            if leg.tx_shared {
                let k = usize::from(leg.spec.link);
                if let (Some(meter), Some(done)) =
                    (self.shared_tx.get_mut(k), shared_metered.get_mut(k))
                {
                    if !*done {
                        meter.feed(mix);
                        *done = true;
                    }
                }
            } else {
                leg.tx_meter.feed(mix);
            }
            let key = (codec, leg.spec.link);
            let payload = match shared.iter().find(|(k, _)| *k == key) {
                Some(&(_, i)) if shareable => i,
                _ => {
                    let i = if stateless_edge {
                        out.encode_payload(codec, mix)
                    } else {
                        // A resampler keeps per-leg history: it runs for every frame it sends.
                        leg.tx_edge.run(mix, &mut self.resampled);
                        out.encode_payload(codec, &self.resampled)
                    };
                    if shareable {
                        shared.push((key, i));
                    }
                    i
                }
            };
            let spurt_start = !leg.talking_out;
            let needs_full = spurt_start
                || leg.last_tx_codec != Some(codec)
                || leg
                    .last_full_ts
                    .is_none_or(|f| (f >> 15) != (ts >> 15) || wrap_diff(ts, f) < 0);
            leg.talking_out = true;
            if needs_full {
                leg.last_full_ts = Some(ts);
                leg.last_tx_codec = Some(codec);
                let payload = out.payloads.get(payload).cloned().unwrap_or_default();
                out.events.push(MediaEvent::FullVoice {
                    callno: leg.spec.callno,
                    format: codec.format_bit(),
                    ts,
                    payload,
                    spurt_start,
                });
            } else {
                out.datagrams.push(Outgoing {
                    to: leg.spec.peer,
                    head: crate::frame::mini_header(leg.spec.callno, (ts & 0xFFFF) as u16),
                    payload,
                });
            }
        }
    }
}

/// The mix a transmitting leg hears this tick, with the announcements and its parrot's echo
/// added (into `with_clips`) when there are any.
fn leg_mix<'a>(
    conference: &'a Conference,
    with_clips: &'a mut Vec<i16>,
    slot: usize,
    extras: [Option<&[i16]>; 2],
) -> Option<&'a [i16]> {
    let mix = conference.output(slot).ok()?;
    if extras.iter().all(Option::is_none) {
        return Some(mix);
    }
    with_clips.clear();
    with_clips.extend_from_slice(mix);
    for extra in extras.into_iter().flatten() {
        add_saturating(with_clips, extra);
    }
    Some(with_clips)
}

/// `acc[i] += add[i]`, saturated.
pub(super) fn add_saturating(acc: &mut [i16], add: &[i16]) {
    for (a, b) in acc.iter_mut().zip(add) {
        *a = a.saturating_add(*b);
    }
}

/// Make a resampled frame exactly `len` samples (a resampler's first call may be short by its
/// start-up delay; never longer in steady state).
fn fit(buf: &mut Vec<i16>, len: usize) {
    buf.resize(len, 0);
}
