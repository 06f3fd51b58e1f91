//! Mix-minus conference kernel at the station rate.
//!
//! Members are slots in flat buffers (`slots × frame_len` samples), so one tick is two linear
//! passes: sum every talking member into an `i32` total, then give each talking member the total
//! minus its own contribution, saturated to `i16`. Everyone else hears the same saturated total,
//! computed once: members that are not talking cost nothing in either pass, which is what keeps
//! a hub of thousands of listeners cheap. Codecs and resampling happen at each leg's edge, outside this file.

/// Errors of the mixer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MixerError {
    /// A frame handed in does not have the conference's frame length.
    FrameLength { expected: usize, got: usize },
    /// A slot index that is not in use.
    NoSuchSlot(usize),
}

impl std::fmt::Display for MixerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MixerError::FrameLength { expected, got } => {
                write!(f, "frame has {got} samples, the conference runs {expected}")
            }
            MixerError::NoSuchSlot(i) => write!(f, "no conference member in slot {i}"),
        }
    }
}

impl std::error::Error for MixerError {}

/// One 20 ms mix-minus conference.
#[derive(Debug, Clone)]
pub struct Conference {
    frame_len: usize,
    mix_minus: bool,
    /// Slot i is in use.
    used: Vec<bool>,
    /// Slot i put audio in this tick.
    talking: Vec<bool>,
    input: Vec<i16>,
    output: Vec<i16>,
    total: Vec<i32>,
    /// The saturated total: what every member hears who does not hear a mix-minus of its own.
    total_out: Vec<i16>,
    talkers: usize,
}

impl Conference {
    /// A conference mixing frames of `frame_len` samples (160 at 8 kHz, 320 at 16 kHz).
    pub fn new(frame_len: usize, mix_minus: bool) -> Self {
        Conference {
            frame_len,
            mix_minus,
            used: Vec::new(),
            talking: Vec::new(),
            input: Vec::new(),
            output: Vec::new(),
            total: vec![0; frame_len],
            total_out: vec![0; frame_len],
            talkers: 0,
        }
    }

    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    pub fn mix_minus(&self) -> bool {
        self.mix_minus
    }

    /// Switch between mix-minus and full mix; takes effect at the next `mix`.
    pub fn set_mix_minus(&mut self, on: bool) {
        self.mix_minus = on;
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.used.iter().filter(|u| **u).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add a member; returns its slot. Freed slots are reused so buffers stop growing.
    pub fn add(&mut self) -> usize {
        if let Some(i) = self.used.iter().position(|u| !u) {
            if let Some(u) = self.used.get_mut(i) {
                *u = true;
            }
            return i;
        }
        self.used.push(true);
        self.talking.push(false);
        self.input.resize(self.input.len() + self.frame_len, 0);
        self.output.resize(self.output.len() + self.frame_len, 0);
        self.used.len() - 1
    }

    /// Remove a member. Its slot is silent from now on.
    pub fn remove(&mut self, slot: usize) -> Result<(), MixerError> {
        self.check(slot)?;
        if let Some(u) = self.used.get_mut(slot) {
            *u = false;
        }
        if let Some(t) = self.talking.get_mut(slot) {
            *t = false;
        }
        Ok(())
    }

    fn check(&self, slot: usize) -> Result<(), MixerError> {
        if self.used.get(slot).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(MixerError::NoSuchSlot(slot))
        }
    }

    fn range(&self, slot: usize) -> std::ops::Range<usize> {
        slot * self.frame_len..(slot + 1) * self.frame_len
    }

    /// Start a tick: nobody is talking until `put` says so.
    pub fn begin_tick(&mut self) {
        self.talking.iter_mut().for_each(|t| *t = false);
    }

    /// This tick's audio of a member (station rate, `frame_len` samples).
    pub fn put(&mut self, slot: usize, frame: &[i16]) -> Result<(), MixerError> {
        self.check(slot)?;
        if frame.len() != self.frame_len {
            return Err(MixerError::FrameLength {
                expected: self.frame_len,
                got: frame.len(),
            });
        }
        let r = self.range(slot);
        if let Some(dst) = self.input.get_mut(r) {
            dst.copy_from_slice(frame);
        }
        if let Some(t) = self.talking.get_mut(slot) {
            *t = true;
        }
        Ok(())
    }

