//! The noise report's tests: parts of a window, the split, the recommendation and the
//! start factors.

use super::offsets::Factor;
use super::split::{part_of, within_of};
use super::*;
use dyno_exec::{Execution, Series, SeriesKind};
use dyno_model::{Direction, Metric, Unit};

fn cpu(points: Vec<(f64, f64)>) -> Series {
    Series {
        metric: Metric::new("cpu_percent", Unit::Percent, Direction::LowerIsBetter),
        kind: SeriesKind::Rate,
        points,
    }
}

#[test]
fn parts_of_a_window_keep_each_kind_meaningful() {
    let c = cpu((1..=8).map(|t| (t as f64, t as f64)).collect());
    let counter = Series {
        metric: Metric::new("node:x_total", Unit::Count, Direction::HigherIsBetter),
        kind: SeriesKind::Counter,
        points: (0..=8).map(|t| (t as f64, 10.0 * t as f64)).collect(),
    };
    let part = part_of(&[c, counter], 8.0, (1, PARTS), None);
    // CPU: the seconds 3 and 4, shifted to start at 0.
    assert_eq!(part[0].points, vec![(1.0, 3.0), (2.0, 4.0)]);
    // The counter keeps the point at the part's start: its growth over the part.
    assert_eq!(part[1].points, vec![(0.0, 20.0), (1.0, 30.0), (2.0, 40.0)]);
}

#[test]
fn a_steady_cpu_has_no_within_round_noise_and_a_jittery_one_has() {
    let mut steady = Execution::starting("a", "w", 0, vec![]);
    steady
        .series
        .push(cpu((1..=20).map(|t| (t as f64, 50.0)).collect()));
    assert_eq!(within_of(&steady, "cpu_percent", None), Some(0.0));
    let mut jitter = Execution::starting("a", "w", 0, vec![]);
    jitter.series.push(cpu((1..=20)
        .map(|t| (t as f64, if (t - 1) % 10 < 5 { 40.0 } else { 60.0 }))
        .collect()));
    let w = within_of(&jitter, "cpu_percent", None).unwrap();
    // Parts of 5 s: 40, 60, 40, 60 (the 5 s blocks line up with the parts).
    let logs = [40f64.ln(), 60f64.ln(), 40f64.ln(), 60f64.ln()];
    let mean = logs.iter().sum::<f64>() / 4.0;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 3.0;
    assert!((w - var / 4.0).abs() < 1e-12, "{w}");
    // One value per execution: no parts, no within-round estimate.
    let mut ready = Execution::starting("a", "w", 0, vec![]);
    ready.series.push(Series {
        metric: Metric::new("ready_s", Unit::Seconds, Direction::LowerIsBetter),
        kind: SeriesKind::Gauge,
        points: vec![(0.0, 1.5)],
    });
    assert_eq!(within_of(&ready, "ready_s", None), None);
}

/// One round of two subjects: CPU a second over a 20 s window, both moved by the same
/// wobble inside the window (what side by side cancels), the candidate by its own
/// per-round offset; started `at` seconds into the comparison (the candidate `gap`
/// seconds after the baseline: 0 side by side).
fn round(r: u32, offset: f64, at: f64, gap: f64, wobble: f64) -> Vec<Execution> {
    ["a", "b"]
        .iter()
        .map(|s| {
            let mut e = Execution::starting(s, "w", r, vec![]);
            let level = if *s == "b" {
                50.0 * (1.0 + offset)
            } else {
                50.0
            };
            e.series.push(cpu((1..=20)
                .map(|t| {
                    (
                        t as f64,
                        level * (1.0 + wobble * (t as f64 * 1.3 + r as f64).sin()),
                    )
                })
                .collect()));
            e.started_at = at + if *s == "b" { gap } else { 0.0 };
            e
        })
        .collect()
}

