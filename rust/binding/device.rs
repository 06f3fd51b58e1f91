//! `node._core` sound card edge: the 48 kHz converters and the device port of the engine.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::codec::with_bytes;
use super::errors::{DeviceError as PyDeviceError, EngineError as PyEngineError};
use crate::device::DeviceError;
use crate::engine::{DeviceLink, LocalCounters};
use crate::level::{gain_db_valid, Reading};
use crate::polyphase::{Decimator, Interpolator};
use crate::resample::ResampleError;

impl From<DeviceError> for PyErr {
    fn from(e: DeviceError) -> PyErr {
        PyDeviceError::new_err(e.to_string())
    }
}

fn even(pcm: &[u8]) -> PyResult<()> {
    if pcm.len() % 2 == 0 {
        Ok(())
    } else {
        Err(ResampleError::OddLength { len: pcm.len() }.into())
    }
}

/// Streaming 48 kHz -> 8 kHz (factor 6) or -> 16 kHz (factor 3) decimator.
#[pyclass(name = "Decimator", module = "node._core")]
pub struct PyDecimator {
    inner: Decimator,
}

#[pymethods]
impl PyDecimator {
    #[new]
    fn new(factor: u32) -> PyResult<Self> {
        Ok(PyDecimator {
            inner: Decimator::new(factor)?,
        })
    }

    /// Native-endian 16-bit PCM at 48 kHz in, one sample per `factor` out (fewer than `factor`
    /// trailing samples wait for the next call).
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        with_bytes(pcm, |pcm| {
            even(pcm)?;
            let n = self.inner.output_len(pcm.len() / 2).saturating_mul(2);
            PyBytes::new_with(py, n, |out| {
                self.inner.process_ne_bytes_into(pcm, out)?;
                Ok(())
            })
        })
    }

    /// Forget the filter history and any waiting samples.
    fn reset(&mut self) {
        self.inner.reset();
    }

    #[getter]
    fn factor(&self) -> u32 {
        self.inner.factor()
    }

    /// Group delay in output samples.
    #[getter]
    fn delay(&self) -> f64 {
        self.inner.delay()
    }

    fn __repr__(&self) -> String {
        format!(
            "Decimator(48000 -> {}, delay={})",
            48000 / self.inner.factor(),
            self.inner.delay()
        )
    }
}

/// Streaming 8 kHz (factor 6) or 16 kHz (factor 3) -> 48 kHz interpolator.
#[pyclass(name = "Interpolator", module = "node._core")]
pub struct PyInterpolator {
    inner: Interpolator,
}

#[pymethods]
impl PyInterpolator {
    #[new]
    fn new(factor: u32) -> PyResult<Self> {
        Ok(PyInterpolator {
            inner: Interpolator::new(factor)?,
        })
    }

    /// Native-endian 16-bit PCM at 48000 / `factor` Hz in, `factor` times as many samples out.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        with_bytes(pcm, |pcm| {
            even(pcm)?;
            let n = pcm.len().saturating_mul(self.inner.factor() as usize);
            PyBytes::new_with(py, n, |out| {
                self.inner.process_ne_bytes_into(pcm, out)?;
                Ok(())
            })
        })
    }

    /// Forget the filter history.
    fn reset(&mut self) {
        self.inner.reset();
    }

    #[getter]
    fn factor(&self) -> u32 {
        self.inner.factor()
    }

    /// Group delay in output (48 kHz) samples.
    #[getter]
    fn delay(&self) -> f64 {
        self.inner.delay()
    }

    fn __repr__(&self) -> String {
        format!(
            "Interpolator({} -> 48000, delay={})",
            48000 / self.inner.factor(),
            self.inner.delay()
        )
    }
}

/// A sound card attached to the engine's local radio member (`Engine.open_device`).
#[pyclass(name = "DevicePort", module = "node._core")]
pub struct PyDevicePort {
    link: Option<DeviceLink>,
}

impl PyDevicePort {
    pub(super) fn new(link: DeviceLink) -> Self {
        PyDevicePort { link: Some(link) }
    }

    fn link(&self) -> PyResult<&DeviceLink> {
        self.link
            .as_ref()
            .ok_or_else(|| PyEngineError::new_err("the device port is closed"))
    }