    /// The input buffer of a member, to decode into directly (then call `mark_talking`).
    pub fn input_mut(&mut self, slot: usize) -> Result<&mut [i16], MixerError> {
        self.check(slot)?;
        let r = self.range(slot);
        self.input.get_mut(r).ok_or(MixerError::NoSuchSlot(slot))
    }

    /// Mark a member as talking this tick after filling `input_mut`.
    pub fn mark_talking(&mut self, slot: usize) -> Result<(), MixerError> {
        self.check(slot)?;
        if let Some(t) = self.talking.get_mut(slot) {
            *t = true;
        }
        Ok(())
    }

    /// Mix this tick: afterwards `output(slot)` holds what each member hears.
    pub fn mix(&mut self) {
        let n = self.frame_len;
        self.total.iter_mut().for_each(|t| *t = 0);
        self.talkers = 0;
        for (slot, talking) in self.talking.iter().enumerate() {
            if !*talking {
                continue;
            }
            self.talkers += 1;
            if let Some(src) = self.input.get(slot * n..(slot + 1) * n) {
                for (t, s) in self.total.iter_mut().zip(src) {
                    *t += i32::from(*s);
                }
            }
        }
        for (o, t) in self.total_out.iter_mut().zip(&self.total) {
            *o = saturate(*t);
        }
        if !self.mix_minus {
            return;
        }
        for (slot, talking) in self.talking.iter().enumerate() {
            if !*talking {
                continue;
            }
            let r = slot * n..(slot + 1) * n;
            let (Some(dst), Some(src)) = (self.output.get_mut(r.clone()), self.input.get(r)) else {
                continue;
            };
            for ((o, t), s) in dst.iter_mut().zip(&self.total).zip(src) {
                *o = saturate(*t - i32::from(*s));
            }
        }
    }

    /// What a member hears after `mix`.
    pub fn output(&self, slot: usize) -> Result<&[i16], MixerError> {
        self.check(slot)?;
        if self.hears_total(slot) {
            return Ok(&self.total_out);
        }
        let r = self.range(slot);
        self.output.get(r).ok_or(MixerError::NoSuchSlot(slot))
    }

    /// Whether a member hears the plain total of the last mix (it did not talk, or the
    /// conference is a full mix): every such member hears exactly the same samples.
    pub fn hears_total(&self, slot: usize) -> bool {
        !(self.mix_minus && self.talking.get(slot).copied().unwrap_or(false))
    }

    /// Whether a member hears anybody this tick (someone other than itself talked, or anyone
    /// at all under a full mix). A leg with nothing to hear sends nothing.
    pub fn hears_audio(&self, slot: usize) -> bool {
        let own = self.talking.get(slot).copied().unwrap_or(false);
        if self.mix_minus {
            self.talkers > usize::from(own)
        } else {
            self.talkers > 0
        }
    }

    /// Members talking in the last mixed tick.
    pub fn talkers(&self) -> usize {
        self.talkers
    }

    /// Bytes held by the buffers (for the no-growth test).
    pub fn capacity_samples(&self) -> usize {
        self.input.capacity()
            + self.output.capacity()
            + self.total.capacity()
            + self.total_out.capacity()
    }
}

