//! The delay follows the network's jitter (up when it rises, down when it calms), and a long run
//! never grows the storage.

use super::*;

/// Frames `k in 0..n` sent every 20 ms, each delayed by `delay(k)` ms.
fn jittered(n: u32, mut delay: impl FnMut(u32) -> u64) -> Vec<(u64, Pkt)> {
    (0..n)
        .map(|k| (T0 + 20 * u64::from(k) + delay(k), Pkt::V(20 * k)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// With uniform jitter below the target margin, once the history has warmed up no
    /// frame is lost, late or dropped.
    #[test]
    fn no_loss_once_the_delay_covers_the_jitter(seed in any::<u64>(), j in 0u64..=300) {
        let mut rng = Rng(seed);
        let n = 1500;
        let arrivals = jittered(n, |_| rng.below(j + 1));
        let mut jb = jb();
        let log = run(&mut jb, &arrivals, T0 + 20 * u64::from(n) + 2000);
        let played = voices(&log);
        prop_assert!(played.windows(2).all(|w| w[0] < w[1]), "played in order");
        let warm = 150;
        let after: Vec<u32> = played.into_iter().filter(|&t| t >= 20 * warm).collect();
        prop_assert_eq!(after, (warm..n).map(|k| 20 * k).collect::<Vec<_>>());
        let s = jb.stats();
        prop_assert!(s.jitter_ms <= j as i64);
    }
}

#[test]
fn delay_adapts_up_under_jitter_and_back_down_when_it_calms() {
    let mut rng = Rng(7);
    let calm = |rng: &mut Rng| rng.below(11);
    let rough = |rng: &mut Rng| rng.below(201);
    let n = 3000; // 60 s: 10 s calm, 20 s rough, 30 s calm
    let arrivals = jittered(n, |k| {
        if (500..1500).contains(&k) {
            rough(&mut rng)
        } else {
            calm(&mut rng)
        }
    });
    let mut jb = jb();
    let mut now = T0;
    let mut next = 0;
    let mut at_10s = None;
    let mut at_30s = None;
    let mut late_at_25s = 0;
    while now <= T0 + 20 * u64::from(n) {
        while let Some(&(at, pkt)) = arrivals.get(next) {
            if at > now {
                break;
            }
            let _ = put(&mut jb, pkt, at);
            next += 1;
        }
        let _ = tick(&mut jb, now);
        if now == T0 + 10_000 {
            at_10s = Some(jb.stats());
        }
        if now == T0 + 25_000 {
            late_at_25s = jb.stats().late + jb.stats().lost;
        }
        if now == T0 + 30_000 {
            at_30s = Some(jb.stats());
        }
        now += 20;
    }
    let (calm1, rough_s, calm2) = (at_10s.unwrap(), at_30s.unwrap(), jb.stats());
    assert!(calm1.jitter_ms <= 10 && calm1.delay_ms <= 70, "{calm1:?}");
    assert!(rough_s.jitter_ms >= 150, "{rough_s:?}");
    assert!(
        rough_s.delay_ms >= 190 && rough_s.target_ms >= calm1.target_ms + 150,
        "{rough_s:?}"
    );
    assert_eq!(
        rough_s.late + rough_s.lost,
        late_at_25s,
        "no loss once adapted"
    );
    assert!(calm2.jitter_ms <= 10, "{calm2:?}");
    assert!(
        calm2.delay_ms <= calm2.jitter_ms + 40 + 40 + 20,
        "shrunk back: {calm2:?}"
    );
    assert!(calm2.dropped > 0, "shrinking drops frames");
}

#[test]
fn long_run_never_grows_storage() {
    let mut rng = Rng(42);
    let mut jb = jb();
    let caps = jb.capacities();
    let mut arrivals = Vec::new();
    let n: u32 = 100_000;
    for k in 0..n {
        let r = rng.below(1000);
        if r < 10 {
            continue; // 1 % loss
        }
        let at = T0 + 20 * u64::from(k) + rng.below(120);
        arrivals.push((at, Pkt::V(20 * k)));
        if r < 20 {
            arrivals.push((at + rng.below(200), Pkt::V(20 * k))); // 1 % duplicates
        }
        if k % 500 == 499 {
            arrivals.push((at + 1, Pkt::C(20 * k + 3, ControlKind::Unkey)));
        }
    }
    arrivals.sort_by_key(|a| a.0);
    let mut next = 0;
    let mut now = T0;
    let end = T0 + 20 * u64::from(n) + 1000;
    let mut played = 0u64;
    while now <= end {
        while let Some(&(at, pkt)) = arrivals.get(next) {
            if at > now {
                break;
            }
            let _ = put(&mut jb, pkt, at);
            next += 1;
        }
        played += tick(&mut jb, now)
            .iter()
            .filter(|o| matches!(o, Out::Voice(_)))
            .count() as u64;
        now += 20;
    }
    assert_eq!(jb.capacities(), caps);
    let s = jb.stats();
    assert_eq!(s.frames_out, played);
    assert!(played > 95_000, "{s:?}");
    assert!(s.duplicate > 500 && s.reordered > 1000, "{s:?}");
}
