//! The station's media path: legs, the conference and the local radio, one tick at a time.
//!
//! A leg is one call's audio: a jitter buffer for what the peer sends, codec and resampler at its
//! edge, and the state needed to send mini frames back. Every 20 ms [`Station::tick`] pulls one
//! frame from each leg (or concealment, or nothing when the peer is not talking), mixes at the
//! station rate, and produces, per leg that has something to hear, one encoded frame ready to go
//! out as a mini frame. When a frame cannot go as a mini frame (start of a talk spurt, a codec
//! change, or a change of the timestamp's upper bits) the tick hands it to Python instead, which
//! sends it as a full voice frame with the call's sequence numbers.
//!
//! Pure `&mut self` logic fed with `now_ms`: no socket, no clock, no thread (see `engine/`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::codec::Codec;
use crate::inband::InbandDtmf;
use crate::jitter::{Concealer, Concealment, ControlKind, JitterBuffer, JitterConfig, JitterStats};
use crate::loudness::{LoudnessMeter, LoudnessReading, NormalizeSettings, Normalizer};
use crate::mixer::Conference;
use crate::parrot::{Parrot, ParrotSettings};
use crate::player::{Destination, Player, PlayerError, PlayerEvent};

mod echolink;
mod leg;
mod local_link;
mod output;
#[cfg(test)]
mod tests;
mod tick;

pub use echolink::{
    EchoLinkLegSpec, EchoLinkLegStats, EchoLinkOutput, EchoLinkRoute, FIRST_LEG, TX_HANG_MS,
};
pub use output::{Outgoing, TickOutput};

use leg::Edge;

/// Frame duration of the whole media path.
pub const FRAME_MS: u32 = 20;

/// How a leg takes part in the conference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegMode {
    /// Hears the conference and is heard (a call, or a `*3` link).
    Transceive,
    /// Is heard but hears nothing back (a `*2` monitor link dialled by us receives only).
    ReceiveOnly,
    /// Hears the conference but is not mixed in (a monitor link a peer holds on us).
    TransmitOnly,
    /// Heard by the local radio (speaker and transmitter) only, never by the other members, and
    /// hears nothing back: app_rpt's local monitor (`ilink 8`).
    LocalOnly,
}

impl LegMode {
    fn transmits(self) -> bool {
        matches!(self, LegMode::Transceive | LegMode::TransmitOnly)
    }
    fn receives(self) -> bool {
        matches!(
            self,
            LegMode::Transceive | LegMode::ReceiveOnly | LegMode::LocalOnly
        )
    }
}

/// How a leg's received audio keys it, which decides when it is mixed into the conference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxKeying {
    /// Every frame the jitter buffer delivers is mixed; the leg counts as keyed while it talks.
    Always,
    /// A plain call: mixed while its level holds a VOX gate open, so a phone that streams
    /// silence does not hold every transceive link keyed.
    Vox,
    /// A modern AllStarLink link (`!NEWKEY1!`, and every link before its handshake): voice
    /// presence keys it; RADIO_UNKEY or [`RX_LINGER_MS`] without voice unkeys it.
    Voice,
    /// A legacy link (no handshake, or `!NEWKEY!`): RADIO_KEY keys, RADIO_UNKEY unkeys, and its
    /// audio is mixed only while keyed (such peers may stream voice continuously).
    Control,
}

/// app_rpt's RX_LINGER_TIME: a voice-keyed link unkeys this long after its audio stops.
pub const RX_LINGER_MS: u64 = 50;

/// VOX gate of plain calls: a 20 ms frame at or above this RMS level (dBFS) opens it. Low
/// enough for quiet speech, far above a phone's idle line or decoded µ-law silence.
pub const VOX_OPEN_DBFS: f64 = -50.0;

/// Queued frames the VOX gate looks ahead: it opens this many frames (60 ms) before the first
/// one above the threshold, when the jitter buffer already holds them.
pub const VOX_LOOKAHEAD_FRAMES: usize = 3;

/// How long the VOX gate stays open after the last frame above the threshold: longer than the
/// pauses between words, so a sentence is one talk spurt on the links.
pub const VOX_HANG_MS: u64 = 800;

