//! IAX2 information elements (the payload of type-6 IAX frames).
//!
//! On the wire an IE is `u8 id | u8 len | len bytes`; `len` excludes the two header bytes, so an
//! IE carries at most 255 bytes and a zero-length IE is legal (AUTOANSWER, an empty CALLTOKEN).
//! [`Ie`] keeps the raw bytes in frame order so that parse followed by build is byte-for-byte;
//! [`Ie::value`] decodes them by the id's [`IeKind`] the way Asterisk does (`iax_parse_ies`):
//! a fixed-size IE of the wrong length is not an error, it is ignored (`None`).
//!
//! Numbers and kinds follow RFC 5456 §8.6 (ids 1..=53) plus Asterisk's CALLTOKEN (54),
//! CAPABILITY2 (55), FORMAT2 (56) and CALLINGANI2 (57).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::wire_error::FrameError;
pub use crate::wire_error::{IeKind, MAX_IE_LEN};

pub const CALLED_NUMBER: u8 = 1;
pub const CALLING_NUMBER: u8 = 2;
pub const CALLING_ANI: u8 = 3;
pub const CALLING_NAME: u8 = 4;
pub const CALLED_CONTEXT: u8 = 5;
pub const USERNAME: u8 = 6;
pub const PASSWORD: u8 = 7;
pub const CAPABILITY: u8 = 8;
pub const FORMAT: u8 = 9;
pub const LANGUAGE: u8 = 10;
pub const VERSION: u8 = 11;
pub const ADSICPE: u8 = 12;
pub const DNID: u8 = 13;
pub const AUTHMETHODS: u8 = 14;
pub const CHALLENGE: u8 = 15;
pub const MD5_RESULT: u8 = 16;
pub const RSA_RESULT: u8 = 17;
pub const APPARENT_ADDR: u8 = 18;
pub const REFRESH: u8 = 19;
pub const DPSTATUS: u8 = 20;
pub const CALLNO: u8 = 21;
pub const CAUSE: u8 = 22;
pub const IAX_UNKNOWN: u8 = 23;
pub const MSGCOUNT: u8 = 24;
pub const AUTOANSWER: u8 = 25;
pub const MUSICONHOLD: u8 = 26;
pub const TRANSFERID: u8 = 27;
pub const RDNIS: u8 = 28;
pub const PROVISIONING: u8 = 29;
pub const AESPROVISIONING: u8 = 30;
pub const DATETIME: u8 = 31;
pub const DEVICETYPE: u8 = 32;
pub const SERVICEIDENT: u8 = 33;
pub const FIRMWAREVER: u8 = 34;
pub const FWBLOCKDESC: u8 = 35;
pub const FWBLOCKDATA: u8 = 36;
pub const PROVVER: u8 = 37;
pub const CALLINGPRES: u8 = 38;
pub const CALLINGTON: u8 = 39;
pub const CALLINGTNS: u8 = 40;
pub const SAMPLINGRATE: u8 = 41;
pub const CAUSECODE: u8 = 42;
pub const ENCRYPTION: u8 = 43;
pub const ENCKEY: u8 = 44;
pub const CODEC_PREFS: u8 = 45;
pub const RR_JITTER: u8 = 46;
pub const RR_LOSS: u8 = 47;
pub const RR_PKTS: u8 = 48;
pub const RR_DELAY: u8 = 49;
pub const RR_DROPPED: u8 = 50;
pub const RR_OOO: u8 = 51;
pub const VARIABLE: u8 = 52;
pub const OSPTOKEN: u8 = 53;
pub const CALLTOKEN: u8 = 54;
pub const CAPABILITY2: u8 = 55;
pub const FORMAT2: u8 = 56;
pub const CALLINGANI2: u8 = 57;

