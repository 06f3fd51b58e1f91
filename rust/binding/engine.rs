//! `node._core.Engine`: the Python handle on the engine thread.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::device::PyDevicePort;
use super::errors::EngineError as PyEngineError;
use super::events::{event_to_py, CONTROL_HANGUP, CONTROL_RADIO_KEY, CONTROL_RADIO_UNKEY};
use super::frame::full_frame_to_py;
use super::wireguard::{tunnel_to_py, PyWireGuard};
use crate::codec::Codec;
use crate::device::DeviceEdge;
use crate::engine::{Command, EchoLinkKind, Engine, EngineConfig, EngineError};
use crate::jitter::{ControlKind, JitterConfig, JitterStats};
use crate::media::{EchoLinkLegSpec, LegMode, LegSpec, RxKeying, FIRST_LEG};
use crate::parrot::ParrotSettings;
use crate::player::Destination;
use crate::vox::VoxConfig;
use crate::wireguard::WgTransport;

impl From<EngineError> for PyErr {
    fn from(e: EngineError) -> PyErr {
        PyEngineError::new_err(e.to_string())
    }
}

fn addr_to_py<'py>(py: Python<'py>, addr: SocketAddr) -> PyResult<Bound<'py, PyTuple>> {
    (addr.ip().to_string(), addr.port()).into_pyobject(py)
}

fn codec_from_format(format: u64) -> PyResult<Codec> {
    Codec::from_format_bit(format)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

fn mode_from_str(mode: &str) -> PyResult<LegMode> {
    match mode {
        "transceive" => Ok(LegMode::Transceive),
        "receive_only" => Ok(LegMode::ReceiveOnly),
        "transmit_only" => Ok(LegMode::TransmitOnly),
        "local_only" => Ok(LegMode::LocalOnly),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "leg mode {mode:?} (accepted: transceive, receive_only, transmit_only, local_only)"
        ))),
    }
}

fn keying_from_str(keying: &str) -> PyResult<RxKeying> {
    match keying {
        "always" => Ok(RxKeying::Always),
        "vox" => Ok(RxKeying::Vox),
        "voice" => Ok(RxKeying::Voice),
        "control" => Ok(RxKeying::Control),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "leg keying {keying:?} (accepted: always, vox, voice, control)"
        ))),
    }
}

/// `kind` as Python names it: ("control", subclass), ("dtmf", digit), ("text", 0), ("cng", 0).
fn control_kind(kind: &str, value: i64) -> PyResult<ControlKind> {
    let bad = || pyo3::exceptions::PyValueError::new_err(format!("control kind {kind:?}/{value}"));
    Ok(match (kind, value) {
        ("control", CONTROL_RADIO_KEY) => ControlKind::Key,
        ("control", CONTROL_RADIO_UNKEY) => ControlKind::Unkey,
        ("control", CONTROL_HANGUP) => ControlKind::Hangup,
        ("control", v) => ControlKind::Other {
            frametype: 4,
            subclass: u32::try_from(v).map_err(|_| bad())?,
        },
        ("dtmf", v) => ControlKind::Dtmf(u8::try_from(v).map_err(|_| bad())?),
        ("text", _) => ControlKind::Text,
        ("cng", _) => ControlKind::Cng,
        _ => return Err(bad()),
    })
}

pub(super) fn jitter_to_py<'py>(py: Python<'py>, s: &JitterStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("frames_in", s.frames_in)?;
    d.set_item("frames_out", s.frames_out)?;
    d.set_item("lost", s.lost)?;
    d.set_item("late", s.late)?;
    d.set_item("dropped", s.dropped)?;
    d.set_item("duplicate", s.duplicate)?;
    d.set_item("reordered", s.reordered)?;
    d.set_item("interpolated", s.interpolated)?;
    d.set_item("resyncs", s.resyncs)?;
    d.set_item("stretched", s.stretched)?;
    d.set_item("delay_ms", s.delay_ms)?;
    d.set_item("target_ms", s.target_ms)?;
    d.set_item("min_ms", s.min_ms)?;
    d.set_item("jitter_ms", s.jitter_ms)?;
    d.set_item("queued", s.queued)?;
    d.set_item("talking", s.talking)?;
    d.set_item("quiet_below_dbfs", s.quiet_below_dbfs)?;
    Ok(d)
}