/// The conference counts as active this long after its last talker (so pauses between words
/// and VOX or linger gaps are not reported as the end of a conversation).
pub const ACTIVITY_HANG_MS: u64 = 500;

/// What Python tells the engine when a call's media starts.
#[derive(Debug, Clone)]
pub struct LegSpec {
    /// Our call number (the `scall` of what we send).
    pub callno: u16,
    /// The peer's call number: mini frames from the peer carry it as their source.
    pub peer_callno: u16,
    pub peer: SocketAddr,
    /// Codec of what we send (the negotiated format); what we receive follows the peer's full
    /// voice frames.
    pub codec: Codec,
    pub mode: LegMode,
    /// How the leg's received audio keys it.
    pub keying: RxKeying,
    /// The call's own timestamp clock (ms since its first transmission) at `now_ms`, so mini
    /// frames continue the timeline Python's full frames use.
    pub call_ts_ms: u32,
    /// Decode in-band DTMF in the leg's received audio (and mute the tones from the conference).
    pub dtmf: bool,
    /// A node-to-node link (not a call): announcements reach it only as
    /// [`Destination::AirAndLinks`].
    pub link: bool,
    /// Normalise the leg's received voice (`Some`), whatever the station's default (`None`).
    pub normalize: Option<bool>,
}

/// One leg's meters: what arrives (before normalisation) and what we send it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LegLevels {
    pub callno: u16,
    pub rx: LoudnessReading,
    pub tx: LoudnessReading,
    /// The normaliser's gain on what arrives, dB (`None` when the leg is not normalised).
    pub gain_db: Option<f64>,
}

/// Every meter of the station, as of a tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Levels {
    pub legs: Vec<LegLevels>,
    /// The local radio: what its receiver gives the conference, what its output plays.
    pub local: Option<(LoudnessReading, LoudnessReading)>,
}

/// Something Python must act on, produced by a tick or a received frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaEvent {
    /// Send this payload as a full voice frame (the call's sequence numbers are Python's).
    FullVoice {
        callno: u16,
        format: u64,
        ts: u32,
        payload: Vec<u8>,
        /// The first frame of a talk spurt towards this leg (a legacy link sends RADIO_KEY
        /// before it).
        spurt_start: bool,
    },
    /// The conference went quiet for this leg after a talk spurt (a radio link sends UNKEY).
    SpurtEnded { callno: u16, ts: u32 },
    /// A control event that travelled with the peer's audio reached the playout point.
    Control {
        callno: u16,
        kind: ControlKind,
        ts: u32,
        /// Text of a TEXT frame; empty for the others.
        payload: Vec<u8>,
    },
    /// A mini frame arrived before any full voice frame: Python answers with VNAK.
    MiniBeforeFull { callno: u16 },
    /// The leg's receiver keyed (`true`) or unkeyed, as its [`RxKeying`] defines it.
    RxKey { callno: u16, keyed: bool },
    /// An in-band DTMF digit was pressed in a member's received audio: a leg's (`callno`), or
    /// the local radio's receiver (`None`). Reported once per press, about 40 ms after the
    /// tone began.
    Dtmf { callno: Option<u16>, digit: char },
    /// An announcement clip started or finished playing.
    Play(PlayerEvent),
    /// Somebody started talking in the conference (a call, a link, the local radio, the
    /// operator's key), or nobody has for [`ACTIVITY_HANG_MS`]. Announcements never count.
    Activity { active: bool },
    /// The local radio started (`true`) or stopped hearing audio from the conference (or its
    /// parrot's playback, or the one announcement allowed to key it, the station ID under
    /// `cw_keys_when_idle`): what its transmitter has to send. Python keys the PTT on it (with
    /// the hang time). Other announcements are mixed into its output without keying it.
    LocalTx { on: bool },
}