/// The kind of IE `id`; ids this table does not know are [`IeKind::Raw`].
pub fn ie_kind(id: u8) -> IeKind {
    match id {
        CALLED_NUMBER | CALLING_NUMBER | CALLING_ANI | CALLING_NAME | CALLED_CONTEXT | USERNAME
        | PASSWORD | LANGUAGE | DNID | CHALLENGE | MD5_RESULT | RSA_RESULT | CAUSE
        | MUSICONHOLD | RDNIS | DEVICETYPE | SERVICEIDENT | CODEC_PREFS | VARIABLE | CALLTOKEN => {
            IeKind::Str
        }
        IAX_UNKNOWN | CALLINGPRES | CALLINGTON | CAUSECODE => IeKind::U8,
        VERSION | ADSICPE | AUTHMETHODS | REFRESH | DPSTATUS | CALLNO | MSGCOUNT | FIRMWAREVER
        | CALLINGTNS | SAMPLINGRATE | ENCRYPTION | RR_DELAY => IeKind::U16,
        CAPABILITY | FORMAT | TRANSFERID | FWBLOCKDESC | PROVVER | RR_JITTER | RR_LOSS
        | RR_PKTS | RR_DROPPED | RR_OOO | CALLINGANI2 => IeKind::U32,
        CAPABILITY2 | FORMAT2 => IeKind::Versioned,
        APPARENT_ADDR => IeKind::Addr,
        DATETIME => IeKind::DateTime,
        AUTOANSWER => IeKind::Empty,
        _ => IeKind::Raw,
    }
}

/// The name of IE `id` as written in iax2.md (and the Python `IE` enum), if it has one.
pub fn ie_name(id: u8) -> Option<&'static str> {
    IE_NAMES.get(usize::from(id)).copied().flatten()
}

const IE_NAMES: [Option<&str>; 58] = [
    None,
    Some("CALLED_NUMBER"),
    Some("CALLING_NUMBER"),
    Some("CALLING_ANI"),
    Some("CALLING_NAME"),
    Some("CALLED_CONTEXT"),
    Some("USERNAME"),
    Some("PASSWORD"),
    Some("CAPABILITY"),
    Some("FORMAT"),
    Some("LANGUAGE"),
    Some("VERSION"),
    Some("ADSICPE"),
    Some("DNID"),
    Some("AUTHMETHODS"),
    Some("CHALLENGE"),
    Some("MD5_RESULT"),
    Some("RSA_RESULT"),
    Some("APPARENT_ADDR"),
    Some("REFRESH"),
    Some("DPSTATUS"),
    Some("CALLNO"),
    Some("CAUSE"),
    Some("IAX_UNKNOWN"),
    Some("MSGCOUNT"),
    Some("AUTOANSWER"),
    Some("MUSICONHOLD"),
    Some("TRANSFERID"),
    Some("RDNIS"),
    Some("PROVISIONING"),
    Some("AESPROVISIONING"),
    Some("DATETIME"),
    Some("DEVICETYPE"),
    Some("SERVICEIDENT"),
    Some("FIRMWAREVER"),
    Some("FWBLOCKDESC"),
    Some("FWBLOCKDATA"),
    Some("PROVVER"),
    Some("CALLINGPRES"),
    Some("CALLINGTON"),
    Some("CALLINGTNS"),
    Some("SAMPLINGRATE"),
    Some("CAUSECODE"),
    Some("ENCRYPTION"),
    Some("ENCKEY"),
    Some("CODEC_PREFS"),
    Some("RR_JITTER"),
    Some("RR_LOSS"),
    Some("RR_PKTS"),
    Some("RR_DELAY"),
    Some("RR_DROPPED"),
    Some("RR_OOO"),
    Some("VARIABLE"),
    Some("OSPTOKEN"),
    Some("CALLTOKEN"),
    Some("CAPABILITY2"),
    Some("FORMAT2"),
    Some("CALLINGANI2"),
];

/// IEs whose body is a credential or a token: never shown in Debug, repr or logs.
pub fn is_secret(id: u8) -> bool {
    matches!(id, PASSWORD | MD5_RESULT | RSA_RESULT | ENCKEY | CALLTOKEN)
}

/// The DATETIME IE: 2-second resolution, years 2000..=2127.
///
/// Packed MSB to LSB as `year-2000:7 | month:4 | day:5 | hour:5 | minute:6 | second/2:5`.
/// Asterisk fills it from local time (the RFC says UTC); this type only carries the fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IaxDateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

