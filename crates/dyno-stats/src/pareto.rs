//! Pareto sets over several metrics with mixed directions, and the "near-Pareto" set of
//! subjects that cannot be told apart from a Pareto subject given their uncertainty.

use crate::better::Better;
use crate::error::{check_non_negative, StatsError};

/// `true` when `a` dominates `b`: at least as good on every metric and strictly better on
/// at least one. Slices must have the same length as `directions`.
pub fn dominates(a: &[f64], b: &[f64], directions: &[Better]) -> bool {
    let mut strictly = false;
    for ((&x, &y), &dir) in a.iter().zip(b).zip(directions) {
        if dir.is_better(y, x) {
            return false;
        }
        strictly |= dir.is_better(x, y);
    }
    strictly
}

/// Indices (ascending) of the subjects no other subject dominates.
///
/// `subjects[i][m]` is the value of metric `m` for subject `i` (for example its median).
/// Subjects with identical values do not dominate each other, so both are kept.
/// Errors: a subject whose length differs from `directions`, or a NaN.
pub fn pareto_front(
    subjects: &[Vec<f64>],
    directions: &[Better],
) -> Result<Vec<usize>, StatsError> {
    for (i, s) in subjects.iter().enumerate() {
        if s.len() != directions.len() {
            return Err(StatsError::Shape(format!(
                "subject {i} has {} metric values, {} directions given",
                s.len(),
                directions.len()
            )));
        }
        if s.iter().any(|v| v.is_nan()) {
            return Err(StatsError::NaN {
                what: "subject metric values",
            });
        }
    }
    Ok((0..subjects.len())
        .filter(|&i| {
            !subjects
                .iter()
                .any(|other| dominates(other, &subjects[i], directions))
        })
        .collect())
}

/// One metric of one subject: a point estimate with its uncertainty (for example a median
/// and its confidence interval). Requires `low <= center <= high`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Point estimate.
    pub center: f64,
    /// Upper bound.
    pub high: f64,
}

/// The Pareto set on the centers, and the subjects whose uncertainty boxes touch it.
#[derive(Debug, Clone, PartialEq)]
pub struct NearPareto {
    /// Indices of the Pareto set of the centers (ascending).
    pub pareto: Vec<usize>,
    /// Indices (ascending) of every subject whose box overlaps some Pareto subject's box on
    /// every metric; includes the Pareto set itself.
    pub near: Vec<usize>,
    /// The intervals on the relative scale used for the decision:
    /// `relative[i][m] = intervals[i][m] / |reference[m]|`.
    pub relative: Vec<Vec<Interval>>,
    /// Per metric, the best center among all subjects (the unit of the relative scale).
    pub reference: Vec<f64>,
}

/// The near-Pareto set.
///
/// The rule, exactly:
/// 1. The Pareto set `P` is computed on the centers ([`pareto_front`]).
/// 2. Per metric `m`, the reference `r[m]` is the best center over all subjects (largest for
///    [`Better::Higher`], smallest for [`Better::Lower`]). Every bound is divided by `|r[m]|`,
///    so values become unit-free ("1.03 = 3% above the best") and `slack` means the same on
///    every metric.
/// 3. Subject `s` is near-Pareto when some `p` in `P` has, on every metric `m`,
///    `low_s - slack <= high_p` and `low_p <= high_s + slack` (relative scale): the two
///    closed intervals overlap once `s` is widened by `slack` on each side.
///
/// With `slack = 0` the result does not depend on the scaling (overlap is invariant under
/// dividing a metric by a positive number); the scaling only gives `slack` its meaning.
///
/// Errors: shape mismatch, NaN, `low <= center <= high` violated, a negative or NaN `slack`,
/// or a metric whose reference center is 0 or infinite.
pub fn near_pareto(
    intervals: &[Vec<Interval>],
    directions: &[Better],
    slack: f64,
) -> Result<NearPareto, StatsError> {
    check_non_negative(slack, "slack")?;
    validate_intervals(intervals)?;
    let centers: Vec<Vec<f64>> = intervals
        .iter()
        .map(|s| s.iter().map(|iv| iv.center).collect())
        .collect();
    let pareto = pareto_front(&centers, directions)?;
    let reference = reference_centers(&centers, directions)?;
    let relative: Vec<Vec<Interval>> = intervals
        .iter()
        .map(|s| {
            s.iter()
                .zip(&reference)
                .map(|(iv, r)| Interval {
                    low: iv.low / r.abs(),
                    center: iv.center / r.abs(),
                    high: iv.high / r.abs(),
                })
                .collect()
        })
        .collect();
    let near = (0..intervals.len())
        .filter(|&s| {
            pareto.iter().any(|&p| {
                relative[s]
                    .iter()
                    .zip(&relative[p])
                    .all(|(a, b)| a.low - slack <= b.high && b.low <= a.high + slack)
            })
        })
        .collect();
    Ok(NearPareto {
        pareto,
        near,
        relative,
        reference,
    })
}