/// One call's audio at the station's edge (`leg.rs`: the commands that add, change and feed it).
#[derive(Debug)]
struct Leg {
    spec: LegSpec,
    slot: usize,
    jitter: JitterBuffer,
    /// Codec of the peer's audio: the format of its last full voice frame.
    rx_codec: Option<Codec>,
    rx_edge: Edge,
    /// Where a queued frame is resampled ahead of its turn (concealment blends toward it)
    /// without moving `rx_edge`.
    peek_edge: Edge,
    tx_edge: Edge,
    /// Timestamp of the peer's last full frame, for unwrapping mini frame timestamps.
    rx_last_full_ts: u32,
    /// Concealment of lost frames, fed every station-rate frame that plays.
    plc: Concealer,
    /// This tick's frame of the leg (good or concealed).
    pcm: Vec<i16>,
    /// Our send clock: the call timestamp corresponding to `ts_origin_ms` of the engine clock.
    ts_base: u32,
    ts_origin_ms: u64,
    talking_out: bool,
    last_full_ts: Option<u32>,
    last_tx_codec: Option<Codec>,
    mini_before_full_reported: bool,
    /// Whether the leg's receiver is keyed now (reported on every change).
    rx_keyed: bool,
    /// When the leg last delivered audio (voice or concealment), for [`RX_LINGER_MS`].
    last_audio_ms: u64,
    /// The VOX gate is open until this time.
    vox_until_ms: u64,
    /// In-band DTMF detection, when on for this leg.
    inband: Option<InbandDtmf>,
    /// The leg's own parrot, in parrot mode (then it is not mixed into the conference).
    parrot: Option<Parrot>,
    /// A local link's end (`local_link.rs`): its audio comes from and goes to another station
    /// of the engine, never to the network.
    local: Option<local_link::LocalEnd>,
    /// An EchoLink station's GSM and packet edge (`echolink.rs`); None for IAX2 legs.
    echolink: Option<Box<echolink::EchoLinkEdge>>,
    /// What arrives (every frame delivered, good or concealed) and what we send (when it is
    /// the leg's own mix: see `Station::shared_tx`).
    rx_meter: LoudnessMeter,
    tx_meter: LoudnessMeter,
    /// The last frame sent was the shared conference mix, metered once for all its listeners.
    tx_shared: bool,
    /// The normaliser of what arrives, when on; and whether it ran last tick.
    normalizer: Option<Normalizer>,
    normalizing: bool,
}

/// The conference, its legs and the local radio.
#[derive(Debug)]
pub struct Station {
    rate: u32,
    frame_len: usize,
    conference: Conference,
    legs: Vec<Leg>,
    by_callno: HashMap<u16, usize>,
    by_peer: HashMap<(SocketAddr, u16), usize>,
    /// EchoLink legs by their station's address.
    by_echolink: HashMap<IpAddr, u16>,
    local_slot: Option<usize>,
    /// The local radio is a member by topology (it hears the conference and its speaker plays).
    local_member: bool,
    /// The operator keyed the local source (`POST /key`): it talks every tick, silence
    /// included, so every leg gets one unbroken talk spurt until unkey.
    local_keyed: bool,
    local_in: Option<Vec<i16>>,
    local_out: Vec<i16>,
    local_hears: bool,
    /// In-band DTMF detection on the local radio's receive audio, when on.
    local_dtmf: Option<InbandDtmf>,
    /// `local_hears` as last reported in a [`MediaEvent::LocalTx`].
    local_tx: bool,
    /// The local receiver has a carrier detector: its audio is heard only while keyed, never
    /// by its own level (the squelch tail and an open receiver's noise stay out).
    local_gated: bool,
    jitter_cfg: JitterConfig,
    /// How new legs conceal lost frames.
    concealment: Concealment,
    /// A frame of zeros: what a muted member puts in the conference.
    silence: Vec<i16>,
    /// Announcements mixed into the outputs.
    player: Player,
    player_events: Vec<PlayerEvent>,
    /// The local output carries audio this tick (the radio is a member, or a clip plays).
    local_speaker: bool,
    /// This tick's audio from local-only legs, for the local output alone.
    local_only: Vec<i16>,
    /// A local-only leg was heard this tick.
    local_only_heard: bool,
    /// Scratch: a leg's conference mix with the announcements added.
    with_clips: Vec<i16>,
    /// Whether the conference is active (reported on change), and until when it stays so.
    active: bool,
    active_until_ms: u64,
    /// Parrot mode: every member talks to its own parrot instead of the conference.
    parrot: Option<ParrotSettings>,
    local_parrot: Option<Parrot>,
    /// Normalisation of legs without an override of their own, and its settings for all.
    normalize: bool,
    normalize_settings: NormalizeSettings,
    /// What the listeners who share one payload hear (the conference total, with the clips for
    /// calls `[0]` or for links `[1]`), metered once per tick for all of them: a hub's
    /// thousands of listeners must not each run a meter on the same frame.
    shared_tx: [LoudnessMeter; 2],
    /// The local radio's meters: its receiver into the conference, its output.
    local_rx_meter: LoudnessMeter,
    local_tx_meter: LoudnessMeter,
    // Scratch buffers reused every tick so steady state allocates nothing.
    decoded: Vec<i16>,
    resampled: Vec<i16>,
}