fn addr_from_py(host: &str, port: u16) -> PyResult<SocketAddr> {
    // Only literal addresses: name resolution is Python's job and must not block the engine.
    let ip: IpAddr = host
        .parse()
        .map_err(|_| PyEngineError::new_err(format!("not an IP address: {host:?}")))?;
    Ok(SocketAddr::new(ip, port))
}

/// `leg` if it is an EchoLink leg id (outside IAX2's 15-bit call numbers).
fn echolink_leg_id(leg: u16) -> PyResult<u16> {
    if leg < FIRST_LEG {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "EchoLink leg id {leg} is an IAX2 call number (accepted: {FIRST_LEG}..=65535)"
        )));
    }
    Ok(leg)
}

/// The engine thread that owns the IAX2 UDP socket.
#[pyclass(name = "Engine", module = "node._core")]
pub struct PyEngine {
    inner: Engine,
}

#[pymethods]
impl PyEngine {
    /// Bind `bind` ("host:port", port 0 for any) and start the engine thread. `legs` is how
    /// many legs the node is configured to carry: the socket buffers are sized for them. With
    /// `wireguard`, every datagram goes through that tunnel instead (`bind` is not used: the
    /// tunnel binds its own outer socket). `concealment` is how legs conceal lost frames:
    /// "pitch" (pitch-period repetition) or "fade" (the old repeat-and-fade).
    /// `jitter_target_extra_ms` and `jitter_max_ms` size every leg's jitter buffer (chan_iax2's
    /// `jittertargetextra` and `maxjitterbuffer`; None keeps chan_iax2's defaults). `stations`
    /// is how many conferences it mixes (one per hosted node); every command, device and USRP
    /// radio takes `station=` (0, the first node's, by default), and a further station's events
    /// come as `StationEvent(station, event)`.
    #[new]
    #[pyo3(signature = (bind, rate = 8000, mix_minus = true, queue_limit = 4096, legs = 64, wireguard = None, concealment = "pitch", jitter_target_extra_ms = None, jitter_max_ms = None, stations = 1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        bind: &str,
        rate: u32,
        mix_minus: bool,
        queue_limit: usize,
        legs: usize,
        wireguard: Option<PyRef<'_, PyWireGuard>>,
        concealment: &str,
        jitter_target_extra_ms: Option<u32>,
        jitter_max_ms: Option<u32>,
        stations: usize,
    ) -> PyResult<Self> {
        let addr = bind
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .ok_or_else(|| PyEngineError::new_err(format!("not a socket address: {bind:?}")))?;
        let mut cfg = EngineConfig::new(addr);
        cfg.rate = rate;
        cfg.mix_minus = mix_minus;
        cfg.queue_limit = queue_limit;
        cfg.legs = legs;
        cfg.stations = stations;
        cfg.concealment = super::plc::concealment(concealment)?;
        let defaults = JitterConfig::default();
        cfg.jitter = JitterConfig {
            target_extra_ms: jitter_target_extra_ms.unwrap_or(defaults.target_extra_ms),
            max_jitterbuf_ms: jitter_max_ms.unwrap_or(defaults.max_jitterbuf_ms),
            ..defaults
        };
        cfg.jitter
            .validate()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        let inner = match wireguard {
            None => py.detach(|| Engine::start(cfg))?,
            Some(wg) => {
                let config = wg.config.clone();
                drop(wg);
                py.detach(|| {
                    let listen = config.listen;
                    let transport =
                        WgTransport::bind(config, legs).map_err(|source| EngineError::Bind {
                            addr: listen,
                            source,
                        })?;
                    Engine::start_with(cfg, Box::new(transport))
                })?
            }
        };
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

    /// Engine events since the last call, oldest first: one frozen `EngineEvent` subclass per
    /// kind (`FullVoiceNeeded`, `SpurtEnded`, `ControlPlayed`, `MiniBeforeFull`, `RxKeyed`,
    /// `DtmfDecoded`, `PlayStarted`, `PlayFinished`, `ActivityChanged`, `LocalTxChanged`,
    /// `VoxChanged`, `CommandFailed`, `TunnelChanged` and the USRP radio's
    /// `UsrpCarrierChanged`, `UsrpDtmfReceived`, `UsrpMetaReceived`, `UsrpPeerChanged`; see
    /// `binding/events.rs`). Each is one object whose payload stays the engine's buffer until
    /// read.
    fn drain_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for event in self.inner.drain_events() {
            out.append(event_to_py(py, event)?)?;
        }
        Ok(out)
    }

    /// Start the media leg of a call: mini frames from (peer, peer_callno) go to its jitter
    /// buffer, and the conference is sent to it encoded with `format`. `keying` is how its
    /// received audio keys it: "always", "vox" (plain calls), "voice" or "control" (links).
    /// `dtmf` decodes in-band DTMF in its received audio (`DtmfDecoded` events) and mutes the
    /// tones. `link` marks a node-to-node link, which announcements reach only as
    /// "to_air_and_links".
    /// `normalize` brings its received voice to the loudness target (True), leaves it as it
    /// comes (False), or follows `set_normalize` (None).
    #[pyo3(signature = (callno, peer_callno, peer, format, mode = "transceive", call_ts_ms = 0, keying = "always", dtmf = false, link = false, normalize = None, *, station = 0))]
    #[allow(clippy::too_many_arguments)]
    fn add_leg(
        &self,
        callno: u16,
        peer_callno: u16,
        peer: (String, u16),
        format: u64,
        mode: &str,
        call_ts_ms: u32,
        keying: &str,
        dtmf: bool,
        link: bool,
        normalize: Option<bool>,
        station: usize,
    ) -> PyResult<()> {
        let spec = LegSpec {
            callno,
            peer_callno,
            peer: addr_from_py(&peer.0, peer.1)?,
            codec: codec_from_format(format)?,
            mode: mode_from_str(mode)?,
            keying: keying_from_str(keying)?,
            call_ts_ms,
            dtmf,
            link,
            normalize,
        };
        Ok(self.inner.command_at(station, Command::AddLeg(spec))?)
    }

    #[pyo3(signature = (callno, *, station = 0))]
    fn remove_leg(&self, callno: u16, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::RemoveLeg(callno))?)
    }

    #[pyo3(signature = (callno, mode, *, station = 0))]
    fn set_leg_mode(&self, callno: u16, mode: &str, station: usize) -> PyResult<()> {
        Ok(self
            .inner
            .command_at(station, Command::SetLegMode(callno, mode_from_str(mode)?))?)
    }

    #[pyo3(signature = (callno, keying, *, station = 0))]
    fn set_leg_keying(&self, callno: u16, keying: &str, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(
            station,
            Command::SetLegKeying(callno, keying_from_str(keying)?),
        )?)
    }

    #[pyo3(signature = (callno, format, *, station = 0))]
    fn set_leg_codec(&self, callno: u16, format: u64, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(
            station,
            Command::SetLegCodec(callno, codec_from_format(format)?),
        )?)
    }

    /// The payload of a full voice frame received (and acknowledged) on a call.
    #[pyo3(signature = (callno, format, ts, payload, *, station = 0))]
    fn push_voice(
        &self,
        callno: u16,
        format: u64,
        ts: u32,
        payload: Vec<u8>,
        station: usize,
    ) -> PyResult<()> {
        Ok(self.inner.command_at(
            station,
            Command::PushVoice {
                callno,
                codec: codec_from_format(format)?,
                ts,
                payload,
            },
        )?)
    }

    /// A control event to keep in order with the call's audio: kind is "control" (value =
    /// CONTROL subclass, e.g. 12 RADIO_KEY, 13 RADIO_UNKEY), "dtmf" (value = digit), "text"
    /// (payload = the text) or "cng".
    #[pyo3(signature = (callno, kind, value, ts, payload = Vec::new(), *, station = 0))]
    fn push_control(
        &self,
        callno: u16,
        kind: &str,
        value: i64,
        ts: u32,
        payload: Vec<u8>,
        station: usize,
    ) -> PyResult<()> {
        Ok(self.inner.command_at(
            station,
            Command::PushControl {
                callno,
                kind: control_kind(kind, value)?,
                ts,
                payload,
            },
        )?)
    }

    /// Decode in-band DTMF in a leg's received audio (and mute the tones), or stop.
    #[pyo3(signature = (callno, on, *, station = 0))]
    fn set_leg_dtmf(&self, callno: u16, on: bool, station: usize) -> PyResult<()> {
        Ok(self
            .inner
            .command_at(station, Command::SetLegDtmf(callno, on))?)
    }

    /// Decode in-band DTMF in the local radio's receive audio (and mute the tones), or stop.
    #[pyo3(signature = (on, *, station = 0))]
    fn set_local_dtmf(&self, on: bool, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::SetLocalDtmf(on))?)
    }

    /// Play `pcm` (native-endian int16 at the station rate) from the next tick, as clip `id`
    /// (the caller's number; `PlayStarted`/`PlayFinished` events carry it). `destination`:
    /// "to_monitor" (the local radio's output only), "to_air" (the local radio's output and the
    /// calls), "to_air_and_links" (and the transceive links: this keys them). `keys_local` lets
    /// the clip key the local transmitter: only for the station ID under cw_keys_when_idle.
    #[pyo3(signature = (id, pcm, destination, keys_local = false, *, station = 0))]
    fn play(
        &self,
        id: u32,
        pcm: &Bound<'_, PyAny>,
        destination: &str,
        keys_local: bool,
        station: usize,
    ) -> PyResult<()> {
        let destination = match destination {
            "to_monitor" => Destination::Monitor,
            "to_air" => Destination::Air,
            "to_air_and_links" => Destination::AirAndLinks,
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "destination {destination:?} (accepted: to_monitor, to_air, to_air_and_links)"
                )))
            }
        };
        let pcm = super::codec::with_bytes(pcm, super::tones::samples_of)?;
        Ok(self.inner.command_at(
            station,
            Command::Play {
                id,
                pcm,
                destination,
                keys_local,
            },
        )?)
    }

    /// Stop clip `id` now (a `PlayFinished` event with completed False follows).
    #[pyo3(signature = (id, *, station = 0))]
    fn stop_playing(&self, id: u32, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::StopPlay(id))?)
    }

    /// Parrot mode (`on`): every member's audio is recorded (VOX at `vox_threshold_db`, ended
    /// by `silence_gap_ms` of quiet, at most 30 s) and played back to it alone after
    /// `playback_delay_ms`; off: the conference.
    #[pyo3(signature = (on, playback_delay_ms, silence_gap_ms, vox_threshold_db, *, station = 0))]
    fn set_parrot(
        &self,
        on: bool,
        playback_delay_ms: u32,
        silence_gap_ms: u32,
        vox_threshold_db: f64,
        station: usize,
    ) -> PyResult<()> {
        let settings = on.then_some(ParrotSettings {
            playback_delay_ms,
            silence_gap_ms,
            vox_threshold_db,
        });
        Ok(self
            .inner
            .command_at(station, Command::SetParrot(settings))?)
    }

    /// Normalise the received voice of every leg without an override of its own (`on`), to
    /// `target_lufs` (-60 to -10) lifting at most `max_gain_db` (0 to 30); the settings hold
    /// for every normalised leg of the station.
    #[pyo3(signature = (on, target_lufs, max_gain_db, *, station = 0))]
    fn set_normalize(
        &self,
        on: bool,
        target_lufs: f64,
        max_gain_db: f64,
        station: usize,
    ) -> PyResult<()> {
        let settings = super::loudness::settings(target_lufs, max_gain_db)?;
        Ok(self
            .inner
            .command_at(station, Command::SetNormalize(on, settings))?)
    }

    #[pyo3(signature = (on, *, station = 0))]
    fn set_mix_minus(&self, on: bool, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::SetMixMinus(on))?)
    }

    #[pyo3(signature = (on, *, station = 0))]
    fn set_local_radio(&self, on: bool, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::SetLocalRadio(on))?)
    }

    /// Key (True) or unkey the local source: while keyed it talks into every leg, silence
    /// included, whatever the topology.
    #[pyo3(signature = (on, *, station = 0))]
    fn set_local_keyed(&self, on: bool, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::SetLocalKeyed(on))?)
    }

    /// With a carrier detector on the local receiver (True), its audio is heard only while the
    /// local source is keyed, never by its own level.
    #[pyo3(signature = (on, *, station = 0))]
    fn set_local_gated(&self, on: bool, station: usize) -> PyResult<()> {
        Ok(self.inner.command_at(station, Command::SetLocalGated(on))?)
    }

    /// Attach a sound card running at `device_rate` (the station rate or 48000) to the local
    /// radio member; the port converts, applies the gains (dB) and meters. `rx_delay_ms` holds
    /// the received audio back (to cut a squelch tail); `vox` = (threshold dBFS, attack ms,
    /// release ms) runs VOX on the received audio, reported as `VoxChanged` events. With
    /// `trades` false (the null backend) the port exchanges no blocks and does not keep the
    /// engine's clock running: an idle engine sleeps.
    #[pyo3(signature = (device_rate, rx_gain_db = 0.0, tx_gain_db = 0.0, rx_delay_ms = 0, vox = None, trades = true, *, station = 0))]
    #[allow(clippy::too_many_arguments)]
    fn open_device(
        &self,
        device_rate: u32,
        rx_gain_db: f64,
        tx_gain_db: f64,
        rx_delay_ms: u32,
        vox: Option<(f64, u32, u32)>,
        trades: bool,
        station: usize,
    ) -> PyResult<PyDevicePort> {
        let mut edge = DeviceEdge::new(device_rate, self.inner.rate())?;
        edge.set_rx_gain_db(rx_gain_db)?;
        edge.set_tx_gain_db(tx_gain_db)?;
        edge.set_rx_delay_ms(rx_delay_ms)?;
        edge.set_vox(
            vox.map(|(threshold_dbfs, attack_ms, release_ms)| VoxConfig {
                threshold_dbfs,
                attack_ms,
                release_ms,
            }),
        )?;
        match self.inner.attach_device_at(station, edge, trades) {
            Ok(link) => Ok(PyDevicePort::new(link)),
            Err(EngineError::Device(e)) => Err(e.into()),
            Err(e) => Err(e.into()),
        }
    }

    /// Attach a USRP radio (chan_usrp's and Analog_Bridge's packet stream) as the local radio:
    /// a thread of the engine binds `listen` ("ip:port"), sends to `peer`. `settings` may hold
    /// "rx_gain_db", "tx_gain_db" (dB), "prefill_frames" (frames held before a transmission
    /// plays, default 3), "queue_frames" (most frames held, default 25), "rx_timeout_ms" (a
    /// transmission silent this long without its keyup-0 is over and the peer reported lost,
    /// default 300) and "talkgroup" (default 0). Its carrier, DTMF, caller metadata and peer
    /// state come as `Usrp*` events.
    #[pyo3(signature = (listen, peer, settings = None, *, station = 0))]
    fn open_usrp(
        &self,
        listen: &str,
        peer: &str,
        settings: Option<&Bound<'_, PyDict>>,
        station: usize,
    ) -> PyResult<super::usrp::PyUsrpPort> {
        let parse = |what: &str, s: &str| -> PyResult<SocketAddr> {
            s.parse::<SocketAddr>().map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "USRP {what} {s:?} is not an ip:port address"
                ))
            })
        };
        let (listen, peer) = (parse("listen", listen)?, parse("peer", peer)?);
        let s = super::usrp::Settings::from_py(settings)?;
        let mut radio = crate::usrp::UsrpRadio::new(crate::usrp::UsrpConfig {
            station_rate: self.inner.rate(),
            prefill_frames: s.prefill_frames,
            queue_frames: s.queue_frames,
            rx_timeout_ms: s.rx_timeout_ms,
            talkgroup: s.talkgroup,
        })?;
        radio.set_rx_gain_db(s.rx_gain_db)?;
        radio.set_tx_gain_db(s.tx_gain_db)?;
        Ok(super::usrp::PyUsrpPort::new(
            self.inner.attach_usrp_at(station, radio, listen, peer)?,
        ))
    }

    /// Link station `station`'s leg `id` to station `peer_station`'s leg `peer_id` inside the
    /// engine (no datagram): each is a member of its conference in its `mode`, what one hears
    /// the other says a tick later, and voice keys the receiving end (`RxKeyed`). Either leg's
    /// `remove_leg` ends the link.
    #[pyo3(signature = (id, peer_station, peer_id, mode = "transceive", peer_mode = "transceive", *, station = 0))]
    fn add_local_link(
        &self,
        id: u16,
        peer_station: usize,
        peer_id: u16,
        mode: &str,
        peer_mode: &str,
        station: usize,
    ) -> PyResult<()> {
        Ok(self.inner.command_at(
            station,
            Command::AddLocalLink {
                id,
                mode: mode_from_str(mode)?,
                station: peer_station,
                peer_id,
                peer_mode: mode_from_str(peer_mode)?,
            },
        )?)
    }

    /// How many stations (conferences, one per hosted node) the engine mixes.
    #[getter]
    fn stations(&self) -> usize {
        self.inner.stations()
    }

    /// Samples per 20 ms frame at the station rate.
    #[getter]
    fn frame_len(&self) -> usize {
        self.inner.frame_len()
    }

    #[getter]
    fn rate(&self) -> u32 {
        self.inner.rate()
    }

    /// Media clock timing: ticks, restarts after stalls, lateness p50/p99/max in µs.
    fn tick_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.inner.tick_stats();
        let d = PyDict::new(py);
        d.set_item("ticks", t.ticks)?;
        d.set_item("skipped", t.skipped)?;
        d.set_item("p50_us", t.p50_us)?;
        d.set_item("p99_us", t.p99_us)?;
        d.set_item("max_us", t.max_us)?;
        Ok(d)
    }

    /// One leg's jitter statistics as of the last tick, or None when it has no leg.
    fn leg_jitter_stats<'py>(
        &self,
        py: Python<'py>,
        callno: u16,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.inner.leg_jitter_stats(callno) {
            Some(s) => Ok(Some(jitter_to_py(py, &s)?)),
            None => Ok(None),
        }
    }

    /// [(callno, stats dict)] for every leg, as of the last tick.
    fn jitter_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (callno, s) in self.inner.jitter_stats() {
            out.append((callno, jitter_to_py(py, &s)?))?;
        }
        Ok(out)
    }

    /// Every meter of station `station` as of the last statistics tick (about every 0.5 s): {"legs": [(callno,
    /// {"rx": reading, "tx": reading, "gain_db": float | None})], "local": {"rx", "tx"}}, each
    /// reading a dict of `lufs` (None before 400 ms of speech), `peak_dbfs`, `clipped`,
    /// `speech`.
    #[pyo3(signature = (*, station = 0))]
    fn levels<'py>(&self, py: Python<'py>, station: usize) -> PyResult<Bound<'py, PyDict>> {
        use super::loudness::reading_to_py;
        let levels = self.inner.levels(station);
        let legs = PyList::empty(py);
        for l in &levels.legs {
            let d = PyDict::new(py);
            d.set_item("rx", reading_to_py(py, &l.rx)?)?;
            d.set_item("tx", reading_to_py(py, &l.tx)?)?;
            d.set_item("gain_db", l.gain_db.map(|g| (g * 100.0).round() / 100.0))?;
            legs.append((l.callno, d))?;
        }
        let out = PyDict::new(py);
        out.set_item("legs", legs)?;
        match levels.local {
            Some((rx, tx)) => {
                let d = PyDict::new(py);
                d.set_item("rx", reading_to_py(py, &rx)?)?;
                d.set_item("tx", reading_to_py(py, &tx)?)?;
                out.set_item("local", d)?;
            }
            None => out.set_item("local", py.None())?,
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
        d.set_item("truncated", c.truncated)?;
        d.set_item("kernel_drops", c.kernel_drops)?;
        d.set_item("recv_calls", c.recv_calls)?;
        d.set_item("send_calls", c.send_calls)?;
        d.set_item("wakeups", c.wakeups)?;
        d.set_item("rcvbuf_bytes", c.rcvbuf_bytes)?;
        d.set_item("sndbuf_bytes", c.sndbuf_bytes)?;
        Ok(d)
    }

    /// The WireGuard tunnel's health (None without one): {"state": "down" | "handshaking" |
    /// "up", "listen": the outer "ip:port", "endpoint": "ip:port" | None, "last_handshake_s": float | None, "handshakes",
    /// "handshake_attempts", "rx_bytes", "tx_bytes", "dropped_outer", "dropped_inner",
    /// "no_route", "public_key": bytes}.
    fn tunnel<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.inner.tunnel() {
            Some(t) => Ok(Some(tunnel_to_py(py, &t)?)),
            None => Ok(None),
        }
    }

    /// What waits in the engine's queues now: {"frames", "events", "commands", "speaker"}.
    fn queue_depths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let q = self.inner.queue_depths();
        let d = PyDict::new(py);
        d.set_item("frames", q.frames)?;
        d.set_item("events", q.events)?;
        d.set_item("commands", q.commands)?;
        d.set_item("speaker", q.speaker)?;
        Ok(d)
    }

    /// Bind the EchoLink ports on `bind_ip` (UDP `audio_port` and `control_port`; 0 picks a
    /// free one) and poll them from the engine thread; returns the bound (audio, control)
    /// addresses. Control datagrams, and text on the audio port, come as `EchoLinkReceived`
    /// events; audio goes to the EchoLink legs.
    #[pyo3(signature = (bind_ip, audio_port = 5198, control_port = 5199))]
    fn echolink_open<'py>(
        &self,
        py: Python<'py>,
        bind_ip: &str,
        audio_port: u16,
        control_port: u16,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let ip = addr_from_py(bind_ip, 0)?.ip();
        let (audio, control) =
            py.detach(|| self.inner.echolink_open(ip, audio_port, control_port))?;
        (addr_to_py(py, audio)?, addr_to_py(py, control)?).into_pyobject(py)
    }

    /// Close the EchoLink ports (idempotent).
    fn echolink_close(&self) {
        self.inner.echolink_close();
    }

    /// Send `data` to an EchoLink station at `ip`: kind "control" from the control port to its
    /// control port, "text" from the audio port to its audio port (`port` overrides the
    /// station's port, which is ours by the protocol).
    #[pyo3(signature = (kind, data, ip, port = None))]
    fn echolink_send(&self, kind: &str, data: &[u8], ip: &str, port: Option<u16>) -> PyResult<()> {
        let kind = super::echolink::kind_from_str(kind)?;
        let (audio, control) = self
            .inner
            .echolink_addrs()
            .ok_or(EngineError::EchoLinkClosed)?;
        let ours = match kind {
            EchoLinkKind::Control => control.port(),
            EchoLinkKind::Text => audio.port(),
        };
        let to = addr_from_py(ip, port.unwrap_or(ours))?;
        Ok(self.inner.echolink_send(kind, data, to)?)
    }

    /// Add an EchoLink station's leg `leg` (32768..=65535, outside IAX2's call numbers): its
    /// audio packets from `ip` go through the leg's jitter buffer into the conference, and
    /// the conference's mix for it goes to `ip`:`port` (our audio port by default, as the
    /// protocol fixes it) only while there is audio for it. `keying` as for `add_leg`
    /// ("voice", as a linked node keys, by default). `station` is the hosted node whose
    /// conference it joins. Failures come as `CommandFailed`.
    #[pyo3(signature = (leg, ip, port = None, mode = "transceive", keying = "voice", dtmf = false, *, station = 0))]
    #[allow(clippy::too_many_arguments)]
    fn add_echolink_leg(
        &self,
        leg: u16,
        ip: &str,
        port: Option<u16>,
        mode: &str,
        keying: &str,
        dtmf: bool,
        station: usize,
    ) -> PyResult<()> {
        echolink_leg_id(leg)?;
        let ours = self.inner.echolink_addrs().map_or(5198, |(a, _)| a.port());
        let to = addr_from_py(ip, port.unwrap_or(ours))?;
        Ok(self.inner.command_at(
            station,
            Command::AddEchoLinkLeg(EchoLinkLegSpec {
                leg,
                ip: to.ip(),
                to,
                mode: mode_from_str(mode)?,
                keying: keying_from_str(keying)?,
                dtmf,
            }),
        )?)
    }

    /// Remove an EchoLink station's leg (ValueError for an IAX2 call number).
    #[pyo3(signature = (leg, *, station = 0))]
    fn remove_echolink_leg(&self, leg: u16, station: usize) -> PyResult<()> {
        echolink_leg_id(leg)?;
        Ok(self.inner.command_at(station, Command::RemoveLeg(leg))?)
    }

    /// One EchoLink leg's counters as of the last tick (None without the leg):
    /// packets_in, frames_in, packets_malformed, frames_bad, seq_gaps, packets_out,
    /// frames_out. Its jitter statistics are `leg_jitter_stats(leg)`.
    fn echolink_leg_stats<'py>(
        &self,
        py: Python<'py>,
        leg: u16,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner
            .echolink_leg_stats(leg)
            .map(|s| super::echolink::leg_stats_to_py(py, &s))
            .transpose()
    }

    /// What the EchoLink ports saw and sent, as a dict of ints.
    fn echolink_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        super::echolink::counters_to_py(py, &self.inner.echolink_counters())
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
