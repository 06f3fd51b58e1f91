//! Local links: two stations of one engine linked without the network.
//!
//! Each end is a leg of its station, a member of the conference like any link, whose audio is
//! handed over by the engine between ticks instead of being encoded and sent: what one end hears
//! of its conference at a tick is what the other end says at the next. Keying crosses with the
//! audio, as on a modern AllStarLink link: voice keys the receiving end, and
//! [`RX_LINGER_MS`](super::RX_LINGER_MS) without it unkeys it.

use std::net::{Ipv4Addr, SocketAddr};

use crate::codec::Codec;

use super::*;

/// A local link's end of a leg: the frame it received and the frame it sends, both at the
/// station rate.
#[derive(Debug)]
pub(super) struct LocalEnd {
    rx: Vec<i16>,
    rx_ready: bool,
    tx: Vec<i16>,
    tx_ready: bool,
}

impl LocalEnd {
    fn new(frame_len: usize) -> LocalEnd {
        LocalEnd {
            rx: vec![0; frame_len],
            rx_ready: false,
            tx: vec![0; frame_len],
            tx_ready: false,
        }
    }

    /// The received frame into `pcm`, once; false when the other end said nothing.
    pub(super) fn take_rx(&mut self, pcm: &mut [i16]) -> bool {
        let ready = std::mem::take(&mut self.rx_ready) && pcm.len() == self.rx.len();
        if ready {
            pcm.copy_from_slice(&self.rx);
        }
        ready
    }

    /// This tick's mix for the other end.
    pub(super) fn put_tx(&mut self, mix: &[i16]) {
        self.tx_ready = mix.len() == self.tx.len();
        if self.tx_ready {
            self.tx.copy_from_slice(mix);
        }
    }

    /// The conference gave this end nothing this tick.
    pub(super) fn quiet(&mut self) {
        self.tx_ready = false;
    }
}

/// The address a local leg is filed under: no datagram comes from the unspecified address, so
/// no mini frame ever reaches a local leg.
const NOWHERE: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

impl Station {
    /// Add one end of a local link as leg `id` (a number from the port's call-number space, so
    /// leg commands address it like any leg).
    pub fn add_local_leg(&mut self, id: u16, mode: LegMode, now_ms: u64) -> Result<(), MediaError> {
        let codec = if self.rate == 16000 {
            Codec::Slin16
        } else {
            Codec::Slin
        };
        self.add_leg(
            LegSpec {
                callno: id,
                // Unique per leg, so the peer index never files two local legs together.
                peer_callno: id,
                peer: NOWHERE,
                codec,
                mode,
                keying: RxKeying::Voice,
                call_ts_ms: 0,
                dtmf: false,
                link: true,
            },
            now_ms,
        )?;
        let frame_len = self.frame_len;
        let leg = self.leg_mut(id)?;
        leg.rx_codec = Some(codec);
        leg.local = Some(LocalEnd::new(frame_len));
        Ok(())
    }

    /// Whether leg `id` is a local link's end.
    pub fn is_local_leg(&self, id: u16) -> bool {
        self.by_callno
            .get(&id)
            .and_then(|&i| self.legs.get(i))
            .is_some_and(|l| l.local.is_some())
    }

    /// What local leg `id` heard of its conference in the last tick, if anything.
    pub fn local_leg_tx(&self, id: u16) -> Option<&[i16]> {
        let leg = self.legs.get(*self.by_callno.get(&id)?)?;
        let end = leg.local.as_ref()?;
        end.tx_ready.then_some(&end.tx[..])
    }

    /// The other end's frame, for local leg `id`'s next tick (ignored for any other leg).
    pub fn put_local_leg_rx(&mut self, id: u16, pcm: &[i16]) {
        let Some(end) = self
            .by_callno
            .get(&id)
            .and_then(|&i| self.legs.get_mut(i))
            .and_then(|l| l.local.as_mut())
        else {
            return;
        };
        if pcm.len() == end.rx.len() {
            end.rx.copy_from_slice(pcm);
            end.rx_ready = true;
        }
    }
}