/// Errors of the media path (commands naming a leg that does not exist, and the like).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MediaError {
    NoSuchLeg(u16),
    LegExists(u16),
    BadPayload(u16),
    /// The jitter buffer refused its configuration (a bug: the defaults are valid).
    Jitter,
    /// In-band DTMF detection does not run at this station rate.
    DtmfRate(u32),
    /// The announcement player refused a clip.
    Player(PlayerError),
    /// An EchoLink leg id inside IAX2's call-number space.
    EchoLinkLegId(u16),
    /// An EchoLink station at this address already has a leg.
    EchoLinkStationExists(IpAddr),
}

impl std::fmt::Display for MediaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MediaError::NoSuchLeg(c) => write!(f, "no media leg for call {c}"),
            MediaError::LegExists(c) => write!(f, "call {c} already has a media leg"),
            MediaError::BadPayload(c) => {
                write!(f, "voice payload for call {c} does not fit its codec")
            }
            MediaError::Jitter => write!(f, "jitter buffer configuration rejected"),
            MediaError::DtmfRate(r) => write!(f, "in-band DTMF does not run at {r} Hz"),
            MediaError::Player(e) => e.fmt(f),
            MediaError::EchoLinkLegId(id) => write!(
                f,
                "EchoLink leg id {id} is an IAX2 call number (accepted: {FIRST_LEG}..=65535)"
            ),
            MediaError::EchoLinkStationExists(ip) => {
                write!(f, "the EchoLink station at {ip} already has a leg")
            }
        }
    }
}

impl std::error::Error for MediaError {}

impl Station {
    /// A station mixing at `rate` (8000 or 16000).
    pub fn new(rate: u32, mix_minus: bool) -> Station {
        let frame_len = (rate / 1000 * FRAME_MS) as usize;
        Station {
            rate,
            frame_len,
            conference: Conference::new(frame_len, mix_minus),
            legs: Vec::new(),
            by_callno: HashMap::new(),
            by_peer: HashMap::new(),
            by_echolink: HashMap::new(),
            local_slot: None,
            local_member: false,
            local_keyed: false,
            local_in: None,
            local_out: vec![0; frame_len],
            local_hears: false,
            local_dtmf: None,
            local_tx: false,
            local_gated: false,
            jitter_cfg: JitterConfig::default(),
            concealment: Concealment::default(),
            silence: vec![0; frame_len],
            local_only: vec![0; frame_len],
            local_only_heard: false,
            player: Player::new(rate, frame_len),
            player_events: Vec::new(),
            local_speaker: false,
            with_clips: Vec::with_capacity(frame_len),
            active: false,
            active_until_ms: 0,
            parrot: None,
            local_parrot: None,
            normalize: false,
            normalize_settings: NormalizeSettings::default(),
            shared_tx: [LoudnessMeter::new(rate), LoudnessMeter::new(rate)],
            local_rx_meter: LoudnessMeter::new(rate),
            local_tx_meter: LoudnessMeter::new(rate),
            decoded: Vec::with_capacity(frame_len * 2),
            resampled: Vec::with_capacity(frame_len * 2),
        }
    }

    pub fn rate(&self) -> u32 {
        self.rate
    }

    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    pub fn leg_count(&self) -> usize {
        self.legs.len()
    }

    pub fn set_mix_minus(&mut self, on: bool) {
        self.conference.set_mix_minus(on);
    }

    /// Put the local radio in the conference, or take it out. Audio of legs is untouched.
    pub fn set_local_radio(&mut self, on: bool) {
        self.local_member = on;
        self.sync_local_slot();
    }

