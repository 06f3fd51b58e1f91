//! The engine's user-space work at hub scale, without sockets, for counting instructions.
//!
//! `tick_cost LEGS TALKERS TICKS [RATE [DTMF [NORMALIZE]]]` builds a station of LEGS µ-law legs
//! at 8 kHz (at RATE 16000 every leg has a resampler at its edge; DTMF 1 turns in-band
//! detection on for every leg; NORMALIZE 1 normalises every leg's voice), then for TICKS ticks parses one mini frame per talker (as the engine does with
//! each datagram it reads), hands it to its leg, runs the tick and builds the send batch the
//! transport would get. Run it under `valgrind --tool=callgrind` at two sizes: the difference
//! in instructions divided by the difference in legs and by TICKS is the user-space cost of
//! one leg-frame (docs/performance.md "Raspberry Pi 4" shows the method and the figures). It
//! measures nothing itself.

use std::hint::black_box;
use std::net::SocketAddr;

use _core::codec::Codec;
use _core::engine::send_batch_of;
use _core::frame::{self, Frame};
use _core::loudness::NormalizeSettings;
use _core::media::{LegMode, LegSpec, RxKeying, Station, TickOutput};
use _core::transport::OutDatagram;

fn arg(n: usize, default: usize) -> usize {
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let legs = arg(1, 2000);
    let talkers = arg(2, 2).min(legs);
    let ticks = arg(3, 500);
    let rate = arg(4, 8000) as u32;
    let dtmf = arg(5, 0) != 0;
    let normalize = arg(6, 0) != 0;
    let mut st = Station::new(rate, true);
    st.set_normalize(normalize, NormalizeSettings::default());
    let peer = |i: usize| SocketAddr::from(([127, 0, 0, 1], 10_000 + (i % 50_000) as u16));
    for i in 0..legs {
        let spec = LegSpec {
            callno: 2 + i as u16,
            peer_callno: 2 + i as u16,
            peer: peer(i),
            codec: Codec::Ulaw,
            mode: LegMode::Transceive,
            keying: RxKeying::Always,
            call_ts_ms: 0,
            dtmf,
            link: false,
            normalize: None,
        };
        if st.add_leg(spec, 0).is_err() {
            return;
        }
    }
    // A tone, so the talkers' audio is not silence.
    let pcm: Vec<i16> = (0..160)
        .map(|n| (3000.0 * (n as f64 * 0.314).sin()) as i16)
        .collect();
    let mut payload = Vec::new();
    Codec::Ulaw.encode(&pcm, &mut payload);
    for t in 0..talkers {
        let _ = st.push_full_voice(2 + t as u16, Codec::Ulaw, 0, &payload, 0);
    }
    let mut out = TickOutput::default();
    let mut events = Vec::new();
    let mut wire = Vec::with_capacity(4 + payload.len());
    let mut sent = 0usize;
    for k in 1..=ticks {
        let now = k as u64 * 20;
        for t in 0..talkers {
            wire.clear();
            frame::write_mini_header(2 + t as u16, (now & 0xFFFF) as u16, &mut wire);
            wire.extend_from_slice(&payload);
            if let Ok(Frame::Mini(mini)) = frame::parse(&wire) {
                st.on_mini(peer(t), &mini, now, &mut events);
            }
        }
        events.clear();
        out.clear();
        st.tick(now, &mut out);
        let batch = send_batch_of(&out);
        sent += black_box(&batch)
            .iter()
            .map(OutDatagram::len)
            .sum::<usize>();
    }
    println!("legs {legs} talkers {talkers} ticks {ticks} bytes {sent}");
}