#[test]
fn the_recommendation_agrees_with_the_sequential_rule_and_the_schedule_s_round_cost() {
    use crate::comparison::{Schedule, TestKind, VerdictKey};
    let workloads = [Workload::new("w", 1.0, 5.0, 20.0)];
    let offsets = [
        0.03, -0.02, 0.01, -0.04, 0.02, 0.0, -0.01, 0.035, -0.025, 0.015,
    ];
    let key = VerdictKey {
        workload: "w".into(),
        candidate: "b".into(),
        metric: "cpu_percent".into(),
    };
    for schedule in [Schedule::SideBySide, Schedule::Interleaved] {
        let side_by_side = schedule == Schedule::SideBySide;
        let mut meta = ComparisonMeta::of(&["a", "b"], &workloads, offsets.len() as u32);
        meta.schedule = schedule;
        // A start: 5 s warm-up, 20 s window, 2 s to spawn, be ready and stop.
        let (start, gap) = (27.0, if side_by_side { 0.0 } else { 27.0 });
        let round_len = if side_by_side { start } else { 2.0 * start };
        let execs: Vec<Execution> = offsets
            .iter()
            .enumerate()
            .flat_map(|(r, o)| round(r as u32, *o, r as f64 * round_len, gap, 0.3))
            .collect();
        let noise = report(
            &meta,
            &execs,
            &workloads,
            std::slice::from_ref(&key),
            TestKind::Sequential,
            0.05,
        );
        let m = &noise.metrics[0];
        let ratios: Vec<f64> = offsets.iter().map(|o| (1.0 + o).ln()).collect();
        let total = dyno_stats::sample_stddev(&ratios).unwrap().powi(2);
        assert!((m.log_ratio_variance - total).abs() < 1e-12);
        // The wobble moves both alike: no part of a round's ratio is within the window
        // (the two windows' own variances added would be 30x the rounds' variance).
        assert!(m.within < 1e-12, "{m:?}");
        let rule = PowerQuestion {
            test: crate::power::power_test(TestKind::Sequential),
            n: 2,
            sd: total.sqrt(),
            alpha: meta.alpha,
            family: 1,
            power: crate::power::POWER,
        }
        .rounds_for(0.05)
        .unwrap();
        let r = noise.recommendations["w"];
        let current = r.current.unwrap();
        assert_eq!(current.rounds, rule, "the sequential rule's own rounds");
        assert!((r.overhead_s - 2.0).abs() < 1e-9, "{r:?}");
        // Side by side a round is one start of both; interleaved, one start each.
        let expected = rule as f64 * round_len / 60.0;
        assert!(
            (current.minutes - expected).abs() < 1e-9,
            "{schedule:?}: {r:?}"
        );
    }
}