    /// Key or unkey the local source (the operator's push-to-talk). While keyed it is a
    /// talking member whatever the topology.
    pub fn set_local_keyed(&mut self, on: bool) {
        self.local_keyed = on;
        self.sync_local_slot();
    }

    pub fn local_keyed(&self) -> bool {
        self.local_keyed
    }

    /// With a carrier detector on the local receiver, its audio counts only while keyed.
    pub fn set_local_gated(&mut self, on: bool) {
        self.local_gated = on;
    }

    fn sync_local_slot(&mut self) {
        let wanted = self.local_member || self.local_keyed;
        match (wanted, self.local_slot) {
            (true, None) => self.local_slot = Some(self.conference.add()),
            (false, Some(slot)) => {
                let _ = self.conference.remove(slot);
                self.local_slot = None;
                self.local_in = None;
            }
            _ => {}
        }
        if !self.local_member {
            self.local_out.iter_mut().for_each(|s| *s = 0);
        }
    }

    /// Whether the local radio is a member by topology (its speaker plays the conference).
    pub fn local_radio(&self) -> bool {
        self.local_member
    }

    /// Nothing here changes with time alone: no leg, no clip playing, the local source neither
    /// keyed nor heard, no activity hang running, no microphone frame waiting, no parrot. The
    /// engine may then stop its clock until a datagram or a command comes; a tick after such a
    /// sleep starts from a clean state (every output quiet, no event owed).
    pub fn idle(&self) -> bool {
        self.legs.is_empty()
            && self.player.playing() == 0
            && !self.local_keyed
            && !self.local_tx
            && !self.active
            && self.local_in.is_none()
            && !self.local_only_heard
            && self.parrot.is_none()
    }

    /// The local microphone's frame for the next tick (station rate).
    pub fn put_local(&mut self, pcm: &[i16]) {
        if self.local_slot.is_some() && pcm.len() == self.frame_len {
            // Unkeyed, only a frame with signal counts as talking, so an idle microphone does
            // not hold every leg in a talk spurt (and behind a carrier detector none does);
            // keyed, every frame does.
            if self.local_keyed || (!self.local_gated && pcm.iter().any(|s| s.unsigned_abs() > 32))
            {
                self.local_in = Some(pcm.to_vec());
            }
        }
    }

    /// What the local speaker plays for the last tick (silence when nobody talked).
    pub fn local_output(&self) -> &[i16] {
        &self.local_out
    }

    /// Whether the local transmitter has something to send this tick: the conference gives
    /// the local radio audio, or a clip allowed to key it plays (the station ID under
    /// `cw_keys_when_idle`). Other announcements are mixed into the output without keying.
    pub fn local_hears_audio(&self) -> bool {
        self.local_hears
    }

    /// Whether the local output carries audio this tick: the local radio is a member, or an
    /// announcement plays to it (to the monitor speaker even when the radio is not a member).
    pub fn local_speaker(&self) -> bool {
        self.local_speaker
    }

    /// Queue an announcement clip (station rate) to start at the next tick. A refused clip
    /// still ends with a `Finished` event (not completed) in `events`, so nobody waits for it.
    pub fn play(
        &mut self,
        id: u32,
        pcm: Vec<i16>,
        destination: Destination,
        keys_local: bool,
        events: &mut Vec<MediaEvent>,
    ) -> Result<(), MediaError> {
        self.player
            .play(id, pcm, destination, keys_local)
            .map_err(|e| {
                events.push(MediaEvent::Play(PlayerEvent::Finished {
                    id,
                    completed: false,
                }));
                MediaError::Player(e)
            })
    }

    /// Stop an announcement clip (its `Finished` event goes to `events`); unknown ids are
    /// ignored (the clip may have just finished).
    pub fn stop_playing(&mut self, id: u32, events: &mut Vec<MediaEvent>) {
        self.player.stop(id, &mut self.player_events);
        events.extend(self.player_events.drain(..).map(MediaEvent::Play));
    }

    fn inband(&self) -> Result<InbandDtmf, MediaError> {
        InbandDtmf::new(self.rate).map_err(|_| MediaError::DtmfRate(self.rate))
    }

