//! The RPE-LTP encoder (clause 4.2): preprocessing, LPC analysis, short-term analysis
//! filtering, long-term prediction and RPE encoding of one 160-sample frame.

use super::lar;
use super::ops::{abs, add, div, mult, mult_r, norm, sub};
use super::rpe;
use super::tables::{DLB, H, LAR_A, LAR_B, LAR_MAC, LAR_MIC, NRFAC, QLB};
use super::{Params, FRAME_SAMPLES};

/// An encoder's memory between frames.
#[derive(Debug, Clone)]
pub struct Encoder {
    // Clause 4.2.2: offset compensation.
    z1: i16,
    l_z2: i32,
    // Clause 4.2.3: preemphasis.
    mp: i16,
    // Clause 4.2.10: the short-term analysis lattice.
    u: [i16; 8],
    // Clause 4.2.8: the previous frame's decoded LARs.
    larpp_prev: [i16; 8],
    // Clause 4.2.11: the reconstructed short-term residual, 120 past samples then this frame.
    dp: [i16; 280],
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            z1: 0,
            l_z2: 0,
            mp: 0,
            u: [0; 8],
            larpp_prev: [0; 8],
            dp: [0; 280],
        }
    }
}

impl Encoder {
    /// Encode one frame of 160 samples into its parameters.
    pub fn encode_params(&mut self, pcm: &[i16; FRAME_SAMPLES]) -> Params {
        let mut p = Params::default();
        let mut so = [0i16; FRAME_SAMPLES];
        self.preprocess(pcm, &mut so);
        lpc_analysis(&mut so, &mut p.larc);
        self.short_term_analysis(&p.larc, &mut so);
        let mut e = [0i16; 50];
        for k in 0..4 {
            let d: &[i16; 40] = sub_block(&so, k);
            let base = 120 + 40 * k;
            let (nc, bc) = ltp_parameters(d, &self.dp, base);
            let mut dpp = [0i16; 40];
            let b = QLB[usize::from(bc as u8 & 3)];
            for i in 0..40 {
                dpp[i] = mult_r(b, self.dp[base + i - nc as usize]);
                e[5 + i] = sub(d[i], dpp[i]);
            }
            p.nc[k] = nc;
            p.bc[k] = bc;
            let (mc, xmaxc) = rpe_encode(&mut e, &mut p.xmc[k]);
            p.mc[k] = mc;
            p.xmaxc[k] = xmaxc;
            for i in 0..40 {
                self.dp[base + i] = add(e[5 + i], dpp[i]);
            }
        }
        self.dp.copy_within(160.., 0);
        p
    }

    /// Clauses 4.2.1 to 4.2.3: downscaling, offset compensation and preemphasis.
    fn preprocess(&mut self, s: &[i16; FRAME_SAMPLES], so: &mut [i16; FRAME_SAMPLES]) {
        let (mut z1, mut l_z2, mut mp) = (self.z1, self.l_z2, self.mp);
        for (out, &x) in so.iter_mut().zip(s) {
            let s0 = (x >> 3) << 2;
            // 4.2.2: a high-pass (pole at 32735 / 32768) kept as a 31-bit state split into
            // its upper word and lower 15 bits; both are stored into words as the reference
            // does, wrapping on a large state.
            let s1 = s0.wrapping_sub(z1);
            z1 = s0;
            let mut l_s2 = i32::from(s1) << 15;
            let msp = (l_z2 >> 15) as i16;
            let lsp = l_z2.wrapping_sub(i32::from(msp) << 15) as i16;
            l_s2 += i32::from(mult_r(lsp, 32735));
            l_z2 = (i32::from(msp) * 32735).saturating_add(l_s2);
            let l_temp = l_z2.saturating_add(16384);
            // 4.2.3
            let msp = mult_r(mp, -28180);
            mp = (l_temp >> 15) as i16;
            *out = add(mp, msp);
        }
        (self.z1, self.l_z2, self.mp) = (z1, l_z2, mp);
    }

    /// Clauses 4.2.8 to 4.2.10: the short-term residual d(0..159) in place of s.
    fn short_term_analysis(&mut self, larc: &[i16; 8], s: &mut [i16; FRAME_SAMPLES]) {
        let mut larpp = [0i16; 8];
        lar::decode(larc, &mut larpp);
        let rp = lar::segment_rp(&self.larpp_prev, &larpp);
        self.larpp_prev = larpp;
        let u = &mut self.u;
        for (&(from, to), rp) in lar::SEGMENTS.iter().zip(&rp) {
            for x in s.iter_mut().take(to).skip(from) {
                let mut di = *x;
                let mut sav = di;
                for i in 0..8 {
                    let ui = u[i];
                    u[i] = sav;
                    sav = add(ui, mult_r(rp[i], di));
                    di = add(di, mult_r(rp[i], ui));
                }
                *x = di;
            }
        }
    }
}