fn validate_intervals(intervals: &[Vec<Interval>]) -> Result<(), StatsError> {
    for (i, s) in intervals.iter().enumerate() {
        for (m, iv) in s.iter().enumerate() {
            if iv.low.is_nan() || iv.center.is_nan() || iv.high.is_nan() {
                return Err(StatsError::NaN {
                    what: "interval bounds",
                });
            }
            if !(iv.low <= iv.center && iv.center <= iv.high) {
                return Err(StatsError::Shape(format!(
                    "subject {i} metric {m}: need low <= center <= high, got {iv:?}"
                )));
            }
        }
    }
    Ok(())
}

fn reference_centers(centers: &[Vec<f64>], directions: &[Better]) -> Result<Vec<f64>, StatsError> {
    (0..directions.len())
        .map(|m| {
            let best = centers
                .iter()
                .map(|s| s[m])
                .reduce(|a, b| if directions[m].is_better(b, a) { b } else { a })
                .unwrap_or(1.0);
            if best == 0.0 || !best.is_finite() {
                Err(StatsError::OutOfRange {
                    what: "reference center",
                    value: best,
                    range: "finite and non-zero",
                })
            } else {
                Ok(best)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DIRS: [Better; 2] = [Better::Higher, Better::Lower]; // throughput, latency

    #[test]
    fn front_with_mixed_directions() {
        let subjects = vec![
            vec![100.0, 10.0], // 0: fast and quick
            vec![120.0, 12.0], // 1: more throughput, more latency: trade-off, kept
            vec![90.0, 11.0],  // 2: dominated by 0
            vec![100.0, 10.0], // 3: equal to 0, kept
            vec![120.0, 13.0], // 4: dominated by 1
        ];
        assert_eq!(pareto_front(&subjects, &DIRS).unwrap(), vec![0, 1, 3]);
        assert!(dominates(&subjects[0], &subjects[2], &DIRS));
        assert!(!dominates(&subjects[0], &subjects[3], &DIRS));
    }

    #[test]
    fn front_errors() {
        assert!(pareto_front(&[vec![1.0]], &DIRS).is_err());
        assert!(pareto_front(&[vec![1.0, f64::NAN]], &DIRS).is_err());
        assert_eq!(pareto_front(&[], &DIRS).unwrap(), Vec::<usize>::new());
    }

    fn iv(low: f64, center: f64, high: f64) -> Interval {
        Interval { low, center, high }
    }

    #[test]
    fn near_pareto_keeps_overlapping_boxes() {
        let intervals = vec![
            vec![iv(98.0, 100.0, 102.0), iv(9.8, 10.0, 10.2)], // 0: Pareto
            vec![iv(97.0, 99.0, 101.0), iv(9.9, 10.1, 10.3)],  // 1: dominated, boxes overlap 0
            vec![iv(80.0, 81.0, 82.0), iv(9.9, 10.0, 10.1)],   // 2: dominated, far on metric 0
            vec![iv(95.0, 96.0, 97.0), iv(10.0, 10.1, 10.2)],  // 3: 1% gap to 0 on metric 0
        ];
        let np = near_pareto(&intervals, &DIRS, 0.0).unwrap();
        assert_eq!(np.pareto, vec![0]);
        assert_eq!(np.near, vec![0, 1]);
        assert_eq!(np.reference, vec![100.0, 10.0]);
        assert!((np.relative[3][0].high - 0.97).abs() < 1e-12);
        // A 1% slack (relative to the best throughput) lets subject 3 in, not subject 2.
        let np = near_pareto(&intervals, &DIRS, 0.01).unwrap();
        assert_eq!(np.near, vec![0, 1, 3]);
    }

    #[test]
    fn near_pareto_errors() {
        let bad = vec![vec![iv(2.0, 1.0, 3.0), iv(1.0, 1.0, 1.0)]];
        assert!(near_pareto(&bad, &DIRS, 0.0).is_err());
        let zero = vec![vec![iv(0.0, 0.0, 0.0), iv(1.0, 1.0, 1.0)]];
        assert!(near_pareto(&zero, &DIRS, 0.0).is_err());
        let ok = vec![vec![iv(1.0, 1.0, 1.0), iv(1.0, 1.0, 1.0)]];
        assert!(near_pareto(&ok, &DIRS, -0.1).is_err());
    }

    fn subjects() -> impl Strategy<Value = (Vec<Vec<f64>>, Vec<Better>)> {
        (1usize..4).prop_flat_map(|m| {
            (
                prop::collection::vec(
                    prop::collection::vec((0i32..8).prop_map(f64::from), m),
                    0..25,
                ),
                prop::collection::vec(
                    prop::bool::ANY.prop_map(|h| if h { Better::Higher } else { Better::Lower }),
                    m,
                ),
            )
        })
    }

    proptest! {
        #[test]
        fn front_is_sound_and_complete((subjects, dirs) in subjects()) {
            let front = pareto_front(&subjects, &dirs).unwrap();
            for &i in &front {
                prop_assert!(!subjects.iter().any(|o| dominates(o, &subjects[i], &dirs)));
            }
            for i in (0..subjects.len()).filter(|i| !front.contains(i)) {
                prop_assert!(front.iter().any(|&p| dominates(&subjects[p], &subjects[i], &dirs)));
            }
            if !subjects.is_empty() {
                prop_assert!(!front.is_empty());
            }
        }

        #[test]
        fn near_pareto_contains_front_and_is_exact_for_points(
            (subjects, dirs) in subjects(),
            widths in prop::collection::vec(0.0f64..0.5, 100),
        ) {
            let shifted: Vec<Vec<f64>> = subjects.iter().map(|s| s.iter().map(|v| v + 1.0).collect()).collect();
            let points: Vec<Vec<Interval>> = shifted.iter().map(|s| s.iter().map(|&v| iv(v, v, v)).collect()).collect();
            let np = near_pareto(&points, &dirs, 0.0).unwrap();
            // Zero-width boxes overlap only when equal: near = subjects equal to a Pareto one.
            for s in 0..shifted.len() {
                let equal = np.pareto.iter().any(|&p| shifted[p] == shifted[s]);
                prop_assert_eq!(np.near.contains(&s), equal);
            }
            // Widening boxes can only add subjects.
            let boxes: Vec<Vec<Interval>> = shifted.iter().enumerate().map(|(i, s)| {
                s.iter().enumerate().map(|(m, &v)| { let w = widths[(i * 3 + m) % 100]; iv(v - w, v, v + w) }).collect()
            }).collect();
            let wide = near_pareto(&boxes, &dirs, 0.0).unwrap();
            prop_assert_eq!(&wide.pareto, &np.pareto);
            for s in &np.near {
                prop_assert!(wide.near.contains(s));
            }
        }
    }
}
