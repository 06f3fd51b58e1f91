//! `node._core` sound card edge: the device port of the engine (its 48 kHz converters are
//! classes of `resampler`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::codec::with_bytes;
use super::errors::EngineError as PyEngineError;
use crate::device::DeviceError;
use crate::engine::{DeviceLink, LocalCounters};
use crate::level::{gain_db_valid, Reading};

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

/// One direction's gain, levels and frame counters (the USRP port's stats share the shape).
pub(super) fn direction<'py>(
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

    /// Levels, gains and frame counters of both directions: {"rx": {...}, "tx": {...}}; "rx"
    /// also holds the receive-audio delay ("delay_ms").
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let link = self.link()?;
        let edge = link.edge();
        let c: LocalCounters = link.counters();
        let d = PyDict::new(py);
        let rx = direction(
            py,
            edge.rx_gain_db(),
            edge.rx_level(),
            c.rx_frames,
            c.rx_late,
            c.rx_dropped,
        )?;
        rx.set_item("delay_ms", edge.rx_delay_ms())?;
        d.set_item("rx", rx)?;
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
    m.add_class::<PyDevicePort>()?;
    Ok(())
}