#[inline]
fn saturate(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(v: i16, n: usize) -> Vec<i16> {
        vec![v; n]
    }

    /// A conference of two members, its first tick begun.
    fn two_members(mix_minus: bool) -> (Conference, usize, usize) {
        let mut c = Conference::new(2, mix_minus);
        let (a, b) = (c.add(), c.add());
        c.begin_tick();
        (c, a, b)
    }

    #[test]
    fn each_member_hears_everyone_but_itself() {
        let mut c = Conference::new(4, true);
        let (a, b, d) = (c.add(), c.add(), c.add());
        c.begin_tick();
        c.put(a, &frame(100, 4)).expect("put");
        c.put(b, &frame(20, 4)).expect("put");
        c.mix();
        assert_eq!(c.output(a), Ok(&[20i16; 4][..]));
        assert_eq!(c.output(b), Ok(&[100i16; 4][..]));
        assert_eq!(c.output(d), Ok(&[120i16; 4][..]));
        assert!(c.hears_audio(a) && c.hears_audio(b) && c.hears_audio(d));
    }

    #[test]
    fn full_mix_includes_self() {
        let (mut c, a, b) = two_members(false);
        c.put(a, &[1, 2]).expect("put");
        c.put(b, &[10, 20]).expect("put");
        c.mix();
        assert_eq!(c.output(a), Ok(&[11i16, 22][..]));
        c.set_mix_minus(true);
        c.mix();
        assert_eq!(c.output(a), Ok(&[10i16, 20][..]));
    }

    #[test]
    fn a_lone_talker_hears_nothing_under_mix_minus() {
        let mut c = Conference::new(3, true);
        let (a, b) = (c.add(), c.add());
        c.begin_tick();
        c.put(a, &[5, 5, 5]).expect("put");
        c.mix();
        assert!(!c.hears_audio(a));
        assert!(c.hears_audio(b));
        assert_eq!(c.output(a), Ok(&[0i16; 3][..]));
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let mut c = Conference::new(1, true);
        let (a, b, d) = (c.add(), c.add(), c.add());
        c.begin_tick();
        c.put(a, &[30000]).expect("put");
        c.put(b, &[30000]).expect("put");
        c.put(d, &[-30000]).expect("put");
        c.mix();
        assert_eq!(c.output(d), Ok(&[i16::MAX][..]));
        c.begin_tick();
        c.put(a, &[-30000]).expect("put");
        c.put(b, &[-30000]).expect("put");
        c.mix();
        assert_eq!(c.output(d), Ok(&[i16::MIN][..]));
    }

    #[test]
    fn silent_ticks_and_removed_members() {
        let (mut c, a, b) = two_members(true);
        c.put(a, &[7, 7]).expect("put");
        c.mix();
        c.begin_tick(); // a stopped talking
        c.mix();
        assert_eq!(c.output(b), Ok(&[0i16, 0][..]));
        assert!(!c.hears_audio(b));
        assert_eq!(c.remove(a), Ok(()));
        assert_eq!(c.put(a, &[1, 1]), Err(MixerError::NoSuchSlot(a)));
        assert_eq!(c.add(), a, "freed slot is reused");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn wrong_frame_length_is_an_error() {
        let mut c = Conference::new(160, true);
        let a = c.add();
        assert_eq!(
            c.put(a, &[0; 320]),
            Err(MixerError::FrameLength {
                expected: 160,
                got: 320
            })
        );
        assert_eq!(c.output(9), Err(MixerError::NoSuchSlot(9)));
    }

    #[test]
    fn no_growth_over_many_ticks() {
        let mut c = Conference::new(320, true);
        let slots: Vec<usize> = (0..8).map(|_| c.add()).collect();
        let cap = c.capacity_samples();
        let f = frame(3, 320);
        for i in 0..100_000usize {
            c.begin_tick();
            for s in &slots[..(i % 8)] {
                c.put(*s, &f).expect("put");
            }
            c.mix();
        }
        assert_eq!(c.capacity_samples(), cap);
    }

    proptest! {
        #[test]
        fn matches_a_reference_mix(
            frames in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(any::<i16>(), 8)), 1..12),
            mix_minus in any::<bool>(),
        ) {
            let mut c = Conference::new(8, mix_minus);
            let slots: Vec<usize> = frames.iter().map(|_| c.add()).collect();
            c.begin_tick();
            for (s, f) in slots.iter().zip(&frames) {
                if let Some(f) = f {
                    c.put(*s, f).expect("put");
                }
            }
            c.mix();
            for (i, s) in slots.iter().enumerate() {
                for k in 0..8 {
                    let mut sum: i64 = 0;
                    for (j, f) in frames.iter().enumerate() {
                        if let Some(f) = f {
                            if !(mix_minus && i == j) {
                                sum += i64::from(f[k]);
                            }
                        }
                    }
                    let want = sum.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16;
                    prop_assert_eq!(c.output(*s).map(|o| o[k]), Ok(want));
                }
            }
        }
    }
}
