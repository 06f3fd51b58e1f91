//! IAX2 datagrams: classification, parsing and building.
//!
//! One UDP port carries four kinds of datagram. [`parse`] tells them apart in Asterisk's order
//! (`socket_process_helper`): a first u16 of zero means a meta frame (then bit 15 of the second
//! u16 means a video mini frame, otherwise it must be a trunk frame), else the F bit means a
//! full frame, else it is a mini voice frame. Everything kept from the wire is kept raw (the
//! compressed subclass byte, IE bytes in order, trunk call numbers), so for every datagram that
//! parses, [`Frame::to_bytes`] gives back exactly the same bytes.

mod full;
mod meta;
mod mini;
mod names;

pub use crate::wire_error::FrameError;
pub use full::FullFrame;
pub use meta::{TrunkEntry, TrunkFrame, VideoFrame};
pub use mini::{mini_header, write_mini_header, MiniFrame};
pub use names::{
    control_subclass, control_subclass_name, frame_type, frame_type_name, iax_subclass,
    iax_subclass_name,
};

/// Bytes before the body of a full frame.
pub const FULL_HEADER_LEN: usize = 12;
/// Bytes before the payload of a mini voice frame.
pub const MINI_HEADER_LEN: usize = 4;
/// Bytes before the payload of a video mini frame.
pub const VIDEO_HEADER_LEN: usize = 6;
/// Bytes before the first entry of a trunk frame.
pub const TRUNK_HEADER_LEN: usize = 8;
/// Call numbers are 15 bits; bit 15 is a flag (F, R or the video bit).
pub const CALLNO_MASK: u16 = 0x7FFF;
/// Largest 15-bit value (call numbers, video timestamps).
const MAX15: u16 = 0x7FFF;

const FLAG_HIGH: u16 = 0x8000;
const META_TRUNK: u8 = 1;
const TRUNK_TIMESTAMPS: u8 = 0x01;
const SC_LOG: u8 = 0x80;
const SC_MAX_SHIFT: u8 = 0x3F;
const SC_MINUS_ONE: u8 = 0xFF;
const VIDEO_MARKER: u8 = 0x40;

/// Encodes a subclass the way Asterisk does (`compress_subclass`): values below 0x80 as is,
/// a single power of two as `0x80 | log2`, and -1 as 0xFF. `i64::MIN` is read as bit 63.
pub fn compress_subclass(value: i64) -> Result<u8, FrameError> {
    if value == -1 {
        return Ok(SC_MINUS_ONE);
    }
    if let Ok(small) = u8::try_from(value) {
        if small < SC_LOG {
            return Ok(small);
        }
    }
    // Reinterpreting the bits makes i64::MIN (the image of 1 << 63) a power of two too;
    // every other negative value has several bits set and is refused.
    let bits = value as u64;
    if bits.is_power_of_two() {
        // trailing_zeros() of a u64 power of two is at most 63, so it fits the 6-bit field.
        Ok(SC_LOG | bits.trailing_zeros() as u8)
    } else {
        Err(FrameError::BadSubclass { value })
    }
}

/// Decodes a subclass byte (`uncompress_subclass`): bit 7 clear means the value itself,
/// 0xFF means -1, otherwise `1 << (csub & 0x3F)` (bit 63 reads as `i64::MIN`).
pub fn uncompress_subclass(csub: u8) -> i64 {
    if csub & SC_LOG == 0 {
        i64::from(csub)
    } else if csub == SC_MINUS_ONE {
        -1
    } else {
        1i64 << (csub & SC_MAX_SHIFT)
    }
}

fn be16(buf: &[u8], at: usize) -> Option<u16> {
    let end = at.checked_add(2)?;
    Some(u16::from_be_bytes(buf.get(at..end)?.try_into().ok()?))
}

fn be32(buf: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    Some(u32::from_be_bytes(buf.get(at..end)?.try_into().ok()?))
}

fn truncated(what: &'static str, buf: &[u8], offset: usize, needed: usize) -> FrameError {
    FrameError::Truncated {
        what,
        offset,
        needed,
        available: buf.len().saturating_sub(offset),
    }
}

fn check_range(what: &'static str, value: u16, max: u16) -> Result<(), FrameError> {
    if value <= max {
        Ok(())
    } else {
        Err(FrameError::OutOfRange {
            what,
            value: value.into(),
            min: 0,
            max: max.into(),
        })
    }
}

/// Any IAX2 datagram.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Frame {
    Full(FullFrame),
    Mini(MiniFrame),
    Trunk(TrunkFrame),
    Video(VideoFrame),
}

impl Frame {
    pub fn encoded_len(&self) -> usize {
        match self {
            Frame::Full(f) => f.encoded_len(),
            Frame::Mini(f) => f.encoded_len(),
            Frame::Trunk(f) => f.encoded_len(),
            Frame::Video(f) => f.encoded_len(),
        }
    }

    /// Appends the datagram to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Full(f) => f.write_to(out),
            Frame::Mini(f) => f.write_to(out),
            Frame::Trunk(f) => f.write_to(out),
            Frame::Video(f) => f.write_to(out),
        }
    }

    /// The datagram as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.write_to(&mut out);
        out
    }
}

/// Each frame struct is one kind of [`Frame`].
macro_rules! frame_kinds {
    ($($variant:ident($kind:ident)),*) => {
        $(
            impl From<$kind> for Frame {
                fn from(f: $kind) -> Self {
                    Frame::$variant(f)
                }
            }
        )*
    };
}

frame_kinds!(
    Full(FullFrame),
    Mini(MiniFrame),
    Trunk(TrunkFrame),
    Video(VideoFrame)
);

/// Parses one datagram, classifying it in Asterisk's order.
pub fn parse(buf: &[u8]) -> Result<Frame, FrameError> {
    let word0 = be16(buf, 0).ok_or_else(|| truncated("frame header", buf, 0, 2))?;
    if word0 == 0 {
        let word1 = be16(buf, 2).ok_or_else(|| truncated("meta frame header", buf, 0, 4))?;
        if word1 & FLAG_HIGH != 0 {
            VideoFrame::parse(buf, word1).map(Frame::Video)
        } else {
            TrunkFrame::parse(buf).map(Frame::Trunk)
        }
    } else if word0 & FLAG_HIGH != 0 {
        FullFrame::parse(buf).map(Frame::Full)
    } else {
        MiniFrame::parse(buf, word0).map(Frame::Mini)
    }
}

#[cfg(test)]
mod tests;