impl IaxDateTime {
    /// Splits a packed value into its fields exactly as sent, without calendar checks (a peer
    /// may send month 0 or hour 31; the bits are reported, not judged).
    pub fn unpack(v: u32) -> Self {
        // Every field is masked to its width first, so the narrowing casts are lossless.
        IaxDateTime {
            year: 2000 + ((v >> 25) & 0x7F) as u16,
            month: ((v >> 21) & 0x0F) as u8,
            day: ((v >> 16) & 0x1F) as u8,
            hour: ((v >> 11) & 0x1F) as u8,
            minute: ((v >> 5) & 0x3F) as u8,
            second: ((v & 0x1F) as u8) * 2,
        }
    }

    /// Packs the fields; an odd second is rounded down (the format has 2-second resolution).
    /// Fields outside the calendar (month 13, minute 60, year 1999 or 2128, ...) are errors.
    pub fn pack(&self) -> Result<u32, FrameError> {
        fn check(what: &'static str, v: u16, min: u16, max: u16) -> Result<u32, FrameError> {
            if (min..=max).contains(&v) {
                Ok(u32::from(v))
            } else {
                Err(FrameError::OutOfRange {
                    what,
                    value: i64::from(v),
                    min: i64::from(min),
                    max: i64::from(max),
                })
            }
        }
        let year = check("DATETIME year", self.year, 2000, 2127)? - 2000;
        let month = check("DATETIME month", self.month.into(), 1, 12)?;
        let day = check("DATETIME day", self.day.into(), 1, 31)?;
        let hour = check("DATETIME hour", self.hour.into(), 0, 23)?;
        let minute = check("DATETIME minute", self.minute.into(), 0, 59)?;
        let second = check("DATETIME second", self.second.into(), 0, 59)?;
        Ok(
            (year << 25)
                | (month << 21)
                | (day << 16)
                | (hour << 11)
                | (minute << 5)
                | (second / 2),
        )
    }
}

/// A decoded IE body, one variant per [`IeKind`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IeValue {
    Str(String),
    U8(u8),
    U16(u16),
    U32(u32),
    Versioned { version: u8, value: u64 },
    Addr(SocketAddr),
    DateTime(IaxDateTime),
    Empty,
    Raw(Vec<u8>),
}

impl IeValue {
    /// The kind this value encodes as.
    pub fn kind(&self) -> IeKind {
        match self {
            IeValue::Str(_) => IeKind::Str,
            IeValue::U8(_) => IeKind::U8,
            IeValue::U16(_) => IeKind::U16,
            IeValue::U32(_) => IeKind::U32,
            IeValue::Versioned { .. } => IeKind::Versioned,
            IeValue::Addr(_) => IeKind::Addr,
            IeValue::DateTime(_) => IeKind::DateTime,
            IeValue::Empty => IeKind::Empty,
            IeValue::Raw(_) => IeKind::Raw,
        }
    }
}

/// `sa_family` values of Linux (`AF_INET`, `AF_INET6`), sent in host (little-endian) order.
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;
const SOCKADDR_IN_LEN: usize = 16;
const SOCKADDR_IN6_LEN: usize = 28;

/// One information element, raw. Equality is on id and bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Ie {
    pub id: u8,
    pub data: Vec<u8>,
}

impl fmt::Debug for Ie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ie_name(self.id).unwrap_or("?");
        if is_secret(self.id) && !self.data.is_empty() {
            write!(f, "Ie({}={name}, <redacted>)", self.id)
        } else {
            write!(f, "Ie({}={name}, {:02x?})", self.id, self.data)
        }
    }
}

impl Ie {
    /// An IE with a raw body; bodies over 255 bytes cannot be encoded.
    pub fn new(id: u8, data: impl Into<Vec<u8>>) -> Result<Self, FrameError> {
        let data = data.into();
        if data.len() > MAX_IE_LEN {
            return Err(FrameError::IeTooLong {
                id,
                len: data.len(),
            });
        }
        Ok(Ie { id, data })
    }

    /// How this IE's id is read.
    pub fn kind(&self) -> IeKind {
        ie_kind(self.id)
    }

