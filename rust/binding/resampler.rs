//! `node._core` streaming resampler classes: the halfband 8 <-> 16 kHz pair and the 48 kHz
//! converters of the sound card edge. All four are the same class around a different kernel.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::codec::with_bytes;
use crate::polyphase::{Decimator, Interpolator};
use crate::resample::{Downsampler, Resample, ResampleError, Upsampler};

/// `process(pcm)` of every resampler class: bytes-like in, a new `bytes` with the output.
pub(super) fn resample<'py>(
    py: Python<'py>,
    rs: &mut impl Resample,
    pcm: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(pcm, |pcm| {
        if pcm.len() % 2 != 0 {
            return Err(ResampleError::OddLength { len: pcm.len() }.into());
        }
        let n = rs.output_len(pcm.len() / 2).saturating_mul(2);
        PyBytes::new_with(py, n, |out| {
            rs.process_ne_bytes_into(pcm, out)?;
            Ok(())
        })
    })
}

/// One resampler class: its constructor, `process`, `reset` and the `delay` property
/// (documented by the strings given), an optional extra property of the kernel, and a repr
/// built from the kernel.
macro_rules! resampler_class {
    (
        $(#[$doc:meta])*
        $py:ident($inner:ident, $name:literal),
        new($($arg:ident: $arg_ty:ty),*) => $new:expr,
        $(getter: $getter:ident -> $getter_ty:ty,)?
        process: $process_doc:literal,
        reset: $reset_doc:literal,
        delay: $delay_doc:literal,
        repr: $repr:expr $(,)?
    ) => {
        $(#[$doc])*
        #[pyclass(name = $name, module = "node._core")]
        pub struct $py {
            inner: $inner,
        }

        #[pymethods]
        impl $py {
            #[new]
            fn new($($arg: $arg_ty),*) -> PyResult<Self> {
                Ok($py { inner: $new })
            }

            #[doc = $process_doc]
            fn process<'py>(
                &mut self,
                py: Python<'py>,
                pcm: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                resample(py, &mut self.inner, pcm)
            }

            #[doc = $reset_doc]
            fn reset(&mut self) {
                self.inner.reset();
            }

            #[doc = $delay_doc]
            #[getter]
            fn delay(&self) -> f64 {
                self.inner.delay()
            }

            $(
                #[getter]
                fn $getter(&self) -> $getter_ty {
                    self.inner.$getter()
                }
            )?

            fn __repr__(&self) -> String {
                let repr: fn(&$inner) -> String = $repr;
                repr(&self.inner)
            }
        }
    };
}

resampler_class!(
    /// Streaming 8 kHz -> 16 kHz resampler (halfband FIR, state kept between calls).
    PyUpsampler(Upsampler, "Upsampler"),
    new() => Upsampler::new(),
    process: "Resample native-endian 16-bit PCM at 8 kHz; returns twice as many samples at \
              16 kHz.",
    reset: "Forget the filter history.",
    delay: "Group delay in output (16 kHz) samples.",
    repr: |r| format!("Upsampler(8000 -> 16000, delay={})", r.delay()),
);

resampler_class!(
    /// Streaming 16 kHz -> 8 kHz resampler (halfband FIR, state kept between calls).
    PyDownsampler(Downsampler, "Downsampler"),
    new() => Downsampler::new(),
    process: "Resample native-endian 16-bit PCM at 16 kHz; returns half as many samples at 8 kHz\n\
              (an odd sample count keeps one sample for the next call).",
    reset: "Forget the filter history and any pending sample.",
    delay: "Group delay in output (8 kHz) samples.",
    repr: |r| format!("Downsampler(16000 -> 8000, delay={})", r.delay()),
);

resampler_class!(
    /// Streaming 48 kHz -> 8 kHz (factor 6) or -> 16 kHz (factor 3) decimator.
    PyDecimator(Decimator, "Decimator"),
    new(factor: u32) => Decimator::new(factor)?,
    getter: factor -> u32,
    process: "Native-endian 16-bit PCM at 48 kHz in, one sample per `factor` out (fewer than \
              `factor` trailing samples wait for the next call).",
    reset: "Forget the filter history and any waiting samples.",
    delay: "Group delay in output samples.",
    repr: |r| format!("Decimator(48000 -> {}, delay={})", 48000 / r.factor(), r.delay()),
);

resampler_class!(
    /// Streaming 8 kHz (factor 6) or 16 kHz (factor 3) -> 48 kHz interpolator.
    PyInterpolator(Interpolator, "Interpolator"),
    new(factor: u32) => Interpolator::new(factor)?,
    getter: factor -> u32,
    process: "Native-endian 16-bit PCM at 48000 / `factor` Hz in, `factor` times as many \
              samples out.",
    reset: "Forget the filter history.",
    delay: "Group delay in output (48 kHz) samples.",
    repr: |r| format!("Interpolator({} -> 48000, delay={})", 48000 / r.factor(), r.delay()),
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register!(
        m,
        classes: [PyUpsampler, PyDownsampler, PyDecimator, PyInterpolator],
        functions: []
    )
}
