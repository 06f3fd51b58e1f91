//! GSM 06.10 full-rate speech codec (ETSI EN 300 961, "RPE-LTP"), bit-exact with libgsm in its
//! default build (no WAV49 packing, no FAST, no LTP_CUT): 160 samples at 8 kHz (20 ms) to a
//! 33-byte frame and back.
//!
//! Written in Rust from the recommendation's fixed-point description (the clause of each step
//! is named beside it) rather than by building libgsm's C into the extension: the house is
//! pure Rust (no C toolchain in the wheel build, one memory-safety story), and bit-exactness
//! is proven instead against the Debian `libgsm1` a node's peers use (Asterisk's codec_gsm,
//! SvxLink), on speech and on random input, both ways (`tests/test_gsm.py`, and the vectors in
//! `tests/data/gsm/` for `cargo test`).
//!
//! The 33-byte frame is libgsm's: the 0xD signature nibble, then the 76 parameters MSB first
//! (LARc 6,6,5,5,4,4,3,3 bits; per sub-block Nc 7, bc 2, Mc 2, xmaxc 6, 13 x xMc 3).
//! EchoLink, Asterisk and RTP (payload type 3) carry frames in this form.

mod decoder;
mod encoder;
mod lar;
mod ops;
mod rpe;
mod tables;
#[cfg(test)]
mod tests;

pub use decoder::Decoder;
pub use encoder::Encoder;

use tables::LAR_BITS;

/// Bytes of one encoded frame in libgsm's packing (the 0xD signature nibble, then 260 bits).
pub const FRAME_BYTES: usize = 33;
/// Samples (8 kHz) of one frame: 20 ms.
pub const FRAME_SAMPLES: usize = 160;
/// The signature nibble every frame starts with.
pub const MAGIC: u8 = 0xD;

/// The parameters of one frame (clause 1.7, table 1.1), each in its coded range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Params {
    /// Coded log-area ratios LARc(1..8), offset to be non-negative.
    pub larc: [i16; 8],
    /// Per sub-block: LTP lag, coded LTP gain, RPE grid, coded block amplitude, RPE pulses.
    pub nc: [i16; 4],
    pub bc: [i16; 4],
    pub mc: [i16; 4],
    pub xmaxc: [i16; 4],
    pub xmc: [[i16; 13]; 4],
}

/// A 33-byte frame that does not start with the 0xD signature nibble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadFrame;

impl std::fmt::Display for BadFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a GSM 06.10 frame (no 0xD signature)")
    }
}

impl std::error::Error for BadFrame {}

/// Writes fields of at most 8 bits MSB first (a field then spans at most two bytes).
struct BitWriter<'a> {
    out: &'a mut [u8; FRAME_BYTES],
    bit: usize,
}

impl BitWriter<'_> {
    fn put(&mut self, value: i16, bits: u32) {
        let (byte, off) = (self.bit / 8, (self.bit % 8) as u32);
        let field = (value as u16) & ((1 << bits) - 1);
        let w = field << (16 - off - bits);
        if let Some(b) = self.out.get_mut(byte) {
            *b |= (w >> 8) as u8;
        }
        if let Some(b) = self.out.get_mut(byte + 1) {
            *b |= w as u8;
        }
        self.bit += bits as usize;
    }
}

/// Reads fields of at most 8 bits MSB first.
struct BitReader<'a> {
    data: &'a [u8; FRAME_BYTES],
    bit: usize,
}

impl BitReader<'_> {
    fn get(&mut self, bits: u32) -> i16 {
        let (byte, off) = (self.bit / 8, (self.bit % 8) as u32);
        let hi = u16::from(self.data.get(byte).copied().unwrap_or(0));
        let lo = u16::from(self.data.get(byte + 1).copied().unwrap_or(0));
        let w = (hi << 8) | lo;
        self.bit += bits as usize;
        ((w >> (16 - off - bits)) & ((1 << bits) - 1)) as i16
    }
}

impl Params {
    /// The frame's 33 bytes.
    pub fn pack(&self) -> [u8; FRAME_BYTES] {
        let mut out = [0u8; FRAME_BYTES];
        let mut w = BitWriter {
            out: &mut out,
            bit: 0,
        };
        w.put(i16::from(MAGIC), 4);
        for (&v, &bits) in self.larc.iter().zip(&LAR_BITS) {
            w.put(v, bits);
        }
        for k in 0..4 {
            w.put(self.nc[k], 7);
            w.put(self.bc[k], 2);
            w.put(self.mc[k], 2);
            w.put(self.xmaxc[k], 6);
            for &x in &self.xmc[k] {
                w.put(x, 3);
            }
        }
        out
    }

