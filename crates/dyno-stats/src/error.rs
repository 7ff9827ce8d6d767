//! The error type shared by every fallible function in this crate.

use thiserror::Error;

/// Why a statistic could not be computed from the given input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// A sample that must hold at least one value (or `needed` values) was too short.
    #[error("sample `{what}` has {got} values, at least {needed} needed")]
    TooFewValues {
        /// Which input was too short (for example `"a"`, `"baseline"`).
        what: &'static str,
        /// How many values it held.
        got: usize,
        /// How many values the statistic needs.
        needed: usize,
    },
    /// An input held a NaN; see the crate docs for the NaN policy.
    #[error("sample `{what}` contains NaN")]
    NaN {
        /// Which input held the NaN.
        what: &'static str,
    },
    /// A probability, level or fraction was outside its allowed range.
    #[error("`{what}` = {value} is outside {range}")]
    OutOfRange {
        /// Which parameter was out of range.
        what: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range, written for humans (for example `"[0, 1]"`).
        range: &'static str,
    },
    /// Inputs that must agree in shape did not (for example metric counts per subject).
    #[error("shape mismatch: {0}")]
    Shape(String),
}

/// Returns `Err(StatsError::NaN)` when `data` contains a NaN.
pub(crate) fn check_no_nan(data: &[f64], what: &'static str) -> Result<(), StatsError> {
    if data.iter().any(|x| x.is_nan()) {
        Err(StatsError::NaN { what })
    } else {
        Ok(())
    }
}

/// Returns an error unless `data` has at least `needed` values and no NaN.
pub(crate) fn check_sample(
    data: &[f64],
    what: &'static str,
    needed: usize,
) -> Result<(), StatsError> {
    if data.len() < needed {
        return Err(StatsError::TooFewValues {
            what,
            got: data.len(),
            needed,
        });
    }
    check_no_nan(data, what)
}

/// Returns an error unless `value` lies in the open interval (0, 1).
pub(crate) fn check_open_unit(value: f64, what: &'static str) -> Result<(), StatsError> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(StatsError::OutOfRange {
            what,
            value,
            range: "(0, 1)",
        })
    }
}

/// Returns an error unless `value` is a non-negative number (not NaN).
pub(crate) fn check_non_negative(value: f64, what: &'static str) -> Result<(), StatsError> {
    if value.is_nan() || value < 0.0 {
        Err(StatsError::OutOfRange {
            what,
            value,
            range: "[0, inf)",
        })
    } else {
        Ok(())
    }
}