    /// The typed body, or `None` when a fixed-size kind has the wrong length or an address
    /// has an unknown family (Asterisk ignores such IEs rather than failing the frame).
    pub fn value(&self) -> Option<IeValue> {
        let d = self.data.as_slice();
        Some(match self.kind() {
            IeKind::Str => IeValue::Str(String::from_utf8_lossy(d).into_owned()),
            IeKind::U8 => IeValue::U8(u8::from_be_bytes(d.try_into().ok()?)),
            IeKind::U16 => IeValue::U16(u16::from_be_bytes(d.try_into().ok()?)),
            IeKind::U32 => IeValue::U32(u32::from_be_bytes(d.try_into().ok()?)),
            IeKind::Versioned => {
                let (version, rest) = d.split_first()?;
                IeValue::Versioned {
                    version: *version,
                    value: u64::from_be_bytes(rest.try_into().ok()?),
                }
            }
            IeKind::Addr => IeValue::Addr(decode_sockaddr(d)?),
            IeKind::DateTime => {
                IeValue::DateTime(IaxDateTime::unpack(u32::from_be_bytes(d.try_into().ok()?)))
            }
            IeKind::Empty => IeValue::Empty,
            IeKind::Raw => IeValue::Raw(d.to_vec()),
        })
    }

    /// Encodes `value` as IE `id`. The value's kind must be the id's kind, except that a
    /// [`IeValue::Raw`] body is accepted for any id (the caller takes responsibility).
    pub fn from_value(id: u8, value: &IeValue) -> Result<Ie, FrameError> {
        let expected = ie_kind(id);
        let got = value.kind();
        if got != expected && got != IeKind::Raw {
            return Err(FrameError::IeKindMismatch { id, expected, got });
        }
        let data = match value {
            IeValue::Str(s) => s.as_bytes().to_vec(),
            IeValue::U8(v) => vec![*v],
            IeValue::U16(v) => v.to_be_bytes().to_vec(),
            IeValue::U32(v) => v.to_be_bytes().to_vec(),
            IeValue::Versioned { version, value } => {
                let mut d = Vec::with_capacity(9);
                d.push(*version);
                d.extend_from_slice(&value.to_be_bytes());
                d
            }
            IeValue::Addr(addr) => encode_sockaddr(addr),
            IeValue::DateTime(dt) => dt.pack()?.to_be_bytes().to_vec(),
            IeValue::Empty => Vec::new(),
            IeValue::Raw(d) => d.clone(),
        };
        Ie::new(id, data)
    }

    /// Appends `id | len | body`. A body longer than 255 bytes (possible only by building the
    /// struct literally, since [`Ie::new`] refuses it) is cut at 255 so the frame stays parseable.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let body = self.data.get(..MAX_IE_LEN).unwrap_or(&self.data);
        out.push(self.id);
        // `body` is at most MAX_IE_LEN (255) bytes long, so it fits the length byte.
        out.push(body.len() as u8);
        out.extend_from_slice(body);
    }
}

/// Reads a Linux `sockaddr_in`/`sockaddr_in6` memory image (family in little-endian host
/// order, port and IPv4 address big-endian). The IPv4 padding is not checked; the IPv6
/// flow info is read big-endian (network order, as the kernel stores it) and the scope id
/// little-endian (host order).
fn decode_sockaddr(d: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_le_bytes(d.get(0..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(d.get(2..4)?.try_into().ok()?);
    match (family, d.len()) {
        (AF_INET, SOCKADDR_IN_LEN) => {
            let ip: [u8; 4] = d.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port)))
        }
        (AF_INET6, SOCKADDR_IN6_LEN) => {
            let flowinfo = u32::from_be_bytes(d.get(4..8)?.try_into().ok()?);
            let ip: [u8; 16] = d.get(8..24)?.try_into().ok()?;
            let scope_id = u32::from_le_bytes(d.get(24..28)?.try_into().ok()?);
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(ip),
                port,
                flowinfo,
                scope_id,
            )))
        }
        _ => None,
    }
}

