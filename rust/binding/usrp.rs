//! `node._core` USRP radio: the port `Engine.open_usrp` returns (its events are in `events.rs`).

use std::sync::atomic::Ordering;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::device::direction;
use super::errors::EngineError as PyEngineError;
use crate::engine::UsrpLink;
use crate::usrp::{Metadata, UsrpConfigError};

impl From<UsrpConfigError> for PyErr {
    fn from(e: UsrpConfigError) -> PyErr {
        PyEngineError::new_err(e.to_string())
    }
}

/// `Engine.open_usrp`'s settings, read from a mapping (unknown keys are an error).
pub(super) struct Settings {
    pub rx_gain_db: f64,
    pub tx_gain_db: f64,
    pub prefill_frames: usize,
    pub queue_frames: usize,
    pub rx_timeout_ms: u64,
    pub talkgroup: u32,
}

impl Settings {
    pub(super) fn from_py(d: Option<&Bound<'_, PyDict>>) -> PyResult<Settings> {
        let defaults = crate::usrp::UsrpConfig::default();
        let mut s = Settings {
            rx_gain_db: 0.0,
            tx_gain_db: 0.0,
            prefill_frames: defaults.prefill_frames,
            queue_frames: defaults.queue_frames,
            rx_timeout_ms: defaults.rx_timeout_ms,
            talkgroup: defaults.talkgroup,
        };
        let Some(d) = d else {
            return Ok(s);
        };
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            match key.as_str() {
                "rx_gain_db" => s.rx_gain_db = v.extract()?,
                "tx_gain_db" => s.tx_gain_db = v.extract()?,
                "prefill_frames" => s.prefill_frames = v.extract()?,
                "queue_frames" => s.queue_frames = v.extract()?,
                "rx_timeout_ms" => s.rx_timeout_ms = v.extract()?,
                "talkgroup" => s.talkgroup = v.extract()?,
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "unknown USRP setting {other:?} (accepted: rx_gain_db, tx_gain_db, \
                         prefill_frames, queue_frames, rx_timeout_ms, talkgroup)"
                    )))
                }
            }
        }
        Ok(s)
    }
}

/// A USRP radio attached to the engine's local radio member (`Engine.open_usrp`).
#[pyclass(name = "UsrpPort", module = "node._core")]
pub struct PyUsrpPort(Option<UsrpLink>);

impl PyUsrpPort {
    pub(super) fn new(link: UsrpLink) -> Self {
        PyUsrpPort(Some(link))
    }

    fn link(&self) -> PyResult<&UsrpLink> {
        match &self.0 {
            Some(l) => Ok(l),
            None => Err(PyEngineError::new_err("the USRP port is closed")),
        }
    }
}

/// The digital caller's metadata as a dict (a `UsrpMetaReceived` event's, and `stats()["meta"]`).
pub(super) fn meta_dict<'py>(py: Python<'py>, m: &Metadata) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("callsign", &m.callsign)?;
    let ids = [
        ("source_id", m.source_id),
        ("talkgroup", m.talkgroup),
        ("repeater_id", m.repeater_id),
        ("slot", u32::from(m.slot)),
        ("color_code", u32::from(m.color_code)),
    ];
    for (k, v) in ids {
        d.set_item(k, v)?;
    }
    Ok(d)
}

#[pymethods]
impl PyUsrpPort {
    /// Key (True) or release the transmitter toward the peer: keyed, every 20 ms sends a
    /// keyup-1 voice packet; the release sends one keyup-0 packet.
    fn set_keyed(&self, keyed: bool) -> PyResult<()> {
        self.link()?.set_keyed(keyed);
        Ok(())
    }

