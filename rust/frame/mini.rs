//! Mini voice frames: a 4-byte header before the voice of an established call.

use super::{be16, truncated, FrameError, CALLNO_MASK, MINI_HEADER_LEN};

/// A mini voice frame: `0 | scall(15) | ts16 | payload`, codec from the last full voice frame.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MiniFrame {
    /// Source call number, 1..=0x7FFF (0 would read as a meta frame).
    pub scall: u16,
    /// Low 16 bits of the sender's timestamp.
    pub ts16: u16,
    pub payload: Vec<u8>,
}

/// Appends a mini frame's 4-byte header (call number masked to 15 bits); the payload follows.
/// The media path encodes straight behind it, so an outgoing mini frame costs one buffer.
pub fn write_mini_header(scall: u16, ts16: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&mini_header(scall, ts16));
}

/// The 4-byte header of a mini voice frame.
pub fn mini_header(scall: u16, ts16: u16) -> [u8; 4] {
    let [a, b] = (scall & CALLNO_MASK).to_be_bytes();
    let [c, d] = ts16.to_be_bytes();
    [a, b, c, d]
}

impl MiniFrame {
    pub fn new(scall: u16, ts16: u16, payload: Vec<u8>) -> Result<Self, FrameError> {
        if scall == 0 || scall > CALLNO_MASK {
            return Err(FrameError::OutOfRange {
                what: "mini frame source call number",
                value: scall.into(),
                min: 1,
                max: CALLNO_MASK.into(),
            });
        }
        Ok(MiniFrame {
            scall,
            ts16,
            payload,
        })
    }

    pub fn encoded_len(&self) -> usize {
        MINI_HEADER_LEN + self.payload.len()
    }

    /// Appends the frame; the call number is masked to 15 bits.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        write_mini_header(self.scall, self.ts16, out);
        out.extend_from_slice(&self.payload);
    }

    pub(super) fn parse(buf: &[u8], scall: u16) -> Result<Self, FrameError> {
        let ts16 = be16(buf, 2).ok_or_else(|| truncated("mini frame header", buf, 0, 4))?;
        Ok(MiniFrame {
            scall,
            ts16,
            payload: buf.get(MINI_HEADER_LEN..).unwrap_or_default().to_vec(),
        })
    }
}