fn encode_sockaddr(addr: &SocketAddr) -> Vec<u8> {
    match addr {
        SocketAddr::V4(a) => {
            let mut d = Vec::with_capacity(SOCKADDR_IN_LEN);
            d.extend_from_slice(&AF_INET.to_le_bytes());
            d.extend_from_slice(&a.port().to_be_bytes());
            d.extend_from_slice(&a.ip().octets());
            d.extend_from_slice(&[0; 8]);
            d
        }
        SocketAddr::V6(a) => {
            let mut d = Vec::with_capacity(SOCKADDR_IN6_LEN);
            d.extend_from_slice(&AF_INET6.to_le_bytes());
            d.extend_from_slice(&a.port().to_be_bytes());
            d.extend_from_slice(&a.flowinfo().to_be_bytes());
            d.extend_from_slice(&a.ip().octets());
            d.extend_from_slice(&a.scope_id().to_le_bytes());
            d
        }
    }
}

/// Splits an IAX frame body into IEs. `base` is the body's offset in the datagram, used only
/// in error offsets. An IE whose length runs past the end, or a single stray byte after the
/// last IE, fails the whole frame, as in Asterisk.
pub fn parse_ies(body: &[u8], base: usize) -> Result<Vec<Ie>, FrameError> {
    let mut ies = Vec::new();
    let mut pos = 0usize;
    while pos < body.len() {
        let (Some(&id), Some(&len)) = (body.get(pos), body.get(pos + 1)) else {
            return Err(FrameError::Truncated {
                what: "IE header",
                offset: base + pos,
                needed: 2,
                available: body.len() - pos,
            });
        };
        let start = pos + 2;
        let end = start + usize::from(len);
        let Some(data) = body.get(start..end) else {
            return Err(FrameError::IeOverrun {
                id,
                offset: base + pos,
                len: len.into(),
                available: body.len() - start,
            });
        };
        ies.push(Ie {
            id,
            data: data.to_vec(),
        });
        pos = end;
    }
    Ok(ies)
}

/// Appends every IE in order.
pub fn write_ies(ies: &[Ie], out: &mut Vec<u8>) {
    for ie in ies {
        ie.write_to(out);
    }
}

/// Media format bits (Asterisk `format_compatibility.h`), as carried by FORMAT/CAPABILITY
/// (low 32 bits), FORMAT2/CAPABILITY2 and the subclass of VOICE/VIDEO frames.
pub mod format {
    pub const G723: u64 = 1 << 0;
    pub const GSM: u64 = 1 << 1;
    pub const ULAW: u64 = 1 << 2;
    pub const ALAW: u64 = 1 << 3;
    /// G.726 with AAL2 codeword packing (the RFC calls this bit "G.726").
    pub const G726_AAL2: u64 = 1 << 4;
    pub const ADPCM: u64 = 1 << 5;
    /// 8 kHz 16-bit linear, big-endian on the wire.
    pub const SLIN: u64 = 1 << 6;
    pub const LPC10: u64 = 1 << 7;
    pub const G729: u64 = 1 << 8;
    pub const SPEEX: u64 = 1 << 9;
    pub const ILBC: u64 = 1 << 10;
    /// G.726 with RFC 3551 packing.
    pub const G726: u64 = 1 << 11;
    pub const G722: u64 = 1 << 12;
    pub const SIREN7: u64 = 1 << 13;
    pub const SIREN14: u64 = 1 << 14;
    /// 16 kHz 16-bit linear, little-endian on the wire (Asterisk does not swap it).
    pub const SLIN16: u64 = 1 << 15;
    pub const JPEG: u64 = 1 << 16;
    pub const PNG: u64 = 1 << 17;
    pub const H261: u64 = 1 << 18;
    pub const H263: u64 = 1 << 19;
    pub const H263P: u64 = 1 << 20;
    pub const H264: u64 = 1 << 21;
    pub const MP4: u64 = 1 << 22;
    pub const VP8: u64 = 1 << 23;
    pub const T140_RED: u64 = 1 << 26;
    pub const T140: u64 = 1 << 27;
    pub const G719: u64 = 1 << 32;
    pub const SPEEX16: u64 = 1 << 33;
    pub const OPUS: u64 = 1 << 34;
    pub const CODEC2: u64 = 1 << 42;
    pub const TESTLAW: u64 = 1 << 47;

