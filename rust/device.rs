//! The sound card edge: the local radio's audio between the device's rate and block size and the
//! station's 20 ms frames.
//!
//! A [`DeviceEdge`] takes each block the sound card delivers (native-endian int16 at the device
//! rate, any length) and gives back the block it plays, in one call per direction:
//!
//! - **Capture** (the radio's receiver, "rx"): convert to the station rate, apply the rx gain,
//!   meter, and hand over every complete 20 ms frame.
//! - **Playback** (the radio's transmitter, "tx"): take station frames as the block needs them,
//!   apply the tx gain, convert to the device rate, meter what is played.
//!
//! The device runs at the station rate when it can (nothing to convert) or at 48 kHz, where the
//! [`polyphase`](crate::polyphase) filters convert ÷6/×6 (8 kHz) or ÷3/×3 (16 kHz). Gains scale
//! the filter outputs before rounding, so they cost nothing extra and never clip inside the
//! filter. Where the frames come from and go to is the caller's business (closures), so this
//! stays a plain `&mut self` kernel; the engine binds it to its local port.

use std::fmt;

use crate::level::{gain_db_valid, gain_from_db, LevelMeter, Reading, GAIN_DB_MAX, GAIN_DB_MIN};
use crate::polyphase::{Decimator, Interpolator, DEVICE_RATE};
use crate::resample::Resample;
use crate::resample::{ne_at, to_i16, ResampleError};
use crate::vox::{VoxConfig, VoxError, VoxGate};

/// Length of the station's frames, as everywhere in the media path.
const FRAME_MS: u32 = 20;

/// Longest receive-audio delay accepted, in ms.
pub const RX_DELAY_MS_MAX: u32 = 1000;

