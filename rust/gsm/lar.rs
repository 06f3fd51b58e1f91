//! The log-area ratios both ways share: decoding the coded ones (clause 4.2.8, = 4.3.1),
//! interpolating them across the four parts of a frame (4.2.9.1) and turning them into
//! reflection coefficients (4.2.9.2).

use super::ops::{add, mult_r, sub, MIN_WORD};
use super::tables::{LAR_B, LAR_INVA, LAR_MIC};

/// Clause 4.2.8: LARpp(i) from the coded LARc(i).
pub(super) fn decode(larc: &[i16; 8], larpp: &mut [i16; 8]) {
    for i in 0..8 {
        // The coded value is stored without its offset (MIC); (LARc + MIC) << 10 fits a word.
        let t = (i32::from(add(larc[i], LAR_MIC[i])) << 10) as i16;
        let t = sub(t, LAR_B[i].wrapping_mul(2));
        let t = mult_r(LAR_INVA[i], t);
        larpp[i] = add(t, t);
    }
}

/// The four interpolation segments of a frame (clause 4.2.9.1, table 4.7): samples 0..13,
/// 13..27, 27..40 and 40..160, each with its weights of the previous and current LARs.
pub(super) const SEGMENTS: [(usize, usize); 4] = [(0, 13), (13, 27), (27, 40), (40, 160)];

/// Clause 4.2.9.1: the interpolated LARp(i) of segment `seg` between the previous frame's
/// LARs and this frame's.
pub(super) fn interpolate(seg: usize, prev: &[i16; 8], cur: &[i16; 8], larp: &mut [i16; 8]) {
    for i in 0..8 {
        let (p, c) = (prev[i], cur[i]);
        larp[i] = match seg {
            0 => add(add(p >> 2, c >> 2), p >> 1),
            1 => add(p >> 1, c >> 1),
            2 => add(add(p >> 2, c >> 2), c >> 1),
            _ => c,
        };
    }
}

/// Clause 4.2.9.2: the reflection coefficients rp(i) from LARp(i), in place.
pub(super) fn to_rp(larp: &mut [i16; 8]) {
    for v in larp.iter_mut() {
        let temp = if *v == MIN_WORD { i16::MAX } else { v.abs() };
        let r = if temp < 11059 {
            temp << 1
        } else if temp < 20070 {
            temp + 11059
        } else {
            add(temp >> 2, 26112)
        };
        *v = if *v < 0 { -r } else { r };
    }
}

/// The reflection coefficients of every segment of a frame, from the previous and current
/// decoded LARs.
pub(super) fn segment_rp(prev: &[i16; 8], cur: &[i16; 8]) -> [[i16; 8]; 4] {
    let mut rp = [[0i16; 8]; 4];
    for (seg, r) in rp.iter_mut().enumerate() {
        interpolate(seg, prev, cur, r);
        to_rp(r);
    }
    rp
}