    const NAMES: [(u64, &str); 31] = [
        (G723, "G723"),
        (GSM, "GSM"),
        (ULAW, "ULAW"),
        (ALAW, "ALAW"),
        (G726_AAL2, "G726_AAL2"),
        (ADPCM, "ADPCM"),
        (SLIN, "SLIN"),
        (LPC10, "LPC10"),
        (G729, "G729"),
        (SPEEX, "SPEEX"),
        (ILBC, "ILBC"),
        (G726, "G726"),
        (G722, "G722"),
        (SIREN7, "SIREN7"),
        (SIREN14, "SIREN14"),
        (SLIN16, "SLIN16"),
        (JPEG, "JPEG"),
        (PNG, "PNG"),
        (H261, "H261"),
        (H263, "H263"),
        (H263P, "H263P"),
        (H264, "H264"),
        (MP4, "MP4"),
        (VP8, "VP8"),
        (T140_RED, "T140_RED"),
        (T140, "T140"),
        (G719, "G719"),
        (SPEEX16, "SPEEX16"),
        (OPUS, "OPUS"),
        (CODEC2, "CODEC2"),
        (TESTLAW, "TESTLAW"),
    ];

    /// The name of a single format bit, if Asterisk defines it.
    pub fn format_name(bits: u64) -> Option<&'static str> {
        NAMES.iter().find(|(b, _)| *b == bits).map(|(_, n)| *n)
    }
}

/// Asterisk's `iax2_supported_formats[]` (codec_pref.c): a format's CODEC_PREFS "order value"
/// is its 1-based position here, and the character sent is `'A' + order value`. The zeros are
/// Asterisk's reserved placeholder slots; their order values are never sent.
const CODEC_PREF_TABLE: [u64; 38] = [
    format::G723,
    format::GSM,
    format::ULAW,
    format::ALAW,
    format::G726,
    format::ADPCM,
    format::SLIN,
    format::LPC10,
    format::G729,
    format::SPEEX,
    format::SPEEX16,
    format::ILBC,
    format::G726_AAL2,
    format::G722,
    format::SLIN16,
    format::JPEG,
    format::PNG,
    format::H261,
    format::H263,
    format::H263P,
    format::H264,
    format::MP4,
    format::T140_RED,
    format::T140,
    format::SIREN7,
    format::SIREN14,
    format::TESTLAW,
    format::G719,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    format::OPUS,
    format::VP8,
];

const CODEC_PREF_BASE: u8 = b'A';

/// The CODEC_PREFS character of one format bit ('D' for ulaw, 'P' for slin16), if IAX2 has one.
pub fn codec_pref_char(format_bit: u64) -> Option<u8> {
    if format_bit == 0 {
        return None;
    }
    let index = CODEC_PREF_TABLE.iter().position(|&f| f == format_bit)?;
    // index < 38, so 'A' + 1 + index <= 'g' fits a byte.
    Some(CODEC_PREF_BASE + 1 + index as u8)
}

/// The format bit of one CODEC_PREFS character, or `None` for a character outside the table
/// (or one of its placeholder slots).
pub fn codec_pref_format(c: u8) -> Option<u64> {
    let order = c.checked_sub(CODEC_PREF_BASE)?;
    let index = usize::from(order).checked_sub(1)?;
    CODEC_PREF_TABLE.get(index).copied().filter(|&f| f != 0)
}

/// Encodes formats in preference order as a CODEC_PREFS string.
pub fn encode_codec_prefs(formats: &[u64]) -> Result<String, FrameError> {
    let mut s = String::with_capacity(formats.len());
    for &f in formats {
        let c = codec_pref_char(f).ok_or(FrameError::UnknownFormat { bits: f })?;
        s.push(char::from(c));
    }
    if s.len() > MAX_IE_LEN {
        return Err(FrameError::IeTooLong {
            id: CODEC_PREFS,
            len: s.len(),
        });
    }
    Ok(s)
}

/// Decodes a CODEC_PREFS body into format bits in preference order. Characters that name no
/// format are skipped, as Asterisk treats them as "no codec".
pub fn decode_codec_prefs(data: &[u8]) -> Vec<u64> {
    data.iter().filter_map(|&c| codec_pref_format(c)).collect()
}

#[cfg(test)]
pub(crate) mod tests;
