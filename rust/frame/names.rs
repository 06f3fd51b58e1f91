//! The numbers a full frame carries in its type and subclass bytes, and their names.

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