/// Sub-block `k` (40 samples) of a frame.
fn sub_block(s: &[i16; FRAME_SAMPLES], k: usize) -> &[i16; 40] {
    let mut blocks = s.chunks_exact(40).map(|c| <&[i16; 40]>::try_from(c).ok());
    blocks.nth(k).flatten().unwrap_or(&[0; 40])
}

/// Clauses 4.2.4 to 4.2.7: the coded log-area ratios of a frame (s is rescaled in place, as
/// the reference leaves it).
fn lpc_analysis(s: &mut [i16; FRAME_SAMPLES], larc: &mut [i16; 8]) {
    let acf = autocorrelation(s);
    let mut r = reflection_coefficients(&acf);
    // 4.2.6: log-area ratios by a piecewise-linear approximation.
    for v in r.iter_mut() {
        let t = abs(*v);
        let t = if t < 22118 {
            t >> 1
        } else if t < 31130 {
            t - 11059
        } else {
            (t - 26112) << 2
        };
        *v = if *v < 0 { -t } else { t };
    }
    // 4.2.7: quantisation and coding.
    for i in 0..8 {
        let t = mult(LAR_A[i], r[i]);
        let t = add(t, LAR_B[i]);
        let t = add(t, 256) >> 9;
        larc[i] = if t > LAR_MAC[i] {
            LAR_MAC[i] - LAR_MIC[i]
        } else if t < LAR_MIC[i] {
            0
        } else {
            t - LAR_MIC[i]
        };
    }
}

/// Clause 4.2.4: ACF(0..8) of the frame after dynamic scaling; the samples are rescaled back
/// in place, keeping the low bits the scaling dropped as zeros (the reference does too, and
/// the short-term filter then runs on those samples).
fn autocorrelation(s: &mut [i16; FRAME_SAMPLES]) -> [i32; 9] {
    let smax = s.iter().map(|&x| abs(x)).max().unwrap_or(0);
    let scalauto = if smax == 0 {
        0
    } else {
        4 - norm(i32::from(smax) << 16)
    };
    if scalauto > 0 {
        let factor = 16384 >> (scalauto - 1);
        for x in s.iter_mut() {
            *x = mult_r(*x, factor);
        }
    }
    let mut acf = [0i32; 9];
    for (k, a) in acf.iter_mut().enumerate() {
        let sum: i32 = s
            .iter()
            .skip(k)
            .zip(s.iter())
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        *a = sum << 1;
    }
    if scalauto > 0 {
        for x in s.iter_mut() {
            *x = (i32::from(*x) << scalauto) as i16;
        }
    }
    acf
}

/// Clause 4.2.5: the reflection coefficients r(1..8) by Schur's recursion in 16 bits.
fn reflection_coefficients(l_acf: &[i32; 9]) -> [i16; 8] {
    let mut r = [0i16; 8];
    if l_acf[0] == 0 {
        return r;
    }
    let temp = norm(l_acf[0]);
    let acf: [i16; 9] = std::array::from_fn(|i| ((l_acf[i] << temp) >> 16) as i16);
    let mut p = acf;
    let mut k = acf;
    for n in 1..=8 {
        let t = abs(p[1]);
        if p[0] < t {
            // The remaining coefficients stay zero.
            return r;
        }
        let mut rn = div(t, p[0]);
        if p[1] > 0 {
            rn = -rn;
        }
        r[n - 1] = rn;
        if n == 8 {
            break;
        }
        p[0] = add(p[0], mult_r(p[1], rn));
        for m in 1..=8 - n {
            p[m] = add(p[m + 1], mult_r(k[m], rn));
            k[m] = add(k[m], mult_r(p[m + 1], rn));
        }
    }
    r
}

