//! `node._core.WireGuard`: the tunnel settings an `Engine` runs over, and the key helper.

use std::net::{IpAddr, SocketAddr};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::ipv4::Ipv4Net;
use crate::transport::TunnelStats;
use crate::wireguard::{self, WgConfig};
use boringtun::x25519::{PublicKey, StaticSecret};

fn key32(what: &str, bytes: &[u8]) -> PyResult<[u8; 32]> {
    // The value is never repeated: it is (or is next to) a secret.
    <[u8; 32]>::try_from(bytes).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be 32 bytes (a WireGuard key), got {}",
            bytes.len()
        ))
    })
}

fn socket_addr(what: &str, text: &str) -> PyResult<SocketAddr> {
    // Only literal addresses: name resolution is Python's job.
    text.parse()
        .map_err(|_| PyValueError::new_err(format!("{what}: not an ip:port address: {text:?}")))
}

fn network(text: &str) -> PyResult<Ipv4Net> {
    let bad = || {
        PyValueError::new_err(format!(
            "allowed IP {text:?} is not an IPv4 network (a.b.c.d/prefix)"
        ))
    };
    let (addr, prefix) = text.split_once('/').unwrap_or((text, "32"));
    let addr = addr.parse().map_err(|_| bad())?;
    let prefix = prefix.parse().map_err(|_| bad())?;
    Ipv4Net::new(addr, prefix).ok_or_else(bad)
}

/// The settings of a userspace WireGuard tunnel to one peer; pass to `Engine(wireguard=...)`.
/// Its repr never shows the keys.
#[pyclass(name = "WireGuard", module = "node._core", frozen)]
pub struct PyWireGuard {
    pub(super) config: WgConfig,
}

#[pymethods]
impl PyWireGuard {
    /// `address` is ours inside the tunnel ("ip:port", IPv4), `listen` where the outer socket
    /// binds, `endpoint` the peer's outer "ip:port" (None: wait for the peer), `allowed_ips`
    /// IPv4 networks ("10.8.0.0/24"), `persistent_keepalive` seconds (0: off). Keys are the raw
    /// 32 bytes.
    #[new]
    #[pyo3(signature = (private_key, peer_public_key, address, listen, endpoint, allowed_ips, persistent_keepalive = 0, preshared_key = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        private_key: &[u8],
        peer_public_key: &[u8],
        address: &str,
        listen: &str,
        endpoint: Option<&str>,
        allowed_ips: Vec<String>,
        persistent_keepalive: u16,
        preshared_key: Option<&[u8]>,
    ) -> PyResult<Self> {
        let address = match socket_addr("address", address)? {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => {
                return Err(PyValueError::new_err(
                    "address: the tunnel carries IPv4 only (an a.b.c.d:port address)",
                ))
            }
        };
        let allowed_ips = allowed_ips
            .iter()
            .map(|n| network(n))
            .collect::<PyResult<Vec<_>>>()?;
        if allowed_ips.is_empty() {
            return Err(PyValueError::new_err(
                "allowed_ips must name at least one network",
            ));
        }
        Ok(PyWireGuard {
            config: WgConfig {
                private_key: StaticSecret::from(key32("private_key", private_key)?),
                peer_public_key: PublicKey::from(key32("peer_public_key", peer_public_key)?),
                preshared_key: preshared_key
                    .map(|k| key32("preshared_key", k))
                    .transpose()?,
                address,
                listen: socket_addr("listen", listen)?,
                endpoint: endpoint.map(|e| socket_addr("endpoint", e)).transpose()?,
                allowed_ips,
                persistent_keepalive: Some(persistent_keepalive).filter(|&s| s > 0),
            },
        })
    }

    /// Our tunnel address as (host, port).
    #[getter]
    fn address(&self) -> (String, u16) {
        let a = self.config.address;
        (a.ip().to_string(), a.port())
    }

    fn __repr__(&self) -> String {
        let c = &self.config;
        let endpoint = c
            .endpoint
            .map_or_else(|| "None".to_owned(), |e| e.to_string());
        let nets: Vec<String> = c.allowed_ips.iter().map(ToString::to_string).collect();
        format!(
            "WireGuard(address={}, listen={}, endpoint={endpoint}, allowed_ips=[{}], \
             persistent_keepalive={}, private_key=***)",
            c.address,
            c.listen,
            nets.join(", "),
            c.persistent_keepalive.unwrap_or(0),
        )
    }
}

/// The public key (32 bytes) of a WireGuard private key (32 bytes), as `wg pubkey` derives it.
#[pyfunction]
fn wg_public_key<'py>(py: Python<'py>, private_key: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let key = key32("private_key", private_key)?;
    Ok(PyBytes::new(py, &wireguard::public_key(key)))
}

fn addr_text(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
        IpAddr::V4(_) => addr.to_string(),
    }
}

/// The tunnel's health as a dict (see `Engine.tunnel`).
pub(super) fn tunnel_to_py<'py>(py: Python<'py>, t: &TunnelStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", t.state.as_str())?;
    d.set_item("listen", addr_text(t.listen))?;
    d.set_item("endpoint", t.endpoint.map(addr_text))?;
    d.set_item(
        "last_handshake_s",
        t.last_handshake.map(|l| l.as_secs_f64()),
    )?;
    d.set_item("handshakes", t.handshakes)?;
    d.set_item("handshake_attempts", t.handshake_attempts)?;
    d.set_item("rx_bytes", t.rx_bytes)?;
    d.set_item("tx_bytes", t.tx_bytes)?;
    d.set_item("dropped_outer", t.dropped_outer)?;
    d.set_item("dropped_inner", t.dropped_inner)?;
    d.set_item("no_route", t.no_route)?;
    d.set_item("public_key", PyBytes::new(py, &t.public_key))?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWireGuard>()?;
    m.add_function(wrap_pyfunction!(wg_public_key, m)?)?;
    Ok(())
}
