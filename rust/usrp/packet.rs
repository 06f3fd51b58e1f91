//! The USRP wire: the 32-byte header, voice, DTMF, text and DVSwitch's "set info" metadata;
//! [`parse`] for what arrives and the builders for what we send.

use std::fmt;

/// Length of the header every packet starts with.
pub const HEADER_LEN: usize = 32;
/// Samples in one voice packet (20 ms at 8 kHz).
pub const VOICE_SAMPLES: usize = 160;
/// Bytes of a voice packet's payload.
pub const VOICE_BYTES: usize = 2 * VOICE_SAMPLES;
/// Length of a full voice packet.
pub const VOICE_PACKET_LEN: usize = HEADER_LEN + VOICE_BYTES;
/// The USRP stream's sample rate.
pub const USRP_RATE: u32 = 8000;
/// The magic every packet starts with.
pub const MAGIC: &[u8; 4] = b"USRP";

/// Packet types (the header's `type` field).
pub const TYPE_VOICE: u32 = 0;
pub const TYPE_DTMF: u32 = 1;
pub const TYPE_TEXT: u32 = 2;
pub const TYPE_PING: u32 = 3;
/// The "set info" tag of DVSwitch's metadata TLV in a text packet.
pub const TLV_SET_INFO: u8 = 8;

/// Longest callsign kept from a metadata packet.
pub const CALLSIGN_MAX: usize = 16;

/// Why a datagram is not a USRP packet we take.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsrpError {
    /// Shorter than the header.
    Short { len: usize },
    /// Does not start with `USRP`.
    Magic,
    /// A voice packet whose payload is neither empty nor one 20 ms frame.
    VoiceLength { len: usize },
    /// A DTMF packet without a keypad digit.
    Digit { byte: Option<u8> },
}

impl fmt::Display for UsrpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsrpError::Short { len } => {
                write!(
                    f,
                    "USRP packet of {len} bytes is shorter than the {HEADER_LEN}-byte header"
                )
            }
            UsrpError::Magic => write!(f, "datagram does not start with USRP"),
            UsrpError::VoiceLength { len } => write!(
                f,
                "USRP voice payload of {len} bytes (accepted: 0 or {VOICE_BYTES})"
            ),
            UsrpError::Digit { byte } => write!(f, "USRP DTMF packet without a digit ({byte:?})"),
        }
    }
}

impl std::error::Error for UsrpError {}

/// The header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub seq: u32,
    pub memory: u32,
    pub keyup: bool,
    pub talkgroup: u32,
    pub kind: u32,
    pub mpxid: u32,
    pub reserved: u32,
}

/// The digital side's caller, from DVSwitch's "set info" TLV.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    /// The caller's radio id (DMR id, 24 bits).
    pub source_id: u32,
    /// The repeater's id.
    pub repeater_id: u32,
    /// The talkgroup (24 bits).
    pub talkgroup: u32,
    /// The DMR time slot.
    pub slot: u8,
    /// The DMR colour code.
    pub color_code: u8,
    /// The caller's callsign (printable ASCII, at most [`CALLSIGN_MAX`] characters).
    pub callsign: String,
}

/// What a packet carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// One 20 ms frame (little-endian i16 at 8 kHz).
    Voice(&'a [u8]),
    /// A voice header without audio: the end of a transmission when keyup is 0.
    Unkey,
    Dtmf(char),
    Meta(Metadata),
    /// A text packet that is not a TLV: the string up to its first NUL.
    Text(&'a [u8]),
    Ping,
    /// A type we do not use (ADPCM, µ-law, AMBE TLVs...): counted, ignored.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    pub header: Header,
    pub body: Body<'a>,
}

fn be_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = buf.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_be_bytes(b)
}

fn be_n(buf: &[u8]) -> u32 {
    buf.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b))
}

/// Whether `c` is a keypad digit (0-9, *, #, A-D).
pub fn is_digit(c: char) -> bool {
    matches!(c, '0'..='9' | '*' | '#' | 'A'..='D')
}

/// Parse one datagram.
pub fn parse(buf: &[u8]) -> Result<Packet<'_>, UsrpError> {
    if buf.len() < HEADER_LEN {
        return Err(UsrpError::Short { len: buf.len() });
    }
    if buf.get(..4) != Some(MAGIC.as_slice()) {
        return Err(UsrpError::Magic);
    }
    let header = Header {
        seq: be_u32(buf, 4),
        memory: be_u32(buf, 8),
        keyup: be_u32(buf, 12) != 0,
        talkgroup: be_u32(buf, 16),
        kind: be_u32(buf, 20),
        mpxid: be_u32(buf, 24),
        reserved: be_u32(buf, 28),
    };
    let payload = buf.get(HEADER_LEN..).unwrap_or_default();
    let body = match header.kind {
        TYPE_VOICE => match payload.len() {
            0 => Body::Unkey,
            VOICE_BYTES => Body::Voice(payload),
            len => return Err(UsrpError::VoiceLength { len }),
        },
        TYPE_DTMF => {
            let byte = payload.first().copied();
            match byte.map(|b| char::from(b).to_ascii_uppercase()) {
                Some(c) if is_digit(c) => Body::Dtmf(c),
                _ => return Err(UsrpError::Digit { byte }),
            }
        }
        TYPE_TEXT => match payload.first() {
            Some(&TLV_SET_INFO) => Body::Meta(parse_set_info(payload)),
            _ => {
                let end = payload
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(payload.len());
                Body::Text(payload.get(..end).unwrap_or_default())
            }
        },
        TYPE_PING => Body::Ping,
        _ => Body::Other,
    };
    Ok(Packet { header, body })
}

