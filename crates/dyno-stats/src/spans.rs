//! Spans: maximal runs of consecutive values at or above a level (how long a node stays
//! saturated: `dyno compare` counts a node's seconds at 85% CPU or more, `dyno cluster`
//! each node's slots).

/// Lengths (in values) of the maximal runs of consecutive values at or above
/// `threshold`, in order of occurrence.
pub fn spans_at_or_above(values: &[f64], threshold: f64) -> Vec<usize> {
    let mut spans = Vec::new();
    let mut current = 0;
    for &v in values {
        if v >= threshold {
            current += 1;
        } else if current > 0 {
            spans.push(current);
            current = 0;
        }
    }
    if current > 0 {
        spans.push(current);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_maximal_runs_at_or_above_threshold() {
        let cpu = [90.0, 85.0, 84.9, 100.0, 0.0, 0.0, 99.0, 99.0, 99.0];
        assert_eq!(spans_at_or_above(&cpu, 85.0), vec![2, 1, 3]);
        assert_eq!(spans_at_or_above(&[], 85.0), Vec::<usize>::new());
        assert_eq!(spans_at_or_above(&[10.0, 20.0], 85.0), Vec::<usize>::new());
    }

    proptest::proptest! {
        #[test]
        fn span_lengths_count_every_value_at_or_above(values in proptest::collection::vec(0.0f64..120.0, 0..200)) {
            let spans = spans_at_or_above(&values, 85.0);
            let busy = values.iter().filter(|&&c| c >= 85.0).count();
            proptest::prop_assert_eq!(spans.iter().sum::<usize>(), busy);
            proptest::prop_assert!(spans.iter().all(|&l| l > 0));
            let starts = values.iter().enumerate()
                .filter(|&(i, &c)| c >= 85.0 && (i == 0 || values[i - 1] < 85.0))
                .count();
            proptest::prop_assert_eq!(spans.len(), starts);
        }
    }
}