/// Deterministic noise in [-1, 1] for test data.
fn jitter(i: u64) -> f64 {
    // splitmix64: neighbouring seeds give unrelated values.
    let mut x = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// A side-by-side start of `a` and `b` in round `r` with `k` windows of 20 s: `b`'s CPU
/// `offset` (log scale) above `a`'s, each window moved by `per_window` more, `b` on CPU
/// set `[cpu]` (and `a` on the other, with `crossover`), `b` spawned first when
/// `b_first`.
struct Start {
    r: u32,
    k: u32,
    offset: f64,
    per_window: f64,
    cpu: Option<usize>,
    b_first: bool,
}

impl Start {
    fn executions(&self) -> Vec<Execution> {
        let mut out = Vec::new();
        for s in ["a", "b"] {
            for w in 0..self.k {
                let mut e = Execution::starting(s, "w", self.r, vec![]);
                e.window = w;
                e.started_at = 1000.0 + 100.0 * f64::from(self.r);
                let is_b = s == "b";
                e.placement.spawned = u32::from(is_b != self.b_first);
                e.placement.cpus = self.cpu.map(|c| vec![if is_b { c } else { 1 - c }]);
                let wobble = self.per_window * jitter(u64::from(self.r * 10 + w));
                let level = if is_b {
                    50.0 * (self.offset + wobble).exp()
                } else {
                    50.0
                };
                e.series
                    .push(cpu((1..=20).map(|t| (t as f64, level)).collect()));
                out.push(e);
            }
        }
        out
    }
}

fn key() -> crate::comparison::VerdictKey {
    crate::comparison::VerdictKey {
        workload: "w".into(),
        candidate: "b".into(),
        metric: "cpu_percent".into(),
    }
}

fn side_by_side(rounds: u32, k: u32) -> ComparisonMeta {
    let workloads = [Workload::new("w", 1.0, 5.0, 20.0)];
    let mut meta = ComparisonMeta::of(&["a", "b"], &workloads, rounds);
    meta.schedule = Schedule::SideBySide;
    meta.windows_per_start = k;
    meta
}

/// The noise report of one primary metric (`b`'s `cpu_percent` under `w`) over `starts`.
fn noise_of(meta: &ComparisonMeta, starts: impl Iterator<Item = Start>) -> NoiseReport {
    let workloads = [Workload::new("w", 1.0, 5.0, 20.0)];
    let execs: Vec<Execution> = starts.flat_map(|s| s.executions()).collect();
    report(
        meta,
        &execs,
        &workloads,
        &[key()],
        TestKind::Sequential,
        0.05,
    )
}

#[test]
fn start_offsets_placement_explains_are_named_and_so_is_nothing() {
    let meta = side_by_side(16, 1);
    let run = |offset: &dyn Fn(u32, usize, bool) -> f64, cpus: bool| {
        let starts = (0..16u32).map(|r| {
            // The crossover and the rotation of the runner: four combinations.
            let (cpu, b_first) = ((r % 2) as usize, (r + r / 2) % 2 == 1);
            Start {
                r,
                k: 1,
                offset: offset(r, cpu, b_first),
                per_window: 0.0,
                cpu: cpus.then_some(cpu),
                b_first,
            }
        });
        noise_of(&meta, starts).factors[0].clone()
    };
    // The faster core is worth 6%; the node's own randomness 1%.
    let f = run(
        &|r, cpu, _| if cpu == 0 { 0.06 } else { 0.0 } + 0.01 * jitter(u64::from(r)),
        true,
    );
    let Factor::Explains { share } = f.placement else {
        panic!("{f:?}")
    };
    assert!(share > 0.9, "{f:?}");
    assert!(f.unexplained < 0.1, "{f:?}");
    let line = super::offsets::lines(std::slice::from_ref(&f)).remove(0);
    assert!(
        line.starts_with("start offsets: w: cpu_percent of b over 16 starts: "),
        "{line}"
    );
    // Metrics that say the same of the same starts are one line naming them.
    let mut other = f.clone();
    other.metric = "rss_bytes".into();
    let folded = super::offsets::lines(&[f.clone(), other]);
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert!(
        folded[0]
            .starts_with("start offsets: w: cpu_percent of b, w: rss_bytes of b over 16 starts: "),
        "{folded:?}"
    );
    assert!(
        line.contains("explained by CPU placement (cancelled by the crossover)"),
        "{line}"
    );
    // Offsets of the node's own: neither factor takes more than chance.
    let f = run(&|r, _, _| 0.05 * jitter(u64::from(r) + 99), true);
    assert!(f.unexplained > 0.6, "{f:?}");
    // The start order explains it when it is what moves.
    let f = run(
        &|r, _, first| if first { 0.05 } else { 0.0 } + 0.005 * jitter(u64::from(r)),
        true,
    );
    let Factor::Explains { share } = f.start_order else {
        panic!("{f:?}")
    };
    assert!(share > 0.9, "{f:?}");
    // Without `cpus` placement is not recorded, and the line says so.
    let f = run(&|r, _, _| 0.05 * jitter(u64::from(r) + 99), false);
    assert_eq!(f.placement, Factor::NotRecorded);
    assert!(
        f.sentence().contains("CPU placement not recorded"),
        "{}",
        f.sentence()
    );
}

#[test]
fn several_windows_of_a_start_split_three_ways_and_starts_are_what_counts() {
    // Each start draws a 5% offset; its 3 windows move 0.5% about it.
    let meta = side_by_side(12, 3);
    let noise = noise_of(
        &meta,
        (0..12u32).map(|r| Start {
            r,
            k: 3,
            offset: 0.05 * jitter(u64::from(r) + 7),
            per_window: 0.005,
            cpu: None,
            b_first: r % 2 == 1,
        }),
    );
    let m = &noise.metrics[0];
    assert_eq!((m.rounds, m.windows_per_start), (12, 3));
    assert!(m.between_windows > 0.0 && m.within == 0.0, "{m:?}");
    assert!(m.between > 20.0 * m.between_windows, "{m:?}");
    let line = m.sentence();
    assert!(line.contains("between the 3 windows of a start"), "{line}");
    // The windows of a start add nothing the starts need: one short window a start.
    let r = noise.recommendations["w"];
    assert_eq!(
        (r.fastest.windows_per_start, r.fastest.window_s),
        (1, 5.0),
        "{r:?}"
    );
    let current = r.current.unwrap();
    assert!(current.minutes > r.fastest.minutes);
    let line = r.sentence("w");
    assert!(line.contains("windows_per_start = 1"), "{line}");
}

#[test]
fn a_window_s_variance_from_its_parts_holds_for_independent_parts_and_for_a_counter_s_steps() {
    use super::split::window_mean_variance;
    let windows = 4000u64;
    // Independent parts of variance 1: the mean of 4 varies by 1/4.
    let iid: Vec<Vec<f64>> = (0..windows)
        .map(|w| (0..4).map(|k| 3f64.sqrt() * jitter(w * 8 + k)).collect())
        .collect();
    let refs: Vec<&[f64]> = iid.iter().map(Vec::as_slice).collect();
    let v = window_mean_variance(&refs).unwrap();
    assert!((v - 0.25).abs() < 0.03, "{v}");
    // A counter's steps: part k errs by q(k+1) - q(k), each boundary's q of variance 1,
    // so the window (the mean of the parts) errs by (q4 - q0) / 4: variance 2 / 16. Batch
    // means would say var(part) / 4 = 2 / 4, four times as much.
    let steps: Vec<Vec<f64>> = (0..windows)
        .map(|w| {
            let q: Vec<f64> = (0..5).map(|k| 3f64.sqrt() * jitter(w * 8 + k)).collect();
            q.windows(2).map(|p| p[1] - p[0]).collect()
        })
        .collect();
    let refs: Vec<&[f64]> = steps.iter().map(Vec::as_slice).collect();
    let v = window_mean_variance(&refs).unwrap();
    assert!((v - 0.125).abs() < 0.02, "{v}");
    let batch: f64 = refs
        .iter()
        .map(|w| {
            dyno_stats::window_log_variance(&w.iter().map(|x| x.exp()).collect::<Vec<_>>()).unwrap()
        })
        .sum::<f64>()
        / windows as f64;
    assert!(batch > 3.0 * v, "batch means {batch} against {v}");
}

#[test]
fn the_unit_of_work_is_cut_by_its_growth_whatever_its_kind() {
    // A height gauge counted as work: each part keeps the point at its start, so the
    // parts' growth adds up to the window's (without it each part loses a second).
    let height = Series {
        metric: Metric::new("node:height", Unit::Count, Direction::HigherIsBetter),
        kind: SeriesKind::Gauge,
        points: (1..=8).map(|t| (t as f64, 10.0 * t as f64)).collect(),
    };
    let work = crate::work::WorkUnit {
        metric: "node:height".into(),
        unit: "block".into(),
    };
    let part = part_of(std::slice::from_ref(&height), 8.0, (1, PARTS), Some(&work));
    assert_eq!(part[0].points, vec![(0.0, 20.0), (1.0, 30.0), (2.0, 40.0)]);
    let level = part_of(std::slice::from_ref(&height), 8.0, (1, PARTS), None);
    assert_eq!(level[0].points, vec![(1.0, 30.0), (2.0, 40.0)]);
    // Samples land a little after each second: each still goes with its own second.
    let late = Series {
        points: height.points.iter().map(|(t, v)| (t + 0.002, *v)).collect(),
        ..height
    };
    let part = part_of(&[late], 8.0, (1, PARTS), Some(&work));
    let values: Vec<f64> = part[0].points.iter().map(|p| p.1).collect();
    assert_eq!(values, [20.0, 30.0, 40.0]);
}

/// Ten side-by-side rounds of a 20 s window after a 5 s warm-up, both nodes at 50% with
/// their own jitter, the first 5 s of each window raised by `a_first` and `b_first`.
fn settling_report(a_first: f64, b_first: f64) -> NoiseReport {
    let workloads = [Workload::new("w", 1.0, 5.0, 20.0)];
    let mut meta = ComparisonMeta::of(&["a", "b"], &workloads, 10);
    meta.schedule = crate::comparison::Schedule::SideBySide;
    let mut execs = Vec::new();
    for r in 0..10u32 {
        for (i, (s, first)) in [("a", a_first), ("b", b_first)].into_iter().enumerate() {
            let mut e = Execution::starting(s, "w", r, vec![]);
            e.started_at = 30.0 * f64::from(r);
            e.series.push(cpu((1..=20)
                .map(|t| {
                    let raised = if t <= 5 { 1.0 + first } else { 1.0 };
                    let noise = 1.0 + 0.03 * jitter(u64::from(r) * 1000 + i as u64 * 100 + t);
                    (t as f64, 50.0 * raised * noise)
                })
                .collect()));
            execs.push(e);
        }
    }
    report(
        &meta,
        &execs,
        &workloads,
        &[key()],
        crate::comparison::TestKind::Sequential,
        0.05,
    )
}

#[test]
fn a_ratio_still_settling_after_the_warm_up_lengthens_it_and_nodes_settling_alike_do_not() {
    // The candidate runs 20% hot for the first 5 s of every window: the verdict depends
    // on the warm-up, so every choice waits one part (5 s) longer.
    let hot = settling_report(0.0, 0.2);
    let s = &hot.settling[0];
    assert_eq!(s.starts, 10);
    assert!(s.ratio.settling(), "{s:?}");
    assert_eq!(s.warmup_needed(), Some(10.0));
    let r = hot.recommendations["w"];
    assert_eq!((r.warmup_s, r.fastest.warmup_s), (5.0, 10.0), "{r:?}");
    assert!(
        r.sentence("w").contains("warmup_s = 10"),
        "{}",
        r.sentence("w")
    );
    let lines = hot.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("warm-up: w: cpu_percent of b:") && l.contains("still settling")),
        "{lines:#?}"
    );
    // Both run hot alike: the nodes settle, the ratio does not move, the warm-up stays.
    let alike = settling_report(0.2, 0.2);
    let s = &alike.settling[0];
    assert!(!s.ratio.settling(), "{s:?}");
    assert!(s.levels.iter().all(|l| l.shift.settling()), "{s:?}");
    let r = alike.recommendations["w"];
    assert_eq!(r.fastest.warmup_s, 5.0);
    let line = alike
        .lines()
        .into_iter()
        .find(|l| l.starts_with("warm-up"))
        .unwrap();
    assert!(line.contains("but alike"), "{line}");
    // Neither: settled, and a shorter warm-up is not claimed.
    let flat = settling_report(0.0, 0.0);
    let line = flat
        .lines()
        .into_iter()
        .find(|l| l.starts_with("warm-up"))
        .unwrap();
    assert!(
        line.contains("read like the rest") && !line.contains("alike") && line.contains("untested"),
        "{line}"
    );
}
