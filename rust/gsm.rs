//! GSM 06.10 full-rate speech codec (ETSI EN 300 961), bit-exact with libgsm.

/// Bytes of one encoded frame in libgsm's packing (the 0xD signature nibble, then 260 bits).
pub const FRAME_BYTES: usize = 33;
/// Samples (8 kHz) of one frame: 20 ms.
pub const FRAME_SAMPLES: usize = 160;