/// Clause 4.2.11: the LTP lag Nc (40..120) and coded gain bc (0..3) of sub-block `d`, against
/// the reconstructed residual `dp` before `base`.
fn ltp_parameters(d: &[i16; 40], dp: &[i16; 280], base: usize) -> (i16, i16) {
    let dmax = d.iter().map(|&x| abs(x)).max().unwrap_or(0);
    let temp = if dmax == 0 {
        0
    } else {
        norm(i32::from(dmax) << 16)
    };
    let scal = if temp > 6 { 0 } else { 6 - temp };
    let wt: [i16; 40] = std::array::from_fn(|k| d[k] >> scal);
    // The search: every product fits (|wt| < 2^9, |dp| <= 2^15, 40 terms < 2^30). Kept as
    // 16-bit products summed in 32 bits, the form SIMD multiply-add instructions take.
    let mut l_max = 0i32;
    let mut nc = 40usize;
    for lambda in 40..=120usize {
        let l_result = match dp.get(base - lambda..base - lambda + 40) {
            Some(past) => dot40(&wt, past),
            None => 0,
        };
        if l_result > l_max {
            nc = lambda;
            l_max = l_result;
        }
    }
    let l_max = (l_max << 1) >> (6 - scal);
    let mut l_power = 0i32;
    for &x in dp.iter().skip(base - nc).take(40) {
        let t = i32::from(x >> 3);
        l_power += t * t;
    }
    l_power <<= 1;
    let nc = nc as i16;
    if l_max <= 0 {
        return (nc, 0);
    }
    if l_max >= l_power {
        return (nc, 3);
    }
    let temp = norm(l_power);
    let r = ((l_max << temp) >> 16) as i16;
    let s = ((l_power << temp) >> 16) as i16;
    let bc = (0..3).find(|&bc| r <= mult(s, DLB[bc])).unwrap_or(3);
    (nc, bc as i16)
}

/// The cross-correlation of one lag: 40 products of 16-bit samples, summed in 32 bits.
#[inline(always)]
fn dot40(wt: &[i16; 40], past: &[i16]) -> i32 {
    wt.iter()
        .zip(past)
        .map(|(&w, &x)| i32::from(w) * i32::from(x))
        .sum()
}

/// Clauses 4.2.13 to 4.2.17: the RPE parameters of the long-term residual e(5..45) (with
/// e(0..5) and e(45..50) zero); e(5..45) becomes the reconstructed excitation.
fn rpe_encode(e: &mut [i16; 50], xmc: &mut [i16; 13]) -> (i16, i16) {
    // 4.2.13: the weighting filter.
    let mut x = [0i16; 40];
    for (k, out) in x.iter_mut().enumerate() {
        let l: i32 = H
            .iter()
            .zip(&e[k..k + 11])
            .map(|(&h, &v)| h * i32::from(v))
            .sum::<i32>()
            + 4096;
        *out = (l >> 13).clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
    }
    // 4.2.14: the grid with the most energy (the first on a tie).
    let mut em = 0i32;
    let mut mc = 0usize;
    for m in 0..4 {
        let energy: i32 = x
            .iter()
            .skip(m)
            .step_by(3)
            .take(13)
            .map(|&v| {
                let t = i32::from(v >> 2);
                t * t
            })
            .sum::<i32>()
            << 1;
        if m == 0 || energy > em {
            mc = m;
            em = energy;
        }
    }
    let xm: [i16; 13] = std::array::from_fn(|i| x[mc + 3 * i]);
    // 4.2.15: APCM quantisation of the block maximum and the 13 pulses.
    let xmax = xm.iter().map(|&v| abs(v)).max().unwrap_or(0);
    let mut exp = 0i16;
    let mut temp = xmax >> 9;
    let mut itest = false;
    for _ in 0..6 {
        itest |= temp <= 0;
        temp >>= 1;
        if !itest {
            exp += 1;
        }
    }
    let xmaxc = add(xmax >> (exp + 5), exp << 3);
    let (exp, mant) = rpe::exp_mant(xmaxc);
    let temp1 = 6 - exp;
    let temp2 = NRFAC[usize::from(mant as u8 & 7)];
    for (c, &v) in xmc.iter_mut().zip(&xm) {
        let t = (i32::from(v) << temp1) as i16;
        let t = mult(t, temp2) >> 12;
        *c = t + 4;
    }
    // 4.2.16 and 4.2.17: what the decoder will rebuild, for the next sub-blocks' prediction.
    let mut xmp = [0i16; 13];
    rpe::inverse_quantize(xmc, exp, mant, &mut xmp);
    rpe::position(mc as i16, &xmp, &mut e[5..45]);
    (mc as i16, xmaxc)
}
