//! The RPE-LTP decoder (clause 4.3): RPE decoding, long-term synthesis, short-term synthesis
//! filtering and postprocessing of one frame.

use super::lar;
use super::ops::{add, mult_r, sub};
use super::rpe;
use super::tables::QLB;
use super::{Params, FRAME_SAMPLES};

/// A decoder's memory between frames.
#[derive(Debug, Clone)]
pub struct Decoder {
    // Clause 4.3.2: the reconstructed short-term residual, 120 past samples then 40 new.
    drp: [i16; 160],
    // The last valid LTP lag, used when a frame carries one outside 40..120.
    nrp: i16,
    // Clause 4.3.1: the previous frame's decoded LARs.
    larpp_prev: [i16; 8],
    // Clause 4.3.4: the short-term synthesis lattice.
    v: [i16; 9],
    // Clause 4.3.5: deemphasis.
    msr: i16,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            drp: [0; 160],
            nrp: 40,
            larpp_prev: [0; 8],
            v: [0; 9],
            msr: 0,
        }
    }
}

impl Decoder {
    /// Decode one frame's parameters into 160 samples.
    pub fn decode_params(&mut self, p: &Params, out: &mut [i16; FRAME_SAMPLES]) {
        let mut wt = [0i16; FRAME_SAMPLES];
        for (k, block) in wt.chunks_exact_mut(40).enumerate() {
            // 4.3.1 (RPE part): the excitation of the sub-block.
            let (exp, mant) = rpe::exp_mant(p.xmaxc[k]);
            let mut xmp = [0i16; 13];
            rpe::inverse_quantize(&p.xmc[k], exp, mant, &mut xmp);
            let mut erp = [0i16; 40];
            rpe::position(p.mc[k], &xmp, &mut erp);
            // 4.3.2: long-term synthesis.
            let nr = if (40..=120).contains(&p.nc[k]) {
                p.nc[k]
            } else {
                self.nrp
            };
            self.nrp = nr;
            let brp = QLB[usize::from(p.bc[k] as u8 & 3)];
            let nr = nr as usize;
            for (i, &e) in erp.iter().enumerate() {
                let past = self.drp[120 + i - nr];
                self.drp[120 + i] = add(e, mult_r(brp, past));
            }
            block.copy_from_slice(&self.drp[120..]);
            self.drp.copy_within(40.., 0);
        }
        self.short_term_synthesis(&p.larc, &wt, out);
        // 4.3.5 to 4.3.7: deemphasis, truncation and upscaling.
        let mut msr = self.msr;
        for s in out.iter_mut() {
            msr = add(*s, mult_r(msr, 28180));
            *s = add(msr, msr) & !7;
        }
        self.msr = msr;
    }

    /// Clauses 4.3.3 and 4.3.4: the short-term synthesis lattice over the four segments.
    fn short_term_synthesis(
        &mut self,
        larc: &[i16; 8],
        wt: &[i16; FRAME_SAMPLES],
        sr: &mut [i16; FRAME_SAMPLES],
    ) {
        let mut larpp = [0i16; 8];
        lar::decode(larc, &mut larpp);
        let rrp = lar::segment_rp(&self.larpp_prev, &larpp);
        self.larpp_prev = larpp;
        let v = &mut self.v;
        for (&(from, to), rrp) in lar::SEGMENTS.iter().zip(&rrp) {
            for (out, &w) in sr[from..to].iter_mut().zip(&wt[from..to]) {
                let mut sri = w;
                for i in (0..8).rev() {
                    sri = sub(sri, mult_r(rrp[i], v[i]));
                    v[i + 1] = add(v[i], mult_r(rrp[i], sri));
                }
                v[0] = sri;
                *out = sri;
            }
        }
    }
}
