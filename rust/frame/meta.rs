//! Meta frames (first u16 zero): video mini frames and trunk frames.

use super::{
    be16, be32, check_range, truncated, FrameError, MiniFrame, CALLNO_MASK, FLAG_HIGH, MAX15,
    META_TRUNK, TRUNK_HEADER_LEN, TRUNK_TIMESTAMPS, VIDEO_HEADER_LEN,
};

/// A video mini frame (`0x0000 | 0x8000|scall | M|ts15 | payload`). Recognised so that a
/// voice-only node can drop it without misreading it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VideoFrame {
    pub scall: u16,
    /// End-of-frame marker.
    pub marker: bool,
    /// Low 15 bits of the sender's timestamp.
    pub ts15: u16,
    pub payload: Vec<u8>,
}

impl VideoFrame {
    pub fn new(scall: u16, marker: bool, ts15: u16, payload: Vec<u8>) -> Result<Self, FrameError> {
        check_range("video frame source call number", scall, MAX15)?;
        check_range("video frame timestamp", ts15, MAX15)?;
        Ok(VideoFrame {
            scall,
            marker,
            ts15,
            payload,
        })
    }

    pub fn encoded_len(&self) -> usize {
        VIDEO_HEADER_LEN + self.payload.len()
    }

    /// Appends the frame; call number and timestamp are masked to 15 bits.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(FLAG_HIGH | (self.scall & CALLNO_MASK)).to_be_bytes());
        let m = if self.marker { FLAG_HIGH } else { 0 };
        out.extend_from_slice(&(m | (self.ts15 & MAX15)).to_be_bytes());
        out.extend_from_slice(&self.payload);
    }

    pub(super) fn parse(buf: &[u8], word1: u16) -> Result<Self, FrameError> {
        let word2 = be16(buf, 4).ok_or_else(|| truncated("video frame header", buf, 0, 6))?;
        Ok(VideoFrame {
            scall: word1 & CALLNO_MASK,
            marker: word2 & FLAG_HIGH != 0,
            ts15: word2 & MAX15,
            payload: buf.get(VIDEO_HEADER_LEN..).unwrap_or_default().to_vec(),
        })
    }
}

/// One call's data inside a trunk frame.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TrunkEntry {
    /// The call number as sent (16 bits, not masked, so that rebuilding is exact).
    pub callno: u16,
    /// The entry's own timestamp (trunk frames with timestamps only).
    pub ts16: Option<u16>,
    pub payload: Vec<u8>,
}

/// A meta trunk frame: several calls' voice in one datagram.
///
/// With `timestamps` (flag bit 0) each entry is `u16 len | u16 callno | u16 ts16 | data`,
/// without it `u16 callno | u16 len | data`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TrunkFrame {
    /// The trunk frame's own 32-bit timestamp.
    pub ts: u32,
    pub timestamps: bool,
    pub entries: Vec<TrunkEntry>,
}

impl TrunkFrame {
    /// Checks that every entry has a timestamp exactly when `timestamps` is set and that no
    /// payload exceeds the 16-bit length field.
    pub fn new(ts: u32, timestamps: bool, entries: Vec<TrunkEntry>) -> Result<Self, FrameError> {
        for e in &entries {
            if e.ts16.is_some() != timestamps {
                return Err(FrameError::Inconsistent {
                    what: if timestamps {
                        "a trunk frame with timestamps needs a ts16 in every entry"
                    } else {
                        "a trunk frame without timestamps takes no per-entry ts16"
                    },
                });
            }
            if e.payload.len() > usize::from(u16::MAX) {
                return Err(FrameError::TooLong {
                    what: "trunk entry payload",
                    len: e.payload.len(),
                    max: u16::MAX.into(),
                });
            }
        }
        Ok(TrunkFrame {
            ts,
            timestamps,
            entries,
        })
    }

