//! What a tick hands the engine: datagrams with shared payloads, and events for Python.

use std::net::SocketAddr;

use crate::codec::Codec;

use super::{EchoLinkOutput, MediaEvent};

/// A frame ready to be sent as a mini frame: its 4-byte header, then one of the tick's encoded
/// payloads, which listeners hearing the same mix share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub to: SocketAddr,
    pub head: [u8; 4],
    /// Index into [`TickOutput::payloads`].
    pub payload: usize,
}

/// The result of one tick.
#[derive(Debug, Default)]
pub struct TickOutput {
    pub datagrams: Vec<Outgoing>,
    pub events: Vec<MediaEvent>,
    /// Audio packets for EchoLink stations, out of the EchoLink audio port.
    pub echolink: EchoLinkOutput,
    /// Encoded payloads of this tick (buffers are kept and reused across ticks).
    pub(super) payloads: Vec<Vec<u8>>,
    payloads_used: usize,
}

impl TickOutput {
    pub fn clear(&mut self) {
        self.datagrams.clear();
        self.events.clear();
        self.echolink.clear();
        self.payloads_used = 0;
    }

    /// The payload a datagram carries.
    pub fn payload(&self, d: &Outgoing) -> &[u8] {
        self.payloads.get(d.payload).map_or(&[], Vec::as_slice)
    }

    /// A datagram as one buffer (header and payload), as it goes on the wire.
    pub fn wire(&self, d: &Outgoing) -> Vec<u8> {
        let mut v = d.head.to_vec();
        v.extend_from_slice(self.payload(d));
        v
    }

    /// Payloads encoded this tick: fewer than datagrams when listeners share one.
    pub fn payload_count(&self) -> usize {
        self.payloads_used
    }

    /// Encode `pcm` into this tick's next payload buffer; returns its index.
    pub(super) fn encode_payload(&mut self, codec: Codec, pcm: &[i16]) -> usize {
        let i = self.payloads_used;
        match self.payloads.get_mut(i) {
            Some(buf) => {
                buf.clear();
                codec.encode(pcm, buf);
            }
            None => {
                let mut buf = Vec::with_capacity(codec.bytes_for_samples(pcm.len()));
                codec.encode(pcm, &mut buf);
                self.payloads.push(buf);
            }
        }
        self.payloads_used += 1;
        i
    }

    pub fn capacity(&self) -> usize {
        self.datagrams.capacity()
            + self.events.capacity()
            + self.payloads.iter().map(Vec::capacity).sum::<usize>()
            + self.echolink.capacity()
    }
}
