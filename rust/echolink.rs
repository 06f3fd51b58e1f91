//! EchoLink's audio packet on UDP 5198: an RTP-like 12-byte header, then four GSM 06.10
//! full-rate frames (80 ms at 8 kHz).
//!
//! ```text
//!  0     1     2..4      4..8   8..12   12..144
//!  c0    03    seq (BE)  0*4    0*4     4 x 33-byte GSM frame
//! ```
//!
//! The first byte is EchoLink's own (RTP version 3, no padding, extension or CSRC): a datagram
//! on the audio port that does not start with it is text (`oNDATA...`), which Python handles.
//! Payload type 3 is GSM; SvxLink's Speex (0x96) is not spoken here, as chan_echolink does not.
//! The timestamp and SSRC are zero in what SvxLink and chan_echolink send and are not read.
//! RTCP (the control port) and text are Python's (echolink-py).

use crate::gsm::FRAME_BYTES;

/// First byte of every audio packet.
pub const AUDIO_MARKER: u8 = 0xC0;
/// Payload type of GSM 06.10 full rate.
pub const PAYLOAD_GSM: u8 = 0x03;
/// Header bytes before the first GSM frame.
pub const HEADER_LEN: usize = 12;
/// GSM frames (20 ms each) in one packet.
pub const FRAMES_PER_PACKET: usize = 4;
/// Bytes of a whole packet.
pub const PACKET_LEN: usize = HEADER_LEN + FRAMES_PER_PACKET * FRAME_BYTES;

/// One GSM frame as it travels.
pub type GsmFrame = [u8; FRAME_BYTES];

/// Why a datagram of the audio port is not an audio packet we take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioError {
    /// The first byte is not [`AUDIO_MARKER`] (text, or garbage).
    NotAudio,
    /// A payload type other than GSM (SvxLink's Speex, say).
    PayloadType(u8),
    /// Not exactly [`PACKET_LEN`] bytes.
    Length(usize),
}

impl std::fmt::Display for AudioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AudioError::NotAudio => write!(f, "not an EchoLink audio packet (first byte)"),
            AudioError::PayloadType(pt) => write!(f, "EchoLink payload type {pt} is not GSM"),
            AudioError::Length(n) => {
                write!(
                    f,
                    "EchoLink audio packet of {n} bytes (expected {PACKET_LEN})"
                )
            }
        }
    }
}

impl std::error::Error for AudioError {}

/// A parsed audio packet: its sequence number and its four frames, borrowed from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioPacket<'a> {
    pub seq: u16,
    pub frames: [&'a GsmFrame; FRAMES_PER_PACKET],
}

/// Parse one datagram of the audio port.
pub fn parse(data: &[u8]) -> Result<AudioPacket<'_>, AudioError> {
    let (&first, rest) = data.split_first().ok_or(AudioError::NotAudio)?;
    if first != AUDIO_MARKER {
        return Err(AudioError::NotAudio);
    }
    // The marker bit (0x80 of the second byte) carries nothing in EchoLink's use.
    let pt = rest.first().map_or(0, |b| b & 0x7F);
    if data.len() != PACKET_LEN {
        return Err(AudioError::Length(data.len()));
    }
    if pt != PAYLOAD_GSM {
        return Err(AudioError::PayloadType(pt));
    }
    let seq = match data.get(2..4) {
        Some(&[hi, lo]) => u16::from_be_bytes([hi, lo]),
        _ => return Err(AudioError::Length(data.len())),
    };
    let frame = |i: usize| -> Result<&GsmFrame, AudioError> {
        let at = HEADER_LEN + i * FRAME_BYTES;
        data.get(at..at + FRAME_BYTES)
            .and_then(|s| s.try_into().ok())
            .ok_or(AudioError::Length(data.len()))
    };
    Ok(AudioPacket {
        seq,
        frames: [frame(0)?, frame(1)?, frame(2)?, frame(3)?],
    })
}

/// Append the packet of `seq` carrying `frames` to `out`.
pub fn build(seq: u16, frames: &[GsmFrame; FRAMES_PER_PACKET], out: &mut Vec<u8>) {
    out.reserve(PACKET_LEN);
    out.extend_from_slice(&[AUDIO_MARKER, PAYLOAD_GSM]);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&[0; 8]);
    for f in frames {
        out.extend_from_slice(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> [GsmFrame; 4] {
        std::array::from_fn(|i| {
            let mut f = [0u8; FRAME_BYTES];
            f[0] = 0xD0 | i as u8;
            f[32] = i as u8 * 3;
            f
        })
    }

    #[test]
    fn build_then_parse_round_trips() {
        let mut wire = Vec::new();
        build(0xBEEF, &frames(), &mut wire);
        assert_eq!(wire.len(), PACKET_LEN);
        assert_eq!(&wire[..4], &[0xC0, 0x03, 0xBE, 0xEF]);
        assert!(wire[4..12].iter().all(|&b| b == 0));
        let p = parse(&wire).expect("parses");
        assert_eq!(p.seq, 0xBEEF);
        for (got, want) in p.frames.iter().zip(frames().iter()) {
            assert_eq!(*got, want);
        }
    }

    #[test]
    fn refuses_text_speex_and_bad_lengths() {
        assert_eq!(parse(b"oNDATA\rhello\0"), Err(AudioError::NotAudio));
        assert_eq!(parse(&[]), Err(AudioError::NotAudio));
        let mut wire = Vec::new();
        build(1, &frames(), &mut wire);
        assert_eq!(parse(&wire[..143]), Err(AudioError::Length(143)));
        wire.push(0);
        assert_eq!(parse(&wire), Err(AudioError::Length(145)));
        wire.pop();
        wire[1] = 0x96;
        assert_eq!(parse(&wire), Err(AudioError::PayloadType(0x16)));
        wire[1] = 0x83;
        assert!(parse(&wire).is_ok(), "the marker bit is ignored");
    }
}