/// Errors of the device edge.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceError {
    /// No conversion between this device rate and this station rate.
    Rate { device: u32, station: u32 },
    /// A station rate other than 8000 or 16000.
    StationRate(u32),
    /// A gain outside [`GAIN_DB_MIN`]..=[`GAIN_DB_MAX`] (or not a number).
    Gain { db: f64 },
    /// Native-endian 16-bit PCM bytes with an odd byte count.
    OddLength { len: usize },
    /// The rate converter refused its input.
    Convert(ResampleError),
    /// A receive-audio delay above [`RX_DELAY_MS_MAX`].
    RxDelay { ms: u32 },
    /// VOX settings out of range.
    Vox(VoxError),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Rate { device, station } => write!(
                f,
                "a sound card at {device} Hz cannot serve a {station} Hz station (accepted \
                 device rates: {station}, {DEVICE_RATE})"
            ),
            DeviceError::StationRate(r) => {
                write!(f, "station rate {r} Hz (accepted: 8000, 16000)")
            }
            DeviceError::Gain { db } => write!(
                f,
                "gain {db} dB is out of range (accepted: {GAIN_DB_MIN} to +{GAIN_DB_MAX} dB)"
            ),
            DeviceError::OddLength { len } => write!(
                f,
                "16-bit audio must have an even byte count, got {len} bytes"
            ),
            DeviceError::Convert(e) => e.fmt(f),
            DeviceError::RxDelay { ms } => write!(
                f,
                "receive audio delay {ms} ms is out of range (accepted: 0 to {RX_DELAY_MS_MAX})"
            ),
            DeviceError::Vox(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DeviceError {}

impl From<VoxError> for DeviceError {
    fn from(e: VoxError) -> Self {
        DeviceError::Vox(e)
    }
}

impl From<ResampleError> for DeviceError {
    fn from(e: ResampleError) -> Self {
        match e {
            ResampleError::OddLength { len } => DeviceError::OddLength { len },
            other => DeviceError::Convert(other),
        }
    }
}

fn check_even(len: usize) -> Result<(), DeviceError> {
    if len % 2 == 0 {
        Ok(())
    } else {
        Err(DeviceError::OddLength { len })
    }
}

/// A gain as set (dB) and as applied (linear).
#[derive(Debug, Clone, Copy)]
struct Gain {
    db: f64,
    linear: f32,
}

impl Gain {
    const UNITY: Gain = Gain {
        db: 0.0,
        linear: 1.0,
    };

    fn new(db: f64) -> Result<Gain, DeviceError> {
        if gain_db_valid(db) {
            Ok(Gain {
                db,
                linear: gain_from_db(db),
            })
        } else {
            Err(DeviceError::Gain { db })
        }
    }
}

/// The rate converters of a device at 48 kHz.
#[derive(Debug, Clone)]
struct Converters {
    down: Decimator,
    up: Interpolator,
}

/// Rate conversion, gains and meters between one sound card and the station.
#[derive(Debug, Clone)]
pub struct DeviceEdge {
    device_rate: u32,
    station_rate: u32,
    frame_len: usize,
    /// None when the device runs at the station rate.
    conv: Option<Converters>,
    rx_gain: Gain,
    tx_gain: Gain,
    /// Metered at the station rate: what goes to the network.
    rx_meter: LevelMeter,
    /// Metered at the device rate: what the transmitter gets.
    tx_meter: LevelMeter,
    /// Captured station-rate samples not delivered yet: what does not fill a frame yet, and the
    /// newest `rx_delay` samples, held back on purpose.
    mic: Vec<i16>,
    /// The receive-audio delay in samples.
    rx_delay: usize,
    /// VOX on the captured audio (ahead of the delay), when the carrier comes from VOX.
    vox: Option<VoxGate>,
    /// Station-rate samples taken from the station and not yet played.
    speaker: Vec<i16>,
    /// One frame from the station.
    frame: Vec<i16>,
    /// Device-rate samples converted and not yet played (fewer than the factor).
    out: Vec<i16>,
}

impl DeviceEdge {
    /// An edge between a sound card at `device_rate` and a station at `station_rate`: the
    /// device rate must be the station rate or 48000.
    pub fn new(device_rate: u32, station_rate: u32) -> Result<Self, DeviceError> {
        if station_rate != 8000 && station_rate != 16000 {
            return Err(DeviceError::StationRate(station_rate));
        }
        let conv = if device_rate == station_rate {
            None
        } else if device_rate == DEVICE_RATE {
            let factor = DEVICE_RATE / station_rate;
            Some(Converters {
                down: Decimator::new(factor)?,
                up: Interpolator::new(factor)?,
            })
        } else {
            return Err(DeviceError::Rate {
                device: device_rate,
                station: station_rate,
            });
        };
        let frame_len = (station_rate / 1000 * FRAME_MS) as usize;
        Ok(DeviceEdge {
            device_rate,
            station_rate,
            frame_len,
            conv,
            rx_gain: Gain::UNITY,
            tx_gain: Gain::UNITY,
            rx_meter: LevelMeter::new(station_rate),
            tx_meter: LevelMeter::new(device_rate),
            mic: Vec::new(),
            rx_delay: 0,
            vox: None,
            speaker: Vec::new(),
            frame: vec![0; frame_len],
            out: Vec::new(),
        })
    }

    pub fn device_rate(&self) -> u32 {
        self.device_rate
    }

    pub fn station_rate(&self) -> u32 {
        self.station_rate
    }

    /// Samples in one station frame (20 ms).
    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// Device samples per station sample (1 when the device runs at the station rate).
    pub fn factor(&self) -> u32 {
        self.device_rate / self.station_rate
    }

    /// Delay the rate conversion adds in each direction, in milliseconds.
    pub fn filter_delay_ms(&self) -> f64 {
        self.conv
            .as_ref()
            .map_or(0.0, |c| c.up.delay() * 1000.0 / f64::from(self.device_rate))
    }

    pub fn rx_gain_db(&self) -> f64 {
        self.rx_gain.db
    }

    pub fn tx_gain_db(&self) -> f64 {
        self.tx_gain.db
    }

    /// Gain applied to the captured audio (the radio's receiver, toward the network).
    pub fn set_rx_gain_db(&mut self, db: f64) -> Result<(), DeviceError> {
        self.rx_gain = Gain::new(db)?;
        if let Some(c) = &mut self.conv {
            c.down.set_gain(self.rx_gain.linear);
        }
        Ok(())
    }

    /// Gain applied to the played audio (toward the radio's transmitter).
    pub fn set_tx_gain_db(&mut self, db: f64) -> Result<(), DeviceError> {
        self.tx_gain = Gain::new(db)?;
        if let Some(c) = &mut self.conv {
            c.up.set_gain(self.tx_gain.linear);
        }
        Ok(())
    }

    /// Delay the captured audio by `ms` before it reaches the station, so that when the carrier
    /// drops the node unkeys before the receiver's squelch tail would have been sent (simpleusb's
    /// `rxaudiodelay`). Carrier detection (COS, VOX) sees the audio undelayed.
    pub fn set_rx_delay_ms(&mut self, ms: u32) -> Result<(), DeviceError> {
        if ms > RX_DELAY_MS_MAX {
            return Err(DeviceError::RxDelay { ms });
        }
        let samples = (self.station_rate / 1000 * ms) as usize;
        if samples < self.rx_delay {
            // Audio held back for the longer delay is skipped rather than sent in a burst.
            let skip = (self.rx_delay - samples).min(self.mic.len());
            self.mic.drain(..skip);
        }
        self.rx_delay = samples;
        Ok(())
    }

    pub fn rx_delay_ms(&self) -> u32 {
        (self.rx_delay * 1000 / self.station_rate as usize) as u32
    }

    /// Run VOX on the captured audio (after the rx gain), or stop it (None).
    pub fn set_vox(&mut self, cfg: Option<VoxConfig>) -> Result<(), DeviceError> {
        self.vox = cfg
            .map(|c| VoxGate::new(self.station_rate, c))
            .transpose()?;
        Ok(())
    }

    /// VOX's new state when it changed since the last call (None also without VOX).
    pub fn take_vox_change(&mut self) -> Option<bool> {
        self.vox.as_mut().and_then(VoxGate::take_change)
    }

    /// Level of the captured audio after the rx gain, at the station rate.
    pub fn rx_level(&self) -> Reading {
        self.rx_meter.reading()
    }

    /// Level of the played audio after the tx gain, at the device rate.
    pub fn tx_level(&self) -> Reading {
        self.tx_meter.reading()
    }

    /// One captured block (native-endian int16 at the device rate): `deliver` is called with
    /// every 20 ms station frame it completes.
    pub fn capture(
        &mut self,
        input: &[u8],
        mut deliver: impl FnMut(&[i16]),
    ) -> Result<(), DeviceError> {
        check_even(input.len())?;
        let start = self.mic.len();
        match &mut self.conv {
            None => {
                let g = self.rx_gain.linear;
                self.mic.extend(
                    input
                        .chunks_exact(2)
                        .map(|c| to_i16(f32::from(ne_at(c, 0)) * g)),
                );
            }
            Some(c) => c.down.process_ne_bytes(input, &mut self.mic)?,
        }
        let fresh = self.mic.get(start..).unwrap_or_default();
        self.rx_meter.feed(fresh);
        if let Some(vox) = &mut self.vox {
            vox.feed(fresh);
        }
        let mut at = 0;
        while at + self.frame_len + self.rx_delay <= self.mic.len() {
            let Some(frame) = self.mic.get(at..at + self.frame_len) else {
                break;
            };
            deliver(frame);
            at += self.frame_len;
        }
        self.mic.drain(..at);
        Ok(())
    }

    /// Fills one playback block (native-endian int16 at the device rate). `pull` is asked for
    /// station frames as they are needed and returns false when none is ready: the missing part
    /// is played as silence, and a frame that comes later is played after it.
    pub fn playback(
        &mut self,
        output: &mut [u8],
        mut pull: impl FnMut(&mut [i16]) -> bool,
    ) -> Result<(), DeviceError> {
        check_even(output.len())?;
        let n = output.len() / 2;
        if self.out.len() < n {
            let factor = self.factor() as usize;
            let want = (n - self.out.len()).div_ceil(factor);
            while self.speaker.len() < want {
                if pull(&mut self.frame) {
                    self.speaker.extend_from_slice(&self.frame);
                } else {
                    self.speaker.resize(want, 0);
                }
            }
            let station = self.speaker.get(..want).unwrap_or_default();
            match &mut self.conv {
                None => {
                    let g = self.tx_gain.linear;
                    self.out
                        .extend(station.iter().map(|&x| to_i16(f32::from(x) * g)));
                }
                Some(c) => c.up.process(station, &mut self.out),
            }
            self.speaker.drain(..want);
        }
        let played = self.out.get(..n).unwrap_or_default();
        for (d, &s) in output.chunks_exact_mut(2).zip(played) {
            d.copy_from_slice(&s.to_ne_bytes());
        }
        self.tx_meter.feed(played);
        self.out.drain(..n);
        Ok(())
    }

    #[cfg(test)]
    fn buffered(&self) -> (usize, usize, usize) {
        (self.mic.len(), self.speaker.len(), self.out.len())
    }
}

#[cfg(test)]
mod tests;
