//! `node._core.Conference`: one mix-minus conference tick per call, encoded frames in and out.
//!
//! A tick takes one encoded 20 ms frame per member (or `None` for a member who is not talking),
//! decodes each straight into the mixer's input slot, mixes at the codec's rate with
//! `crate::mixer::Conference`, and encodes what each member hears into a buffer kept between
//! ticks: a tick allocates nothing but the returned list and its `bytes`.
//! Members who hear the same mix (every listener that did not talk, or everybody under a full
//! mix) share one encoded `bytes` object, as Asterisk's softmix shares one encoded frame.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::codec::with_buffer;
use super::errors::MixerError as PyMixerError;
use crate::codec::Codec;
use crate::media::FRAME_MS;
use crate::mixer::{Conference, MixerError};

/// IAX2 call numbers are 15 bits, so no conference of the node has more members than this.
const MAX_MEMBERS: usize = 32_768;

/// Runs `f` on the bytes of a bytes-like object: `bytes` in place, other buffers copied once.
fn with_bytes<T>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<T>) -> PyResult<T> {
    with_buffer(obj, "bytes or None for a member's frame", f)
}

/// A mix-minus (or full-mix) conference of a fixed number of members sharing one codec.
#[pyclass(name = "Conference", module = "node._core")]
pub struct PyConference {
    inner: Conference,
    codec: Codec,
    /// The mixer slot of member i.
    slots: Vec<usize>,
    /// Wire bytes of one 20 ms frame.
    frame_bytes: usize,
    /// Member i put audio in the last tick (reused every tick).
    talking: Vec<bool>,
    /// What member i hears this tick (reused every tick).
    heard: Vec<Heard>,
    /// Encoded output of every member, `frame_bytes` each (reused every tick).
    encoded: Vec<u8>,
}

/// What a member hears in a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard {
    /// Nobody: the member gets None.
    Nothing,
    /// Everybody but itself: its own mix, encoded in its slot of `encoded`.
    Own,
    /// The full mix (it did not talk, or the conference is a full mix): one `bytes` shared by
    /// every such member.
    Shared,
}

impl PyConference {
    fn put(&mut self, member: usize, item: &Bound<'_, PyAny>) -> PyResult<()> {
        if item.is_none() {
            return Ok(());
        }
        let slot = self
            .slots
            .get(member)
            .copied()
            .ok_or(MixerError::NoSuchSlot(member))?;
        let (codec, want) = (self.codec, self.frame_bytes);
        let inner = &mut self.inner;
        with_bytes(item, |wire| {
            if wire.len() != want {
                return Err(PyMixerError::new_err(format!(
                    "member {member}: frame of {} bytes, the conference takes {want} ({:?}, {} ms)",
                    wire.len(),
                    codec,
                    FRAME_MS
                )));
            }
            codec.decode_into(wire, inner.input_mut(slot)?)?;
            Ok(())
        })?;
        self.inner.mark_talking(slot)?;
        if let Some(t) = self.talking.get_mut(member) {
            *t = true;
        }
        Ok(())
    }

    fn wrong_count(&self, got: usize) -> PyErr {
        PyMixerError::new_err(format!(
            "tick got {got} frames for a conference of {} members",
            self.slots.len()
        ))
    }
}

#[pymethods]
impl PyConference {
    /// `members` members exchanging 20 ms frames of `codec_format` (an IAX2 format bit: 0x4
    /// µ-law, 0x8 A-law, 0x40 slin, 0x8000 slin16), mixed at that codec's rate.
    #[new]
    #[pyo3(signature = (members, codec_format = 0x4, mix_minus = true))]
    fn new(members: usize, codec_format: u64, mix_minus: bool) -> PyResult<Self> {
        if members == 0 || members > MAX_MEMBERS {
            return Err(PyMixerError::new_err(format!(
                "a conference has 1 to {MAX_MEMBERS} members, not {members}"
            )));
        }
        let codec = Codec::from_format_bit(codec_format)
            .map_err(|e| PyMixerError::new_err(e.to_string()))?;
        let frame_len = codec.samples_per_ms() * FRAME_MS as usize;
        let mut inner = Conference::new(frame_len, mix_minus);
        let slots = (0..members).map(|_| inner.add()).collect();
        Ok(PyConference {
            inner,
            codec,
            slots,
            frame_bytes: codec.bytes_for_samples(frame_len),
            talking: vec![false; members],
            heard: vec![Heard::Nothing; members],
            encoded: vec![0; members * codec.bytes_for_samples(frame_len)],
        })
    }