    fn link_mut(&mut self) -> PyResult<&mut DeviceLink> {
        self.link
            .as_mut()
            .ok_or_else(|| PyEngineError::new_err("the device port is closed"))
    }
}

fn direction<'py>(
    py: Python<'py>,
    gain_db: f64,
    level: Reading,
    frames: u64,
    late: u64,
    dropped: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let d = PyDict::new(py);
    d.set_item("gain_db", gain_db)?;
    d.set_item("peak_dbfs", round(level.peak_dbfs))?;
    d.set_item("rms_dbfs", round(level.rms_dbfs))?;
    d.set_item("peak_hold_dbfs", round(level.peak_hold_dbfs))?;
    d.set_item("clipped", level.clipped)?;
    d.set_item("frames", frames)?;
    d.set_item("late", late)?;
    d.set_item("dropped", dropped)?;
    Ok(d)
}

#[pymethods]
impl PyDevicePort {
    /// One device block each way: the captured block (native-endian int16 at the device rate)
    /// in, the block to play (same length) out. Converts, applies the gains, meters, and
    /// exchanges 20 ms frames with the local radio member.
    fn exchange<'py>(
        &mut self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let link = self.link_mut()?;
        with_bytes(block, |input| {
            PyBytes::new_with(py, input.len(), |out| {
                link.exchange(input, out)?;
                Ok(())
            })
        })
    }

    /// Change either gain live (dB; an omitted one keeps its value). Out of range: DeviceError,
    /// and neither changes.
    #[pyo3(signature = (rx_gain_db = None, tx_gain_db = None))]
    fn set_gains(&mut self, rx_gain_db: Option<f64>, tx_gain_db: Option<f64>) -> PyResult<()> {
        let edge = self.link_mut()?.edge_mut();
        for db in [rx_gain_db, tx_gain_db].into_iter().flatten() {
            if !gain_db_valid(db) {
                return Err(DeviceError::Gain { db }.into());
            }
        }
        if let Some(db) = rx_gain_db {
            edge.set_rx_gain_db(db)?;
        }
        if let Some(db) = tx_gain_db {
            edge.set_tx_gain_db(db)?;
        }
        Ok(())
    }

    /// Levels, gains and frame counters of both directions: {"rx": {...}, "tx": {...}}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let link = self.link()?;
        let edge = link.edge();
        let c: LocalCounters = link.counters();
        let d = PyDict::new(py);
        d.set_item(
            "rx",
            direction(
                py,
                edge.rx_gain_db(),
                edge.rx_level(),
                c.rx_frames,
                c.rx_late,
                c.rx_dropped,
            )?,
        )?;
        d.set_item(
            "tx",
            direction(
                py,
                edge.tx_gain_db(),
                edge.tx_level(),
                c.tx_frames,
                c.tx_late,
                c.tx_dropped,
            )?,
        )?;
        Ok(d)
    }

    #[getter]
    fn device_rate(&self) -> PyResult<u32> {
        Ok(self.link()?.edge().device_rate())
    }

    #[getter]
    fn station_rate(&self) -> PyResult<u32> {
        Ok(self.link()?.edge().station_rate())
    }

    /// Delay the rate conversion adds in each direction, in milliseconds.
    #[getter]
    fn filter_delay_ms(&self) -> PyResult<f64> {
        Ok(self.link()?.edge().filter_delay_ms())
    }

    #[getter]
    fn rx_gain_db(&self) -> PyResult<f64> {
        Ok(self.link()?.edge().rx_gain_db())
    }

    #[getter]
    fn tx_gain_db(&self) -> PyResult<f64> {
        Ok(self.link()?.edge().tx_gain_db())
    }

    #[getter]
    fn closed(&self) -> bool {
        self.link.is_none()
    }

    /// Detach from the engine (idempotent); queued local audio is dropped.
    fn close(&mut self) {
        self.link = None;
    }

    fn __repr__(&self) -> String {
        match &self.link {
            Some(l) => format!(
                "DevicePort({} Hz device, {} Hz station)",
                l.edge().device_rate(),
                l.edge().station_rate()
            ),
            None => "DevicePort(closed)".to_owned(),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDecimator>()?;
    m.add_class::<PyInterpolator>()?;
    m.add_class::<PyDevicePort>()?;
    Ok(())
}
