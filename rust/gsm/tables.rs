//! The tables of GSM 06.10 (clause 5.1, tables 5.1 to 5.3, and clause 4.2's constants).

/// Table 4.1 (clause 4.2.7): A, B and the smallest and largest coded value of LAR(i), for
/// the quantisation of the log-area ratios.
pub(super) const LAR_A: [i16; 8] = [20480, 20480, 20480, 20480, 13964, 15360, 8534, 9036];
pub(super) const LAR_B: [i16; 8] = [0, 0, 2048, -2560, 94, -1792, -341, -1144];
pub(super) const LAR_MIC: [i16; 8] = [-32, -32, -16, -16, -8, -8, -4, -4];
pub(super) const LAR_MAC: [i16; 8] = [31, 31, 15, 15, 7, 7, 3, 3];

/// Table 4.2 (clause 4.2.8): INVA(i) = 32768 * 8 / A(i), for decoding the log-area ratios.
pub(super) const LAR_INVA: [i16; 8] = [13107, 13107, 13107, 13107, 19223, 17476, 31454, 29708];

/// Table 4.3a (clause 4.2.11): the decision levels of the LTP gain.
pub(super) const DLB: [i16; 4] = [6554, 16384, 26214, 32767];

/// Table 4.3b (clause 4.2.12): the quantised LTP gains.
pub(super) const QLB: [i16; 4] = [3277, 11469, 21299, 32767];

/// Table 4.4 (clause 4.2.13): the weighting filter's impulse response, centred on 5.
pub(super) const H: [i32; 11] = [-134, -374, 0, 2054, 5741, 8192, 5741, 2054, 0, -374, -134];

/// Table 4.5 (clause 4.2.15): the inverse mantissas, for the RPE quantisation.
pub(super) const NRFAC: [i16; 8] = [29128, 26215, 23832, 21846, 20165, 18725, 17476, 16384];

/// Table 4.6 (clause 4.2.16): the normalised mantissas, for the inverse RPE quantisation.
pub(super) const FAC: [i16; 8] = [18431, 20479, 22527, 24575, 26623, 28671, 30719, 32767];

/// Bits of each LARc(1..8) in the frame (clause 1.7, table 1.1).
pub(super) const LAR_BITS: [u32; 8] = [6, 6, 5, 5, 4, 4, 3, 3];