/// DVSwitch's set-info TLV: tag, length, source id (3 bytes), repeater id (4), talkgroup (3),
/// slot (1), colour code (1), callsign up to a NUL. Fields past the datagram's end read as 0,
/// and the callsign keeps only printable ASCII.
fn parse_set_info(payload: &[u8]) -> Metadata {
    let len = usize::from(payload.get(1).copied().unwrap_or(0));
    let value = payload.get(2..).unwrap_or_default();
    let value = value.get(..len.min(value.len())).unwrap_or_default();
    let field = |a: usize, b: usize| value.get(a..b.min(value.len())).unwrap_or_default();
    let call = field(12, value.len());
    let end = call.iter().position(|&b| b == 0).unwrap_or(call.len());
    let callsign: String = call
        .get(..end)
        .unwrap_or_default()
        .iter()
        .filter(|b| b.is_ascii_graphic())
        .take(CALLSIGN_MAX)
        .map(|&b| char::from(b))
        .collect();
    Metadata {
        source_id: be_n(field(0, 3)),
        repeater_id: be_n(field(3, 7)),
        talkgroup: be_n(field(7, 10)),
        slot: field(10, 11).first().copied().unwrap_or(0),
        color_code: field(11, 12).first().copied().unwrap_or(0),
        callsign,
    }
}

/// Write a header into `out` (at least [`HEADER_LEN`] bytes; shorter: nothing is written and
/// 0 returned). Returns the header's length.
pub fn write_header(out: &mut [u8], h: &Header) -> usize {
    let Some(dst) = out.get_mut(..HEADER_LEN) else {
        return 0;
    };
    dst[..4].copy_from_slice(MAGIC);
    let fields = [
        h.seq,
        h.memory,
        u32::from(h.keyup),
        h.talkgroup,
        h.kind,
        h.mpxid,
        h.reserved,
    ];
    for (chunk, v) in dst[4..].chunks_exact_mut(4).zip(fields) {
        chunk.copy_from_slice(&v.to_be_bytes());
    }
    HEADER_LEN
}

/// A voice packet: `samples` (at most 160; fewer are padded with silence) after the header.
pub fn write_voice(out: &mut [u8; VOICE_PACKET_LEN], seq: u32, talkgroup: u32, samples: &[i16]) {
    let h = Header {
        seq,
        keyup: true,
        talkgroup,
        kind: TYPE_VOICE,
        ..Header::default()
    };
    write_header(out, &h);
    let payload = &mut out[HEADER_LEN..];
    payload.fill(0);
    for (d, &s) in payload.chunks_exact_mut(2).zip(samples) {
        d.copy_from_slice(&s.to_le_bytes());
    }
}

/// The end of a transmission: a voice header with keyup 0 and no audio.
pub fn write_unkey(out: &mut [u8; HEADER_LEN], seq: u32, talkgroup: u32) {
    let h = Header {
        seq,
        talkgroup,
        ..Header::default()
    };
    write_header(out, &h);
}

/// A DTMF packet (for peers and tests; the node sends its digits as audio).
pub fn build_dtmf(seq: u32, digit: char) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN + 1];
    let h = Header {
        seq,
        kind: TYPE_DTMF,
        ..Header::default()
    };
    write_header(&mut out, &h);
    out[HEADER_LEN] = u8::try_from(digit).unwrap_or(b'?');
    out
}

/// A set-info text packet, as DVSwitch sends it before a digital caller's audio.
pub fn build_meta(seq: u32, m: &Metadata) -> Vec<u8> {
    let mut value = Vec::with_capacity(14 + m.callsign.len());
    value.extend_from_slice(&m.source_id.to_be_bytes()[1..]);
    value.extend_from_slice(&m.repeater_id.to_be_bytes());
    value.extend_from_slice(&m.talkgroup.to_be_bytes()[1..]);
    value.push(m.slot);
    value.push(m.color_code);
    value.extend(m.callsign.bytes().take(CALLSIGN_MAX));
    value.push(0);
    let mut out = vec![0u8; HEADER_LEN];
    let h = Header {
        seq,
        kind: TYPE_TEXT,
        ..Header::default()
    };
    write_header(&mut out, &h);
    out.push(TLV_SET_INFO);
    out.push(u8::try_from(value.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(&value);
    out
}
