//! The fixed-point basic operators of GSM 06.10 (clause 5.1, "Fixed point implementation of
//! the RPE-LTP coder"): 16-bit words, 32-bit long words, saturation where the recommendation
//! saturates and plain two's-complement truncation where a result is stored into a word.
//!
//! Bit-exactness depends on both: the reference stores some long results into words without
//! saturating (the preprocessing's `msp`, the autocorrelation's rescaling), and those wraps
//! are reproduced here with `as i16`.

pub(super) const MIN_WORD: i16 = i16::MIN;
pub(super) const MAX_WORD: i16 = i16::MAX;

/// `add`: saturated 16-bit sum.
#[inline(always)]
pub(super) fn add(a: i16, b: i16) -> i16 {
    a.saturating_add(b)
}

/// `sub`: saturated 16-bit difference.
#[inline(always)]
pub(super) fn sub(a: i16, b: i16) -> i16 {
    a.saturating_sub(b)
}

/// `mult`: Q15 product, truncated.
///
/// The recommendation saturates MIN_WORD * MIN_WORD; no call here can pass it (one operand is
/// always a positive table constant), so the check is left out of the inner loops.
#[inline(always)]
pub(super) fn mult(a: i16, b: i16) -> i16 {
    debug_assert!(a != MIN_WORD || b != MIN_WORD);
    ((i32::from(a) * i32::from(b)) >> 15) as i16
}

/// `mult_r`: Q15 product, rounded.
///
/// As for [`mult`], MIN_WORD * MIN_WORD never reaches it: one operand is always a table
/// constant, a state scaled by a constant, or a reflection coefficient, which clause 4.2.9.2
/// keeps within -32767..=32767 (and Schur's recursion within -32767..=32767 too).
#[inline(always)]
pub(super) fn mult_r(a: i16, b: i16) -> i16 {
    debug_assert!(a != MIN_WORD || b != MIN_WORD);
    ((i32::from(a) * i32::from(b) + 16384) >> 15) as i16
}

/// `abs`: |a|, with |MIN_WORD| saturated to MAX_WORD.
#[inline(always)]
pub(super) fn abs(a: i16) -> i16 {
    if a == MIN_WORD {
        MAX_WORD
    } else {
        a.abs()
    }
}

/// `norm`: the left shift that normalises a non-zero long word (its sign bit and the next
/// differ afterwards); values at or below -2^30 are already normalised.
#[inline(always)]
pub(super) fn norm(a: i32) -> i16 {
    let a = if a < 0 {
        if a <= -1_073_741_824 {
            return 0;
        }
        !a
    } else {
        a
    };
    (a.leading_zeros() as i16) - 1
}

/// `div`: num / denum in Q15 for 0 <= num <= denum, by 15 steps of restoring division.
pub(super) fn div(num: i16, denum: i16) -> i16 {
    if num == 0 {
        return 0;
    }
    let (mut l_num, l_denum) = (i32::from(num), i32::from(denum));
    let mut q: i16 = 0;
    for _ in 0..15 {
        q <<= 1;
        l_num <<= 1;
        if l_num >= l_denum {
            l_num -= l_denum;
            q += 1;
        }
    }
    q
}

/// Arithmetic shift left by `n` (right for negative `n`), stored into a word.
#[inline(always)]
pub(super) fn asl(a: i16, n: i16) -> i16 {
    if n >= 16 {
        0
    } else if n <= -16 {
        -i16::from(a < 0)
    } else if n < 0 {
        asr(a, -n)
    } else {
        (i32::from(a) << n) as i16
    }
}

/// Arithmetic shift right by `n` (left for negative `n`), stored into a word.
#[inline(always)]
pub(super) fn asr(a: i16, n: i16) -> i16 {
    if n >= 16 {
        -i16::from(a < 0)
    } else if n <= -16 {
        0
    } else if n < 0 {
        (i32::from(a) << -n) as i16
    } else {
        a >> n
    }
}
