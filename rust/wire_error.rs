//! The error the IAX2 wire code returns, below both `frame` and `ie`.
//!
//! Frames carry IEs, and both fail the same way (truncated input, a value the wire cannot
//! carry), so one error type serves both; it lives here, with the two IE facts it names (the
//! kind of an IE value and the largest IE body), so that neither module reaches into the
//! other for it. `frame` and `ie` re-export what they always offered.

use std::fmt;

/// Largest IE body: the length field is one byte.
pub const MAX_IE_LEN: usize = 255;

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

/// Why bytes are not an IAX2 frame, or why a value cannot be encoded as one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The datagram ends inside `what`, which starts at `offset` and needs `needed` bytes.
    Truncated {
        what: &'static str,
        offset: usize,
        needed: usize,
        available: usize,
    },
    /// The IE at `offset` declares `len` body bytes but only `available` follow.
    IeOverrun {
        id: u8,
        offset: usize,
        len: usize,
        available: usize,
    },
    /// A meta frame (first u16 zero) whose command is not trunk (1).
    BadMetaCommand { metacmd: u8 },
    /// A trunk frame with flag bits other than bit 0 ("trunk timestamps") set.
    BadTrunkFlags { cmddata: u8 },
    /// A subclass that is not 0..=127, -1 or a single power of two.
    BadSubclass { value: i64 },
    /// An IE body over 255 bytes.
    IeTooLong { id: u8, len: usize },
    /// A typed IE value of the wrong kind for its id.
    IeKindMismatch {
        id: u8,
        expected: IeKind,
        got: IeKind,
    },
    /// Format bits that are not one format of the CODEC_PREFS table.
    UnknownFormat { bits: u64 },
    /// A field value outside what the wire can carry.
    OutOfRange {
        what: &'static str,
        value: i64,
        min: i64,
        max: i64,
    },
    /// A variable-length part longer than its length field allows.
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// Parts that cannot go together (IEs on a non-IAX frame, a payload on an IAX frame, ...).
    Inconsistent { what: &'static str },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated { what, offset, needed, available } => write!(
                f,
                "truncated {what} at offset {offset}: needs {needed} bytes, {available} left"
            ),
            FrameError::IeOverrun { id, offset, len, available } => write!(
                f,
                "IE {id} at offset {offset} declares {len} bytes but only {available} follow"
            ),
            FrameError::BadMetaCommand { metacmd } => {
                write!(f, "unknown meta command {metacmd} at offset 2 (only 1 = trunk exists)")
            }
            FrameError::BadTrunkFlags { cmddata } => {
                write!(f, "unknown trunk flags {cmddata:#04x} at offset 3")
            }
            FrameError::BadSubclass { value } => write!(
                f,
                "subclass {value} cannot be encoded: it must be 0..=127, -1 or a single power of two"
            ),
            FrameError::IeTooLong { id, len } => {
                write!(f, "IE {id} body is {len} bytes; at most {} fit", MAX_IE_LEN)
            }
            FrameError::IeKindMismatch { id, expected, got } => {
                write!(f, "IE {id} takes a {expected:?} value, not {got:?}")
            }
            FrameError::UnknownFormat { bits } => {
                write!(f, "format bits {bits:#x} are not one format IAX2 can name")
            }
            FrameError::OutOfRange { what, value, min, max } => {
                write!(f, "{what} {value} is out of range {min}..={max}")
            }
            FrameError::TooLong { what, len, max } => {
                write!(f, "{what} is {len} bytes; at most {max} fit")
            }
            FrameError::Inconsistent { what } => f.write_str(what),
        }
    }
}

impl std::error::Error for FrameError {}