    /// Parrot mode (`Some`) or the conference (`None`). In parrot mode every member's audio goes
    /// to its own parrot, which plays it back to that member alone (`rust/parrot.rs`);
    /// announcements still play. Switching drops every recording.
    pub fn set_parrot(&mut self, settings: Option<ParrotSettings>) {
        self.parrot = settings;
        let (rate, frame_len) = (self.rate, self.frame_len);
        let make = || settings.map(|p| Parrot::new(rate, frame_len, p));
        for leg in &mut self.legs {
            leg.parrot = make();
        }
        self.local_parrot = make();
    }

    pub fn parrot(&self) -> Option<ParrotSettings> {
        self.parrot
    }

    /// Turn in-band DTMF detection on the local radio's receive audio on or off.
    pub fn set_local_dtmf(&mut self, on: bool) -> Result<(), MediaError> {
        self.local_dtmf = match (on, self.local_dtmf.take()) {
            (true, Some(kept)) => Some(kept),
            (true, None) => Some(self.inband()?),
            (false, _) => None,
        };
        Ok(())
    }

    /// Normalise every leg's received voice (`on`, for legs without an override of their
    /// own) to `settings` (all legs). A leg that stays normalised keeps what it learnt.
    pub fn set_normalize(&mut self, on: bool, settings: NormalizeSettings) {
        self.normalize = on;
        self.normalize_settings = settings;
        let rate = self.rate;
        for leg in &mut self.legs {
            let wanted = leg.spec.normalize.unwrap_or(on);
            match (wanted, leg.normalizer.as_mut()) {
                (true, Some(n)) => n.set_settings(settings),
                (true, None) => leg.normalizer = Some(Normalizer::new(rate, settings)),
                (false, _) => leg.normalizer = None,
            }
        }
    }

    pub fn normalize(&self) -> (bool, NormalizeSettings) {
        (self.normalize, self.normalize_settings)
    }

    /// Every meter, written into a reused buffer.
    pub fn fill_levels(&self, out: &mut Levels) {
        out.legs.clear();
        let shared = &self.shared_tx;
        out.legs.extend(self.legs.iter().map(|l| LegLevels {
            callno: l.spec.callno,
            rx: l.rx_meter.reading(),
            tx: match shared.get(usize::from(l.spec.link)) {
                Some(meter) if l.tx_shared => meter.reading(),
                _ => l.tx_meter.reading(),
            },
            gain_db: l.normalizer.as_ref().map(Normalizer::gain_db),
        }));
        out.local = Some((self.local_rx_meter.reading(), self.local_tx_meter.reading()));
    }

    /// Every leg's jitter statistics, written into a reused buffer.
    pub fn fill_jitter_stats(&self, out: &mut Vec<(u16, JitterStats)>) {
        out.clear();
        out.extend(self.legs.iter().map(|l| (l.spec.callno, l.jitter.stats())));
    }

    /// Capacity of every buffer the tick touches, in elements (for the no-growth test).
    pub fn buffer_capacity(&self) -> usize {
        let scratch = [
            &self.decoded,
            &self.resampled,
            &self.local_out,
            &self.with_clips,
        ];
        let legs = self.legs.iter().map(|l| {
            l.plc.capacity_samples()
                + l.pcm.capacity()
                + l.inband.as_ref().map_or(0, InbandDtmf::capacity_samples)
                + l.parrot.as_ref().map_or(0, Parrot::capacity_samples)
        });
        let local_dtmf = self.local_dtmf.as_ref();
        scratch.iter().map(|v| v.capacity()).sum::<usize>()
            + self.conference.capacity_samples()
            + self.player.capacity_samples()
            + legs.sum::<usize>()
            + local_dtmf.map_or(0, InbandDtmf::capacity_samples)
    }

    /// How legs added from now on conceal lost frames (the bench compares the two).
    pub fn set_concealment(&mut self, concealment: Concealment) {
        self.concealment = concealment;
    }

    /// The jitter buffer of legs added from now on (validated when a leg is added).
    pub fn set_jitter_config(&mut self, cfg: JitterConfig) {
        self.jitter_cfg = cfg;
    }

    pub fn jitter_stats(&self, callno: u16) -> Option<JitterStats> {
        let idx = *self.by_callno.get(&callno)?;
        self.legs.get(idx).map(|l| l.jitter.stats())
    }
}
