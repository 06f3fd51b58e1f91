//! The FIR loops every resampler runs: many outputs at once, one tap at a time.
//!
//! Each loop keeps [`BLOCK`] accumulators in registers and adds one tap's products to all of
//! them, so it vectorises across outputs. Every output gets its terms added in the same order
//! whichever block it falls in, so results do not depend on how a stream was split into calls.
//! The loops are compiled twice, portable and AVX2 (chosen at run time); there is no FMA, so
//! each output is rounded the same way on every CPU.

/// Outputs computed together; their accumulators stay in registers across the taps.
pub const BLOCK: usize = 32;

/// `n` rounded up to whole blocks: the length to pad a call's accumulators to.
pub fn round_up_block(n: usize) -> usize {
    n.div_ceil(BLOCK).saturating_mul(BLOCK)
}

/// `buf[start..start + BLOCK]` as an array reference (None only if the caller mis-sized `buf`).
#[inline(always)]
fn window(buf: &[f32], start: usize) -> Option<&[f32; BLOCK]> {
    buf.get(start..start + BLOCK)?.try_into().ok()
}

/// `acc[j] += Σ_i taps[i] · (a[j + k - 1 - i] + b[j + i])` for every j.
///
/// `acc.len()` must be a multiple of `BLOCK`, and `a`, `b` hold at least `acc.len() + k - 1`
/// samples. Each output gets its terms added in the same order whatever block it falls in.
pub fn fir_pair(a: &[f32], b: &[f32], taps: &[f32], k: usize, acc: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: calling a `#[target_feature(enable = "avx2")]` function is sound exactly when
        // the CPU supports AVX2, which the runtime check above has just established. The
        // function body is safe code.
        unsafe { x86::fir_pair_avx2(a, b, taps, k, acc) };
        return;
    }
    fir_pair_portable(a, b, taps, k, acc);
}

/// `acc[j] += Σ_i taps[i] · x[j + i]` for every j (`x` holds `acc.len() + taps.len() - 1`).
pub fn fir_dot(x: &[f32], taps: &[f32], acc: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: as in `fir_pair`: AVX2 support was established by the runtime check above,
        // and the function body is safe code.
        unsafe { x86::fir_dot_avx2(x, taps, acc) };
        return;
    }
    fir_dot_portable(x, taps, acc);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// The same loops compiled for 256-bit vectors. No FMA: each output is rounded exactly as
    /// on the portable path, so results do not depend on the CPU.
    #[target_feature(enable = "avx2")]
    pub(super) fn fir_pair_avx2(a: &[f32], b: &[f32], taps: &[f32], k: usize, acc: &mut [f32]) {
        super::fir_pair_portable(a, b, taps, k, acc);
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn fir_dot_avx2(x: &[f32], taps: &[f32], acc: &mut [f32]) {
        super::fir_dot_portable(x, taps, acc);
    }
}

#[inline(always)]
fn fir_pair_portable(a: &[f32], b: &[f32], taps: &[f32], k: usize, acc: &mut [f32]) {
    for (blk, out) in acc.chunks_exact_mut(BLOCK).enumerate() {
        let m0 = blk * BLOCK;
        let mut s = [0f32; BLOCK];
        s.copy_from_slice(out);
        for (i, &g) in taps.iter().enumerate() {
            let lo = window(a, (m0 + k).wrapping_sub(1 + i));
            let hi = window(b, m0 + i);
            if let (Some(lo), Some(hi)) = (lo, hi) {
                for j in 0..BLOCK {
                    s[j] += g * (lo[j] + hi[j]);
                }
            }
        }
        out.copy_from_slice(&s);
    }
}

#[inline(always)]
fn fir_dot_portable(x: &[f32], taps: &[f32], acc: &mut [f32]) {
    for (blk, out) in acc.chunks_exact_mut(BLOCK).enumerate() {
        let m0 = blk * BLOCK;
        let mut s = [0f32; BLOCK];
        s.copy_from_slice(out);
        for (i, &g) in taps.iter().enumerate() {
            if let Some(w) = window(x, m0 + i) {
                for j in 0..BLOCK {
                    s[j] += g * w[j];
                }
            }
        }
        out.copy_from_slice(&s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| ((i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 16) as i16) as f32)
            .collect()
    }

    #[test]
    fn the_loops_compute_their_sums() {
        for (outputs, k) in [(1, 1), (5, 17), (32, 40), (70, 48), (100, 24)] {
            let padded = round_up_block(outputs);
            assert!(padded >= outputs && padded % BLOCK == 0);
            let taps: Vec<f32> = signal(k, 7).iter().map(|v| v / 32768.0).collect();
            let a = signal(padded + k - 1, 1);
            let b = signal(padded + k - 1, 2);
            let mut acc = vec![1.0f32; padded];
            fir_pair(&a, &b, &taps, k, &mut acc);
            let mut dot = vec![0.0f32; padded];
            fir_dot(&a, &taps, &mut dot);
            for j in 0..padded {
                let pair: f64 = 1.0
                    + (0..k)
                        .map(|i| f64::from(taps[i]) * f64::from(a[j + k - 1 - i] + b[j + i]))
                        .sum::<f64>();
                let want: f64 = (0..k)
                    .map(|i| f64::from(taps[i]) * f64::from(a[j + i]))
                    .sum();
                assert!(
                    (f64::from(acc[j]) - pair).abs() <= 1e-3 * (1.0 + pair.abs()),
                    "{j}"
                );
                assert!(
                    (f64::from(dot[j]) - want).abs() <= 1e-3 * (1.0 + want.abs()),
                    "{j}"
                );
            }
        }
    }
}
