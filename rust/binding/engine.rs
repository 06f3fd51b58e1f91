//! `node._core.Engine`: the Python handle on the engine thread.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::errors::EngineError as PyEngineError;
use super::frame::full_frame_to_py;
use crate::engine::{Engine, EngineConfig, EngineError};

impl From<EngineError> for PyErr {
    fn from(e: EngineError) -> PyErr {
        PyEngineError::new_err(e.to_string())
    }
}

fn addr_to_py<'py>(py: Python<'py>, addr: SocketAddr) -> PyResult<Bound<'py, PyTuple>> {
    (addr.ip().to_string(), addr.port()).into_pyobject(py)
}

fn addr_from_py(host: &str, port: u16) -> PyResult<SocketAddr> {
    // Only literal addresses: name resolution is Python's job and must not block the engine.
    let ip: IpAddr = host
        .parse()
        .map_err(|_| PyEngineError::new_err(format!("not an IP address: {host:?}")))?;
    Ok(SocketAddr::new(ip, port))
}

/// The engine thread that owns the IAX2 UDP socket.
#[pyclass(name = "Engine", module = "node._core")]
pub struct PyEngine {
    inner: Engine,
}

#[pymethods]
impl PyEngine {
    /// Bind `bind` ("host:port", port 0 for any) and start the engine thread.
    #[new]
    #[pyo3(signature = (bind, queue_limit = 4096))]
    fn new(py: Python<'_>, bind: &str, queue_limit: usize) -> PyResult<Self> {
        let addr = bind
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .ok_or_else(|| PyEngineError::new_err(format!("not a socket address: {bind:?}")))?;
        let mut cfg = EngineConfig::new(addr);
        cfg.queue_limit = queue_limit;
        let inner = py.detach(|| Engine::start(cfg))?;
        Ok(PyEngine { inner })
    }

    /// The bound address as (host, port).
    #[getter]
    fn local_addr<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        addr_to_py(py, self.inner.local_addr())
    }

    /// Descriptor that becomes readable when full frames are waiting (for loop.add_reader).
    fn wakeup_fd(&self) -> i32 {
        self.inner.wakeup_fd()
    }

    /// Every queued full frame as a list of ((host, port), FullFrame), oldest first.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self.inner.drain();
        let out = PyList::empty(py);
        for item in items {
            let addr = addr_to_py(py, item.from)?;
            let frame = full_frame_to_py(py, item.frame)?;
            out.append((addr, frame))?;
        }
        Ok(out)
    }

    /// Send one datagram to (host, port) from the engine's socket.
    fn send_to(&self, data: &[u8], addr: (String, u16)) -> PyResult<()> {
        let to = addr_from_py(&addr.0, addr.1)?;
        self.inner.send_to(data, to)?;
        Ok(())
    }

    /// The engine's counters as a dict of ints.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.counters();
        let d = PyDict::new(py);
        d.set_item("datagrams_in", c.datagrams_in)?;
        d.set_item("bytes_in", c.bytes_in)?;
        d.set_item("malformed", c.malformed)?;
        d.set_item("full_in", c.full_in)?;
        d.set_item("mini_in", c.mini_in)?;
        d.set_item("trunk_in", c.trunk_in)?;
        d.set_item("video_dropped", c.video_dropped)?;
        d.set_item("media_unrouted", c.media_unrouted)?;
        d.set_item("queue_overflow", c.queue_overflow)?;
        d.set_item("datagrams_out", c.datagrams_out)?;
        d.set_item("bytes_out", c.bytes_out)?;
        d.set_item("send_errors", c.send_errors)?;
        d.set_item("recv_errors", c.recv_errors)?;
        Ok(d)
    }

    /// Whether the thread is running (False after stop()).
    #[getter]
    fn running(&self) -> bool {
        self.inner.is_running()
    }

    /// Stop the engine thread (idempotent); the socket closes when the object is freed.
    fn stop(&mut self, py: Python<'_>) {
        py.detach(|| self.inner.stop());
    }

    fn __repr__(&self) -> String {
        format!(
            "Engine(local_addr={}, running={})",
            self.inner.local_addr(),
            self.inner.is_running()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    Ok(())
}
