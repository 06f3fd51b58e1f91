//! Full frames: the reliable, sequenced frames of call control (and the first voice frame).

use super::{
    compress_subclass, frame_type, truncated, uncompress_subclass, FrameError, CALLNO_MASK,
    FLAG_HIGH, FULL_HEADER_LEN, VIDEO_MARKER,
};
use crate::ie::{self, Ie};

/// A full frame: reliable, sequenced, with a 12-byte header.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FullFrame {
    /// Source call number (15 bits).
    pub scall: u16,
    /// Destination call number (15 bits); 0 means "not yet known".
    pub dcall: u16,
    /// The R bit: this is a retransmission.
    pub retrans: bool,
    /// Milliseconds since the sender's call start.
    pub ts: u32,
    pub oseq: u8,
    pub iseq: u8,
    pub ftype: u8,
    /// The subclass byte exactly as on the wire; see [`FullFrame::subclass`].
    pub csub: u8,
    /// IEs of an IAX (type 6) frame, in wire order; empty for every other type.
    pub ies: Vec<Ie>,
    /// The body of every non-IAX frame; empty for IAX frames.
    pub payload: Vec<u8>,
}

impl FullFrame {
    /// A frame with a zero header and no body; the subclass is encoded Asterisk-style. For
    /// VIDEO frames a subclass whose encoding would set the end-of-frame bit (0x40..=0x7F, -1)
    /// is refused, since it could not be read back.
    pub fn new(ftype: u8, subclass: i64) -> Result<Self, FrameError> {
        let csub = compress_subclass(subclass)?;
        if ftype == frame_type::VIDEO && csub & VIDEO_MARKER != 0 {
            return Err(FrameError::BadSubclass { value: subclass });
        }
        Ok(FullFrame {
            scall: 0,
            dcall: 0,
            retrans: false,
            ts: 0,
            oseq: 0,
            iseq: 0,
            ftype,
            csub,
            ies: Vec::new(),
            payload: Vec::new(),
        })
    }

    /// The decoded subclass; for VIDEO frames the end-of-frame bit is left out first.
    pub fn subclass(&self) -> i64 {
        if self.ftype == frame_type::VIDEO {
            uncompress_subclass(self.csub & !VIDEO_MARKER)
        } else {
            uncompress_subclass(self.csub)
        }
    }

    /// The end-of-frame marker of a VIDEO frame (always false for other types).
    pub fn video_marker(&self) -> bool {
        self.ftype == frame_type::VIDEO && self.csub & VIDEO_MARKER != 0
    }

    /// Whether this is an IAX (type 6) frame, whose body is IEs.
    pub fn is_iax(&self) -> bool {
        self.ftype == frame_type::IAX
    }

    /// The first IE with this id.
    pub fn ie(&self, id: u8) -> Option<&Ie> {
        self.ies.iter().find(|ie| ie.id == id)
    }

    /// Bytes [`FullFrame::write_to`] appends.
    pub fn encoded_len(&self) -> usize {
        let ies: usize = self
            .ies
            .iter()
            .map(|ie| 2 + ie.data.len().min(ie::MAX_IE_LEN))
            .sum();
        FULL_HEADER_LEN + ies + self.payload.len()
    }

    /// Appends the frame: header, then IEs, then payload. Call numbers are masked to 15 bits.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&(FLAG_HIGH | (self.scall & CALLNO_MASK)).to_be_bytes());
        let r = if self.retrans { FLAG_HIGH } else { 0 };
        out.extend_from_slice(&(r | (self.dcall & CALLNO_MASK)).to_be_bytes());
        out.extend_from_slice(&self.ts.to_be_bytes());
        out.extend_from_slice(&[self.oseq, self.iseq, self.ftype, self.csub]);
        ie::write_ies(&self.ies, out);
        out.extend_from_slice(&self.payload);
    }

    pub(super) fn parse(buf: &[u8]) -> Result<Self, FrameError> {
        let header: &[u8; FULL_HEADER_LEN] = buf
            .get(..FULL_HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| truncated("full frame header", buf, 0, FULL_HEADER_LEN))?;
        let [s0, s1, d0, d1, t0, t1, t2, t3, oseq, iseq, ftype, csub] = *header;
        let dcall_word = u16::from_be_bytes([d0, d1]);
        let body = buf.get(FULL_HEADER_LEN..).unwrap_or_default();
        let (ies, payload) = if ftype == frame_type::IAX {
            (ie::parse_ies(body, FULL_HEADER_LEN)?, Vec::new())
        } else {
            (Vec::new(), body.to_vec())
        };
        Ok(FullFrame {
            scall: u16::from_be_bytes([s0, s1]) & CALLNO_MASK,
            dcall: dcall_word & CALLNO_MASK,
            retrans: dcall_word & FLAG_HIGH != 0,
            ts: u32::from_be_bytes([t0, t1, t2, t3]),
            oseq,
            iseq,
            ftype,
            csub,
            ies,
            payload,
        })
    }
}