    /// One tick: `frames[i]` is member i's encoded frame or None (not talking). Returns what
    /// each member hears, encoded, or None for a member who hears nobody. Raises MixerError
    /// (a ValueError) for a list of the wrong length or a frame of the wrong size; the tick is
    /// then abandoned and the next one starts clean.
    fn tick<'py>(
        &mut self,
        py: Python<'py>,
        frames: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = self.slots.len();
        self.inner.begin_tick();
        self.talking.iter_mut().for_each(|t| *t = false);
        if let Ok(list) = frames.cast::<PyList>() {
            if list.len() != n {
                return Err(self.wrong_count(list.len()));
            }
            for (i, item) in list.iter().enumerate() {
                self.put(i, &item)?;
            }
        } else {
            let mut count = 0;
            for item in frames.try_iter()? {
                let item = item?;
                if count >= n {
                    return Err(self.wrong_count(count + 1));
                }
                self.put(count, &item)?;
                count += 1;
            }
            if count != n {
                return Err(self.wrong_count(count));
            }
        }
        self.inner.mix();
        // Encode everything first into a buffer kept between ticks, then build the list in one
        // pass, created at its final size with its final items.
        let mix_minus = self.inner.mix_minus();
        let fb = self.frame_bytes;
        let mut shared: Option<usize> = None;
        for (i, (&slot, &talked)) in self.slots.iter().zip(&self.talking).enumerate() {
            let heard = if !self.inner.hears_audio(slot) {
                Heard::Nothing
            } else if mix_minus && talked {
                Heard::Own
            } else {
                Heard::Shared
            };
            if let Some(h) = self.heard.get_mut(i) {
                *h = heard;
            }
            // The shared mix is encoded once, in the slot of the first member who hears it.
            let encode = match heard {
                Heard::Nothing => false,
                Heard::Own => true,
                Heard::Shared => shared.is_none(),
            };
            if encode {
                if heard == Heard::Shared {
                    shared = Some(i);
                }
                let pcm = self.inner.output(slot)?;
                if let Some(out) = self.encoded.get_mut(i * fb..(i + 1) * fb) {
                    self.codec.encode_into(pcm, out)?;
                }
            }
        }
        let encoded = &self.encoded;
        let bytes_of = |i: usize| {
            PyBytes::new(py, encoded.get(i * fb..(i + 1) * fb).unwrap_or_default()).into_any()
        };
        let mut shared_bytes: Option<Bound<'py, PyAny>> = None;
        let items = self.heard.iter().enumerate().map(|(i, h)| match h {
            Heard::Nothing => py.None().into_bound(py),
            Heard::Own => bytes_of(i),
            Heard::Shared => shared_bytes
                .get_or_insert_with(|| bytes_of(shared.unwrap_or(i)))
                .clone(),
        });
        PyList::new(py, items)
    }

    /// Number of members.
    #[getter]
    fn members(&self) -> usize {
        self.slots.len()
    }

    /// The IAX2 format bit of the members' codec.
    #[getter]
    fn codec_format(&self) -> u64 {
        self.codec.format_bit()
    }

    /// The mixing rate: the codec's sample rate.
    #[getter]
    fn rate(&self) -> u32 {
        self.codec.rate()
    }

    /// Samples per 20 ms frame.
    #[getter]
    fn frame_len(&self) -> usize {
        self.inner.frame_len()
    }

    /// Wire bytes per 20 ms frame (what `tick` takes and returns per member).
    #[getter]
    fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// True: each member hears everyone but itself; False: everyone hears the full mix.
    #[getter]
    fn get_mix_minus(&self) -> bool {
        self.inner.mix_minus()
    }

    #[setter]
    fn set_mix_minus(&mut self, on: bool) {
        self.inner.set_mix_minus(on);
    }

    /// Members that talked in the last tick.
    #[getter]
    fn talkers(&self) -> usize {
        self.inner.talkers()
    }

    fn __repr__(&self) -> String {
        format!(
            "Conference(members={}, codec_format={:#x}, mix_minus={})",
            self.slots.len(),
            self.codec.format_bit(),
            if self.inner.mix_minus() {
                "True"
            } else {
                "False"
            }
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyConference>()?;
    Ok(())
}
