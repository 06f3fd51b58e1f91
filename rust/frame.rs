//! IAX2 datagrams: classification, parsing and building.
//!
//! One UDP port carries four kinds of datagram. [`parse`] tells them apart in Asterisk's order
//! (`socket_process_helper`): a first u16 of zero means a meta frame (then bit 15 of the second
//! u16 means a video mini frame, otherwise it must be a trunk frame), else the F bit means a
//! full frame, else it is a mini voice frame. Everything kept from the wire is kept raw (the
//! compressed subclass byte, IE bytes in order, trunk call numbers), so for every datagram that
//! parses, [`Frame::to_bytes`] gives back exactly the same bytes.

use crate::ie::{self, Ie};
pub use crate::wire_error::FrameError;

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

/// Frame types (byte 10 of a full frame): Asterisk's `enum ast_frame_type`, sent as is.
pub mod frame_type {
    /// DTMF digit complete (Asterisk's DTMF_END).
    pub const DTMF: u8 = 1;
    pub const DTMF_END: u8 = 1;
    pub const VOICE: u8 = 2;
    pub const VIDEO: u8 = 3;
    pub const CONTROL: u8 = 4;
    pub const NULL: u8 = 5;
    pub const IAX: u8 = 6;
    pub const TEXT: u8 = 7;
    pub const IMAGE: u8 = 8;
    pub const HTML: u8 = 9;
    pub const CNG: u8 = 10;
    pub const MODEM: u8 = 11;
    pub const DTMF_BEGIN: u8 = 12;
}

/// Subclasses of IAX (type 6) frames: Asterisk's `enum iax_frame_subclass`.
pub mod iax_subclass {
    pub const NEW: i64 = 1;
    pub const PING: i64 = 2;
    pub const PONG: i64 = 3;
    pub const ACK: i64 = 4;
    pub const HANGUP: i64 = 5;
    pub const REJECT: i64 = 6;
    pub const ACCEPT: i64 = 7;
    pub const AUTHREQ: i64 = 8;
    pub const AUTHREP: i64 = 9;
    pub const INVAL: i64 = 10;
    pub const LAGRQ: i64 = 11;
    pub const LAGRP: i64 = 12;
    pub const REGREQ: i64 = 13;
    pub const REGAUTH: i64 = 14;
    pub const REGACK: i64 = 15;
    pub const REGREJ: i64 = 16;
    pub const REGREL: i64 = 17;
    pub const VNAK: i64 = 18;
    pub const DPREQ: i64 = 19;
    pub const DPREP: i64 = 20;
    pub const DIAL: i64 = 21;
    pub const TXREQ: i64 = 22;
    pub const TXCNT: i64 = 23;
    pub const TXACC: i64 = 24;
    pub const TXREADY: i64 = 25;
    pub const TXREL: i64 = 26;
    pub const TXREJ: i64 = 27;
    pub const QUELCH: i64 = 28;
    pub const UNQUELCH: i64 = 29;
    pub const POKE: i64 = 30;
    pub const PAGE: i64 = 31;
    pub const MWI: i64 = 32;
    pub const UNSUPPORT: i64 = 33;
    pub const TRANSFER: i64 = 34;
    pub const PROVISION: i64 = 35;
    pub const FWDOWNL: i64 = 36;
    pub const FWDATA: i64 = 37;
    pub const TXMEDIA: i64 = 38;
    pub const RTKEY: i64 = 39;
    pub const CALLTOKEN: i64 = 40;

    pub(crate) const NAMES: [&str; 40] = [
        "NEW",
        "PING",
        "PONG",
        "ACK",
        "HANGUP",
        "REJECT",
        "ACCEPT",
        "AUTHREQ",
        "AUTHREP",
        "INVAL",
        "LAGRQ",
        "LAGRP",
        "REGREQ",
        "REGAUTH",
        "REGACK",
        "REGREJ",
        "REGREL",
        "VNAK",
        "DPREQ",
        "DPREP",
        "DIAL",
        "TXREQ",
        "TXCNT",
        "TXACC",
        "TXREADY",
        "TXREL",
        "TXREJ",
        "QUELCH",
        "UNQUELCH",
        "POKE",
        "PAGE",
        "MWI",
        "UNSUPPORT",
        "TRANSFER",
        "PROVISION",
        "FWDOWNL",
        "FWDATA",
        "TXMEDIA",
        "RTKEY",
        "CALLTOKEN",
    ];
}

