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

use crate::frame::FrameError;

/// Largest IE body: the length field is one byte.
pub const MAX_IE_LEN: usize = 255;

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

/// How the bytes of an IE are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IeKind {
    /// Text, not NUL-terminated; decoded as UTF-8 with replacement.
    Str,
    /// Exactly 1 byte.
    U8,
    /// Exactly 2 bytes, big-endian.
    U16,
    /// Exactly 4 bytes, big-endian.
    U32,
    /// Exactly 9 bytes: a version byte, then a big-endian u64 (FORMAT2, CAPABILITY2).
    Versioned,
    /// A Linux `sockaddr_in` (16 bytes) or `sockaddr_in6` (28 bytes) memory image.
    Addr,
    /// Exactly 4 bytes: the packed IAX2 date and time.
    DateTime,
    /// Presence is the whole meaning (AUTOANSWER); Asterisk ignores any body.
    Empty,
    /// Opaque bytes (provisioning, firmware, keys, unknown ids).
    Raw,
}

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
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn codec_pref_chars_match_asterisk() {
        // The values iax2.md lists, derived from Asterisk's table (and seen on the wire).
        let expected = [
            (format::G723, b'B'),
            (format::GSM, b'C'),
            (format::ULAW, b'D'),
            (format::ALAW, b'E'),
            (format::G726, b'F'),
            (format::ADPCM, b'G'),
            (format::SLIN, b'H'),
            (format::G729, b'J'),
            (format::G722, b'O'),
            (format::SLIN16, b'P'),
            (format::G719, b']'),
            (format::OPUS, b'f'),
            (format::VP8, b'g'),
        ];
        for (f, c) in expected {
            assert_eq!(codec_pref_char(f), Some(c), "format {f:#x}");
            assert_eq!(codec_pref_format(c), Some(f), "char {}", char::from(c));
        }
        assert_eq!(codec_pref_char(0), None);
        assert_eq!(codec_pref_char(format::CODEC2), None);
        assert_eq!(codec_pref_char(format::ULAW | format::ALAW), None);
        assert_eq!(codec_pref_format(b'A'), None);
        assert_eq!(codec_pref_format(b'^'), None, "placeholder slot");
        assert_eq!(codec_pref_format(b'h'), None);
        assert_eq!(codec_pref_format(0), None);
    }

    #[test]
    fn codec_prefs_string_round_trip() {
        let prefs = [format::SLIN16, format::ULAW, format::ALAW, format::G722];
        let s = encode_codec_prefs(&prefs).unwrap();
        assert_eq!(s, "PDEO");
        assert_eq!(decode_codec_prefs(s.as_bytes()), prefs);
        assert_eq!(decode_codec_prefs(b"D^zE"), [format::ULAW, format::ALAW]);
        assert_eq!(
            encode_codec_prefs(&[format::ULAW, 3]),
            Err(FrameError::UnknownFormat { bits: 3 })
        );
    }

    #[test]
    fn every_table_entry_round_trips() {
        for (i, &f) in CODEC_PREF_TABLE.iter().enumerate() {
            if f == 0 {
                continue;
            }
            let c = codec_pref_char(f).unwrap();
            assert_eq!(usize::from(c - b'A'), i + 1);
            assert_eq!(codec_pref_format(c), Some(f));
            assert!(format::format_name(f).is_some());
        }
    }

    #[test]
    fn kinds_of_named_ies() {
        assert_eq!(ie_kind(CALLED_NUMBER), IeKind::Str);
        assert_eq!(ie_kind(CALLTOKEN), IeKind::Str);
        assert_eq!(ie_kind(VERSION), IeKind::U16);
        assert_eq!(ie_kind(RR_DELAY), IeKind::U16);
        assert_eq!(ie_kind(RR_LOSS), IeKind::U32);
        assert_eq!(ie_kind(CAUSECODE), IeKind::U8);
        assert_eq!(ie_kind(FORMAT2), IeKind::Versioned);
        assert_eq!(ie_kind(APPARENT_ADDR), IeKind::Addr);
        assert_eq!(ie_kind(DATETIME), IeKind::DateTime);
        assert_eq!(ie_kind(AUTOANSWER), IeKind::Empty);
        assert_eq!(ie_kind(ENCKEY), IeKind::Raw);
        assert_eq!(ie_kind(OSPTOKEN), IeKind::Raw);
        assert_eq!(ie_kind(58), IeKind::Raw);
        assert_eq!(ie_kind(255), IeKind::Raw);
        for id in 1..=57u8 {
            assert!(ie_name(id).is_some(), "id {id}");
        }
        assert_eq!(ie_name(0), None);
        assert_eq!(ie_name(58), None);
        assert_eq!(ie_name(CALLINGANI2), Some("CALLINGANI2"));
    }

    #[test]
    fn golden_format2_slin16() {
        let ie = Ie::from_value(
            FORMAT2,
            &IeValue::Versioned {
                version: 0,
                value: format::SLIN16,
            },
        )
        .unwrap();
        let mut out = Vec::new();
        ie.write_to(&mut out);
        assert_eq!(out, [0x38, 0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00]);
    }

    #[test]
    fn golden_apparent_addr_v4() {
        let addr: SocketAddr = "127.0.0.1:4570".parse().unwrap();
        let ie = Ie::from_value(APPARENT_ADDR, &IeValue::Addr(addr)).unwrap();
        let mut out = Vec::new();
        ie.write_to(&mut out);
        assert_eq!(
            out,
            [0x12, 0x10, 0x02, 0x00, 0x11, 0xda, 0x7f, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(ie.value(), Some(IeValue::Addr(addr)));
    }

    #[test]
    fn apparent_addr_v6_layout() {
        let addr = SocketAddr::V6(SocketAddrV6::new(
            "2001:db8::7".parse().unwrap(),
            4569,
            0x0102_0304,
            0x0506_0708,
        ));
        let ie = Ie::from_value(APPARENT_ADDR, &IeValue::Addr(addr)).unwrap();
        assert_eq!(ie.data.len(), 28);
        assert_eq!(&ie.data[0..2], &[10, 0]);
        assert_eq!(&ie.data[2..4], &[0x11, 0xd9]);
        assert_eq!(&ie.data[4..8], &[1, 2, 3, 4]);
        assert_eq!(&ie.data[8..10], &[0x20, 0x01]);
        assert_eq!(&ie.data[24..28], &[8, 7, 6, 5]);
        assert_eq!(ie.value(), Some(IeValue::Addr(addr)));
    }

    #[test]
    fn apparent_addr_bad_images_are_ignored() {
        let big_endian_family = Ie::new(
            APPARENT_ADDR,
            [0, 2, 0x11, 0xd9, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!(big_endian_family.value(), None);
        let short = Ie::new(APPARENT_ADDR, [2, 0, 0x11, 0xd9, 127, 0, 0, 1]).unwrap();
        assert_eq!(short.value(), None);
        let v6_family_v4_len = Ie::new(APPARENT_ADDR, [10u8; 16]).unwrap();
        assert_eq!(v6_family_v4_len.value(), None);
        assert_eq!(Ie::new(APPARENT_ADDR, []).unwrap().value(), None);
        // Non-zero IPv4 padding is tolerated, as the kernel and Asterisk ignore it.
        let padded = Ie::new(
            APPARENT_ADDR,
            [2, 0, 0, 80, 10, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9],
        )
        .unwrap();
        assert_eq!(
            padded.value(),
            Some(IeValue::Addr("10.0.0.1:80".parse().unwrap()))
        );
    }

    #[test]
    fn wrong_size_fixed_ies_are_ignored() {
        for (id, good) in [
            (CAUSECODE, 1usize),
            (VERSION, 2),
            (FORMAT, 4),
            (DATETIME, 4),
            (FORMAT2, 9),
        ] {
            for len in 0..12 {
                let ie = Ie::new(id, vec![0u8; len]).unwrap();
                assert_eq!(ie.value().is_some(), len == good, "id {id} len {len}");
            }
        }
        // Presence is all that matters for AUTOANSWER, whatever its body.
        assert_eq!(
            Ie::new(AUTOANSWER, [1, 2]).unwrap().value(),
            Some(IeValue::Empty)
        );
    }

    #[test]
    fn strings_decode_with_replacement() {
        let ie = Ie::new(CAUSE, b"bad \xff byte".to_vec()).unwrap();
        assert_eq!(ie.value(), Some(IeValue::Str("bad \u{fffd} byte".into())));
        assert_eq!(
            Ie::new(CALLTOKEN, []).unwrap().value(),
            Some(IeValue::Str(String::new()))
        );
    }

    #[test]
    fn datetime_golden_and_limits() {
        let dt = IaxDateTime {
            year: 2026,
            month: 11,
            day: 22,
            hour: 3,
            minute: 51,
            second: 46,
        };
        let v = dt.pack().unwrap();
        assert_eq!(
            v,
            (26 << 25) | (11 << 21) | (22 << 16) | (3 << 11) | (51 << 5) | 23
        );
        assert_eq!(IaxDateTime::unpack(v), dt);
        let odd = IaxDateTime { second: 47, ..dt };
        assert_eq!(odd.pack().unwrap(), v, "odd seconds round down");
        assert_eq!(IaxDateTime::unpack(u32::MAX).year, 2127);
        assert_eq!(IaxDateTime::unpack(u32::MAX).second, 62);
        for bad in [
            IaxDateTime { year: 1999, ..dt },
            IaxDateTime { year: 2128, ..dt },
            IaxDateTime { month: 0, ..dt },
            IaxDateTime { month: 13, ..dt },
            IaxDateTime { day: 0, ..dt },
            IaxDateTime { day: 32, ..dt },
            IaxDateTime { hour: 24, ..dt },
            IaxDateTime { minute: 60, ..dt },
            IaxDateTime { second: 60, ..dt },
        ] {
            assert!(
                matches!(bad.pack(), Err(FrameError::OutOfRange { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn from_value_checks_kind_and_length() {
        assert_eq!(
            Ie::from_value(FORMAT, &IeValue::U16(4)),
            Err(FrameError::IeKindMismatch {
                id: FORMAT,
                expected: IeKind::U32,
                got: IeKind::U16
            })
        );
        // Raw bytes are accepted for any id.
        assert_eq!(
            Ie::from_value(FORMAT, &IeValue::Raw(vec![1])).unwrap().data,
            [1]
        );
        let long = "x".repeat(256);
        assert_eq!(
            Ie::from_value(CAUSE, &IeValue::Str(long)),
            Err(FrameError::IeTooLong {
                id: CAUSE,
                len: 256
            })
        );
        assert!(Ie::from_value(CAUSE, &IeValue::Str("y".repeat(255))).is_ok());
        assert_eq!(
            Ie::new(1, vec![0; 256]),
            Err(FrameError::IeTooLong { id: 1, len: 256 })
        );
        assert_eq!(
            Ie::from_value(AUTOANSWER, &IeValue::Empty).unwrap().data,
            Vec::<u8>::new()
        );
    }

    #[test]
    fn write_clamps_an_oversized_literal() {
        let ie = Ie {
            id: 2,
            data: vec![7; 300],
        };
        let mut out = Vec::new();
        ie.write_to(&mut out);
        assert_eq!(out.len(), 257);
        assert_eq!(out[1], 255);
    }

    #[test]
    fn debug_redacts_secrets() {
        let pw = Ie::new(PASSWORD, b"hunter2".to_vec()).unwrap();
        let s = format!("{pw:?}");
        assert!(!s.contains("68"), "{s}");
        assert!(s.contains("redacted"));
        let md5 = Ie::new(MD5_RESULT, b"821d4b0b8252f25b8324273857ef0fb4".to_vec()).unwrap();
        assert!(format!("{md5:?}").contains("redacted"));
        let plain = Ie::new(CALLED_NUMBER, b"1000".to_vec()).unwrap();
        assert!(format!("{plain:?}").contains("31"));
    }

    #[test]
    fn parse_ies_errors() {
        assert_eq!(parse_ies(&[], 12).unwrap(), Vec::<Ie>::new());
        assert_eq!(
            parse_ies(&[1], 12),
            Err(FrameError::Truncated {
                what: "IE header",
                offset: 12,
                needed: 2,
                available: 1
            })
        );
        assert_eq!(
            parse_ies(&[1, 3, b'a', b'b'], 12),
            Err(FrameError::IeOverrun {
                id: 1,
                offset: 12,
                len: 3,
                available: 2
            })
        );
        assert_eq!(
            parse_ies(&[25, 0, 1, 1, b'x', 9], 12),
            Err(FrameError::Truncated {
                what: "IE header",
                offset: 17,
                needed: 2,
                available: 1
            })
        );
        let ok = parse_ies(&[25, 0, 1, 1, b'x'], 12).unwrap();
        assert_eq!(
            ok,
            [
                Ie {
                    id: 25,
                    data: vec![]
                },
                Ie {
                    id: 1,
                    data: b"x".to_vec()
                }
            ]
        );
    }

    pub(crate) fn arb_value_for(id: u8) -> BoxedStrategy<IeValue> {
        match ie_kind(id) {
            IeKind::Str => "\\PC{0,60}".prop_map(IeValue::Str).boxed(),
            IeKind::U8 => any::<u8>().prop_map(IeValue::U8).boxed(),
            IeKind::U16 => any::<u16>().prop_map(IeValue::U16).boxed(),
            IeKind::U32 => any::<u32>().prop_map(IeValue::U32).boxed(),
            IeKind::Versioned => (any::<u8>(), any::<u64>())
                .prop_map(|(version, value)| IeValue::Versioned { version, value })
                .boxed(),
            IeKind::Addr => prop_oneof![
                (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| IeValue::Addr(
                    SocketAddr::V4(SocketAddrV4::new(ip.into(), port))
                )),
                (any::<[u8; 16]>(), any::<u16>(), any::<u32>(), any::<u32>()).prop_map(
                    |(ip, port, flow, scope)| IeValue::Addr(SocketAddr::V6(SocketAddrV6::new(
                        ip.into(),
                        port,
                        flow,
                        scope
                    )))
                ),
            ]
            .boxed(),
            IeKind::DateTime => (
                2000u16..=2127,
                1u8..=12,
                1u8..=31,
                0u8..=23,
                0u8..=59,
                0u8..=29,
            )
                .prop_map(|(year, month, day, hour, minute, s)| {
                    IeValue::DateTime(IaxDateTime {
                        year,
                        month,
                        day,
                        hour,
                        minute,
                        second: s * 2,
                    })
                })
                .boxed(),
            IeKind::Empty => Just(IeValue::Empty).boxed(),
            IeKind::Raw => proptest::collection::vec(any::<u8>(), 0..=255)
                .prop_map(IeValue::Raw)
                .boxed(),
        }
    }

    pub(crate) fn arb_typed_ie() -> impl Strategy<Value = (u8, IeValue)> {
        any::<u8>().prop_flat_map(|id| arb_value_for(id).prop_map(move |v| (id, v)))
    }

    proptest! {
        #[test]
        fn typed_values_round_trip((id, value) in arb_typed_ie()) {
            let ie = Ie::from_value(id, &value).unwrap();
            prop_assert_eq!(ie.value(), Some(value));
            let mut out = Vec::new();
            ie.write_to(&mut out);
            prop_assert_eq!(parse_ies(&out, 0).unwrap(), vec![ie]);
        }

        #[test]
        fn raw_ies_round_trip(ies in proptest::collection::vec(
            (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..=255))
                .prop_map(|(id, data)| Ie { id, data }), 0..8)) {
            let mut out = Vec::new();
            write_ies(&ies, &mut out);
            prop_assert_eq!(parse_ies(&out, 0).unwrap(), ies);
        }

        #[test]
        fn ie_value_never_panics(id in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..=40)) {
            let _ = Ie { id, data }.value();
        }

        #[test]
        fn datetime_pack_unpack(v in any::<u32>()) {
            let dt = IaxDateTime::unpack(v);
            if let Ok(packed) = dt.pack() {
                prop_assert_eq!(packed, v);
            }
        }
    }
}