    /// Per-call mini frames, in entry order. Entries whose 15-bit call number is 0 are
    /// skipped (no call can have that number). Without per-entry timestamps each mini frame
    /// gets the low 16 bits of the trunk timestamp: the sender's trunk clock, which is what
    /// Asterisk uses for such entries too.
    pub fn minis(&self) -> impl Iterator<Item = MiniFrame> + '_ {
        // Masked to 16 bits first, so the cast is lossless.
        let trunk_ts16 = (self.ts & 0xFFFF) as u16;
        self.entries.iter().filter_map(move |e| {
            let scall = e.callno & CALLNO_MASK;
            (scall != 0).then(|| MiniFrame {
                scall,
                ts16: if self.timestamps {
                    e.ts16.unwrap_or(trunk_ts16)
                } else {
                    trunk_ts16
                },
                payload: e.payload.clone(),
            })
        })
    }

    pub fn encoded_len(&self) -> usize {
        let per_entry = if self.timestamps { 6 } else { 4 };
        TRUNK_HEADER_LEN
            + self
                .entries
                .iter()
                .map(|e| per_entry + e.payload.len().min(usize::from(u16::MAX)))
                .sum::<usize>()
    }

    /// Appends the frame. A payload over 65 535 bytes (possible only by building the struct
    /// literally, since [`TrunkFrame::new`] refuses it) is cut so the frame stays parseable;
    /// a missing ts16 in a frame with timestamps is written as the trunk timestamp's low bits.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        let flags = if self.timestamps { TRUNK_TIMESTAMPS } else { 0 };
        out.extend_from_slice(&[0, 0, META_TRUNK, flags]);
        out.extend_from_slice(&self.ts.to_be_bytes());
        let trunk_ts16 = (self.ts & 0xFFFF) as u16;
        for e in &self.entries {
            let data = e.payload.get(..usize::from(u16::MAX)).unwrap_or(&e.payload);
            // `data` is at most u16::MAX bytes long.
            let len = data.len() as u16;
            if self.timestamps {
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&e.callno.to_be_bytes());
                out.extend_from_slice(&e.ts16.unwrap_or(trunk_ts16).to_be_bytes());
            } else {
                out.extend_from_slice(&e.callno.to_be_bytes());
                out.extend_from_slice(&len.to_be_bytes());
            }
            out.extend_from_slice(data);
        }
    }

    pub(super) fn parse(buf: &[u8]) -> Result<Self, FrameError> {
        let metacmd = *buf
            .get(2)
            .ok_or_else(|| truncated("meta frame header", buf, 0, 4))?;
        if metacmd != META_TRUNK {
            return Err(FrameError::BadMetaCommand { metacmd });
        }
        let ts = be32(buf, 4)
            .ok_or_else(|| truncated("trunk frame header", buf, 0, TRUNK_HEADER_LEN))?;
        let cmddata = buf.get(3).copied().unwrap_or_default();
        if cmddata & !TRUNK_TIMESTAMPS != 0 {
            return Err(FrameError::BadTrunkFlags { cmddata });
        }
        let timestamps = cmddata & TRUNK_TIMESTAMPS != 0;
        let head = if timestamps { 6 } else { 4 };
        let mut entries = Vec::new();
        let mut pos = TRUNK_HEADER_LEN;
        while pos < buf.len() {
            let entry = |at: usize| be16(buf, pos + at);
            let (len, callno, ts16) = if timestamps {
                match (entry(0), entry(2), entry(4)) {
                    (Some(len), Some(callno), Some(ts16)) => (len, callno, Some(ts16)),
                    _ => return Err(truncated("trunk entry header", buf, pos, head)),
                }
            } else {
                match (entry(0), entry(2)) {
                    (Some(callno), Some(len)) => (len, callno, None),
                    _ => return Err(truncated("trunk entry header", buf, pos, head)),
                }
            };
            let start = pos + head;
            let end = start + usize::from(len);
            let payload = buf
                .get(start..end)
                .ok_or_else(|| truncated("trunk entry payload", buf, start, len.into()))?;
            entries.push(TrunkEntry {
                callno,
                ts16,
                payload: payload.to_vec(),
            });
            pos = end;
        }
        Ok(TrunkFrame {
            ts,
            timestamps,
            entries,
        })
    }
}
