//! Which direction of a metric is better.

/// Whether larger or smaller values of a metric are better (throughput vs latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Better {
    /// Larger is better (operations per second, MB/s).
    Higher,
    /// Smaller is better (latency, build time, binary size).
    Lower,
}

impl Better {
    /// `true` when `a` is strictly better than `b` in this direction.
    pub fn is_better(self, a: f64, b: f64) -> bool {
        match self {
            Better::Higher => a > b,
            Better::Lower => a < b,
        }
    }

    /// The relative improvement of `value` over `reference` in this direction:
    /// `(value - reference) / |reference|` for [`Better::Higher`], the negation for
    /// [`Better::Lower`]. Positive means `value` is better.
    pub fn relative_gain(self, value: f64, reference: f64) -> f64 {
        let diff = (value - reference) / reference.abs();
        match self {
            Better::Higher => diff,
            Better::Lower => -diff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert!(Better::Higher.is_better(2.0, 1.0));
        assert!(!Better::Higher.is_better(1.0, 1.0));
        assert!(Better::Lower.is_better(1.0, 2.0));
        assert!((Better::Higher.relative_gain(110.0, 100.0) - 0.1).abs() < 1e-12);
        assert!((Better::Lower.relative_gain(110.0, 100.0) + 0.1).abs() < 1e-12);
        assert!((Better::Lower.relative_gain(90.0, 100.0) - 0.1).abs() < 1e-12);
    }
}