    /// The parameters of a 33-byte frame.
    pub fn unpack(frame: &[u8; FRAME_BYTES]) -> Result<Params, BadFrame> {
        let mut r = BitReader {
            data: frame,
            bit: 0,
        };
        if r.get(4) != i16::from(MAGIC) {
            return Err(BadFrame);
        }
        let mut p = Params::default();
        for (v, &bits) in p.larc.iter_mut().zip(&LAR_BITS) {
            *v = r.get(bits);
        }
        for k in 0..4 {
            p.nc[k] = r.get(7);
            p.bc[k] = r.get(2);
            p.mc[k] = r.get(2);
            p.xmaxc[k] = r.get(6);
            for x in p.xmc[k].iter_mut() {
                *x = r.get(3);
            }
        }
        Ok(p)
    }
}

/// Why a batch of PCM or frames cannot be coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsmError {
    /// Native-endian PCM that is not whole 160-sample frames (the byte count).
    PcmLength(usize),
    /// Encoded data that is not whole 33-byte frames (the byte count).
    FrameLength(usize),
    /// Frame `n` of a batch has no 0xD signature (the frames before it were decoded).
    BadFrame(usize),
}

impl std::fmt::Display for GsmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GsmError::PcmLength(n) => write!(
                f,
                "GSM encodes whole 20 ms frames: {n} bytes of PCM is not a multiple of {}",
                FRAME_SAMPLES * 2
            ),
            GsmError::FrameLength(n) => write!(
                f,
                "GSM decodes whole frames: {n} bytes is not a multiple of {FRAME_BYTES}"
            ),
            GsmError::BadFrame(i) => write!(f, "GSM frame {i}: {BadFrame}"),
        }
    }
}

impl std::error::Error for GsmError {}

impl Encoder {
    /// Encode native-endian 16-bit PCM (whole frames) into `out`, 33 bytes per frame;
    /// returns the bytes written.
    pub fn encode_ne_bytes(&mut self, pcm: &[u8], out: &mut Vec<u8>) -> Result<usize, GsmError> {
        let step = FRAME_SAMPLES * 2;
        if pcm.len() % step != 0 {
            return Err(GsmError::PcmLength(pcm.len()));
        }
        out.reserve(pcm.len() / step * FRAME_BYTES);
        for chunk in pcm.chunks_exact(step) {
            let frame: [i16; FRAME_SAMPLES] =
                std::array::from_fn(|i| i16::from_ne_bytes([chunk[2 * i], chunk[2 * i + 1]]));
            out.extend_from_slice(&self.encode(&frame));
        }
        Ok(pcm.len() / step * FRAME_BYTES)
    }

    /// Encode one 20 ms frame (160 samples at 8 kHz) into its 33 bytes.
    pub fn encode(&mut self, pcm: &[i16; FRAME_SAMPLES]) -> [u8; FRAME_BYTES] {
        self.encode_params(pcm).pack()
    }
}

impl Decoder {
    /// Decode one 33-byte frame into 160 samples. A frame without the signature is refused
    /// and leaves the decoder untouched (as libgsm's `gsm_decode` does).
    pub fn decode(
        &mut self,
        frame: &[u8; FRAME_BYTES],
        out: &mut [i16; FRAME_SAMPLES],
    ) -> Result<(), BadFrame> {
        let p = Params::unpack(frame)?;
        self.decode_params(&p, out);
        Ok(())
    }

    /// Decode whole 33-byte frames into native-endian 16-bit PCM appended to `out`; returns
    /// the bytes written. A frame without the signature stops the batch with its index.
    pub fn decode_to_ne_bytes(
        &mut self,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, GsmError> {
        if data.len() % FRAME_BYTES != 0 {
            return Err(GsmError::FrameLength(data.len()));
        }
        out.reserve(data.len() / FRAME_BYTES * FRAME_SAMPLES * 2);
        let mut pcm = [0i16; FRAME_SAMPLES];
        for (i, chunk) in data.chunks_exact(FRAME_BYTES).enumerate() {
            let frame: &[u8; FRAME_BYTES] = chunk.try_into().map_err(|_| GsmError::BadFrame(i))?;
            self.decode(frame, &mut pcm)
                .map_err(|_| GsmError::BadFrame(i))?;
            for s in pcm {
                out.extend_from_slice(&s.to_ne_bytes());
            }
        }
        Ok(data.len() / FRAME_BYTES * FRAME_SAMPLES * 2)
    }
}
