//! The regular-pulse excitation both ways share: the exponent and mantissa of a coded block
//! amplitude (clause 4.2.15), the inverse APCM quantisation (4.2.16) and the grid positioning
//! (4.2.17).

use super::ops::{add, asl, asr, mult_r, sub};
use super::tables::FAC;

/// Clause 4.2.15: the exponent and mantissa of the decoded version of xmaxc.
pub(super) fn exp_mant(xmaxc: i16) -> (i16, i16) {
    let mut exp = if xmaxc > 15 { (xmaxc >> 3) - 1 } else { 0 };
    let mut mant = xmaxc - (exp << 3);
    if mant == 0 {
        return (-4, 7);
    }
    while mant <= 7 {
        mant = (mant << 1) | 1;
        exp -= 1;
    }
    (exp, mant - 8)
}

/// Clause 4.2.16: xMp(0..12) from the coded xMc(0..12) and the block's exponent and mantissa.
pub(super) fn inverse_quantize(xmc: &[i16; 13], exp: i16, mant: i16, xmp: &mut [i16; 13]) {
    let temp1 = FAC[usize::from(mant as u8 & 7)];
    let temp2 = sub(6, exp);
    let temp3 = asl(1, sub(temp2, 1));
    for (out, &c) in xmp.iter_mut().zip(xmc) {
        // 3-bit unsigned back to 4-bit signed, then to 16 bits.
        let t = (((c & 7) << 1) - 7) << 12;
        let t = mult_r(temp1, t);
        let t = add(t, temp3);
        *out = asr(t, temp2);
    }
}

/// Clause 4.2.17: the 40-sample excitation with xMp on grid `mc` and zeros elsewhere.
pub(super) fn position(mc: i16, xmp: &[i16; 13], ep: &mut [i16]) {
    ep.fill(0);
    let mc = usize::from(mc as u8 & 3);
    for (slot, &v) in ep.iter_mut().skip(mc).step_by(3).zip(xmp) {
        *slot = v;
    }
}