    /// Change either gain live (dB; an omitted one keeps its value; out of range: EngineError
    /// and neither changes).
    #[pyo3(signature = (rx_gain_db = None, tx_gain_db = None))]
    fn set_gains(&self, rx_gain_db: Option<f64>, tx_gain_db: Option<f64>) -> PyResult<()> {
        let mut radio = crate::engine::lock_usrp(self.link()?);
        let (old_rx, old_tx) = (radio.rx_gain_db(), radio.tx_gain_db());
        let applied = radio
            .set_rx_gain_db(rx_gain_db.unwrap_or(old_rx))
            .and_then(|()| radio.set_tx_gain_db(tx_gain_db.unwrap_or(old_tx)));
        if applied.is_err() {
            let _ = radio.set_rx_gain_db(old_rx);
            let _ = radio.set_tx_gain_db(old_tx);
        }
        Ok(applied?)
    }

    /// Counters, levels and state: {"rx": {...}, "tx": {...}, "carrier", "keyed",
    /// "heard_ago_ms", "buffered", "meta", ...}.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let link = self.link()?;
        let shared = link.shared();
        let now = shared.now_ms();
        let radio = crate::engine::lock_usrp(link);
        let c = radio.counters();
        let d = PyDict::new(py);
        let (db, lv) = (radio.rx_gain_db(), radio.rx_level());
        let rx = direction(py, db, lv, c.rx_voice, c.rx_late, c.rx_overflow)?;
        let rx_counts = [
            ("packets", c.rx_packets),
            ("voice", c.rx_voice),
            ("garbage", c.rx_garbage),
            ("overflow", c.rx_overflow),
            ("late", c.rx_late),
            ("lost", c.rx_lost),
            ("underrun", c.rx_underrun),
            ("dtmf", c.rx_dtmf),
            ("meta", c.rx_meta),
            ("ignored", c.rx_ignored),
        ];
        for (k, v) in rx_counts {
            rx.set_item(k, v)?;
        }
        d.set_item("rx", rx)?;
        let (db, lv) = (radio.tx_gain_db(), radio.tx_level());
        let errors = shared.send_errors.load(Ordering::Relaxed);
        let tx = direction(py, db, lv, c.tx_voice, 0, errors)?;
        tx.set_item("voice", c.tx_voice)?;
        tx.set_item("unkey", c.tx_unkey)?;
        tx.set_item("send_errors", shared.send_errors.load(Ordering::Relaxed))?;
        d.set_item("tx", tx)?;
        d.set_item("carrier", radio.carrier())?;
        d.set_item("keyed", radio.keyed())?;
        d.set_item("buffered", radio.buffered())?;
        d.set_item("peer_lost", c.peer_lost)?;
        d.set_item("missed_ticks", shared.missed_ticks.load(Ordering::Relaxed))?;
        d.set_item("heard_ago_ms", radio.heard_ago_ms(now))?;
        match radio.meta() {
            Some((m, at)) => {
                let md = meta_dict(py, m)?;
                md.set_item("age_ms", now.saturating_sub(*at))?;
                d.set_item("meta", md)?;
            }
            None => d.set_item("meta", py.None())?,
        }
        Ok(d)
    }

    /// The address the port listens on.
    #[getter]
    fn local_addr(&self) -> PyResult<(String, u16)> {
        let a = self.link()?.local_addr();
        Ok((a.ip().to_string(), a.port()))
    }

    #[getter]
    fn peer(&self) -> PyResult<(String, u16)> {
        let a = self.link()?.peer();
        Ok((a.ip().to_string(), a.port()))
    }

    #[getter]
    fn closed(&self) -> bool {
        self.0.is_none()
    }

    /// Stop the thread (idempotent): a keyed transmitter is released first, with its keyup-0.
    fn close(&mut self, py: Python<'_>) {
        if let Some(link) = self.0.take() {
            py.detach(move || drop(link));
        }
    }

    fn __repr__(&self) -> String {
        match &self.0 {
            Some(l) => format!("UsrpPort(listen {}, peer {})", l.local_addr(), l.peer()),
            None => "UsrpPort(closed)".to_owned(),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyUsrpPort>()?;
    Ok(())
}
