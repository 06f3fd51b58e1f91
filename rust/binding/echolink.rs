//! The EchoLink side of `node._core.Engine`: its kinds and counters as Python sees them.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::engine::{EchoLinkCounterSnapshot, EchoLinkKind};
use crate::media::EchoLinkLegStats;

pub(super) fn kind_from_str(kind: &str) -> PyResult<EchoLinkKind> {
    match kind {
        "control" => Ok(EchoLinkKind::Control),
        "text" => Ok(EchoLinkKind::Text),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "EchoLink datagram kind {kind:?} (accepted: control, text)"
        ))),
    }
}

pub(super) fn counters_to_py<'py>(
    py: Python<'py>,
    c: &EchoLinkCounterSnapshot,
) -> PyResult<Bound<'py, PyDict>> {
    counters_of!(py, c; datagrams_in bytes_in audio_in audio_unrouted audio_malformed text_in
        control_in truncated recv_errors datagrams_out bytes_out audio_out send_errors)
}

pub(super) fn leg_stats_to_py<'py>(
    py: Python<'py>,
    s: &EchoLinkLegStats,
) -> PyResult<Bound<'py, PyDict>> {
    counters_of!(py, s; packets_in frames_in packets_malformed frames_bad seq_gaps packets_out
        frames_out)
}