/// Subclasses of CONTROL (type 4) frames: Asterisk's `enum ast_control_frame_type`.
pub mod control_subclass {
    pub const HANGUP: i64 = 1;
    pub const RING: i64 = 2;
    pub const RINGING: i64 = 3;
    pub const ANSWER: i64 = 4;
    pub const BUSY: i64 = 5;
    pub const TAKEOFFHOOK: i64 = 6;
    pub const OFFHOOK: i64 = 7;
    pub const CONGESTION: i64 = 8;
    pub const FLASH: i64 = 9;
    pub const WINK: i64 = 10;
    pub const OPTION: i64 = 11;
    /// Push-to-talk on (AllStarLink / app_rpt).
    pub const RADIO_KEY: i64 = 12;
    /// Push-to-talk off.
    pub const RADIO_UNKEY: i64 = 13;
    pub const PROGRESS: i64 = 14;
    pub const PROCEEDING: i64 = 15;
    pub const HOLD: i64 = 16;
    pub const UNHOLD: i64 = 17;
    pub const VIDUPDATE: i64 = 18;
    pub const SRCUPDATE: i64 = 20;
    pub const TRANSFER: i64 = 21;
    pub const CONNECTED_LINE: i64 = 22;
    pub const REDIRECTING: i64 = 23;
    /// "Stop sounds", sent as csub 0xFF (AllStarLink sends it right after ANSWER).
    pub const STOP_SOUNDS: i64 = -1;
}

/// The name of frame type `t`, if it is one of Asterisk's wire types.
pub fn frame_type_name(t: u8) -> Option<&'static str> {
    const NAMES: [&str; 12] = [
        "DTMF",
        "VOICE",
        "VIDEO",
        "CONTROL",
        "NULL",
        "IAX",
        "TEXT",
        "IMAGE",
        "HTML",
        "CNG",
        "MODEM",
        "DTMF_BEGIN",
    ];
    NAMES.get(usize::from(t).checked_sub(1)?).copied()
}

/// The name of IAX subclass `s`, if known.
pub fn iax_subclass_name(s: i64) -> Option<&'static str> {
    let index = usize::try_from(s.checked_sub(1)?).ok()?;
    iax_subclass::NAMES.get(index).copied()
}

/// The name of control subclass `s`, if known.
pub fn control_subclass_name(s: i64) -> Option<&'static str> {
    use control_subclass as c;
    Some(match s {
        c::HANGUP => "HANGUP",
        c::RING => "RING",
        c::RINGING => "RINGING",
        c::ANSWER => "ANSWER",
        c::BUSY => "BUSY",
        c::TAKEOFFHOOK => "TAKEOFFHOOK",
        c::OFFHOOK => "OFFHOOK",
        c::CONGESTION => "CONGESTION",
        c::FLASH => "FLASH",
        c::WINK => "WINK",
        c::OPTION => "OPTION",
        c::RADIO_KEY => "RADIO_KEY",
        c::RADIO_UNKEY => "RADIO_UNKEY",
        c::PROGRESS => "PROGRESS",
        c::PROCEEDING => "PROCEEDING",
        c::HOLD => "HOLD",
        c::UNHOLD => "UNHOLD",
        c::VIDUPDATE => "VIDUPDATE",
        c::SRCUPDATE => "SRCUPDATE",
        c::TRANSFER => "TRANSFER",
        c::CONNECTED_LINE => "CONNECTED_LINE",
        c::REDIRECTING => "REDIRECTING",
        c::STOP_SOUNDS => "STOP_SOUNDS",
        _ => return None,
    })
}

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

    fn parse(buf: &[u8]) -> Result<Self, FrameError> {
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

    fn parse(buf: &[u8], scall: u16) -> Result<Self, FrameError> {
        let ts16 = be16(buf, 2).ok_or_else(|| truncated("mini frame header", buf, 0, 4))?;
        Ok(MiniFrame {
            scall,
            ts16,
            payload: buf.get(MINI_HEADER_LEN..).unwrap_or_default().to_vec(),
        })
    }
}

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

    fn parse(buf: &[u8], word1: u16) -> Result<Self, FrameError> {
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

    fn parse(buf: &[u8]) -> Result<Self, FrameError> {
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

impl From<FullFrame> for Frame {
    fn from(f: FullFrame) -> Self {
        Frame::Full(f)
    }
}

impl From<MiniFrame> for Frame {
    fn from(f: MiniFrame) -> Self {
        Frame::Mini(f)
    }
}

impl From<TrunkFrame> for Frame {
    fn from(f: TrunkFrame) -> Self {
        Frame::Trunk(f)
    }
}

impl From<VideoFrame> for Frame {
    fn from(f: VideoFrame) -> Self {
        Frame::Video(f)
    }
}

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
