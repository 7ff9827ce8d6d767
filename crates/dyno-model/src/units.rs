//! Units of measure and their display rules.
//!
//! Values are stored in base units at full precision (bytes per second, operations per
//! second, seconds, bytes); these functions only decide how a value is shown.

use serde::{Deserialize, Serialize};

/// The base unit of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Bytes per second; shown in binary units (KiB/s, MiB/s, GiB/s) as Substrate does.
    BytesPerSecond,
    /// Operations (signatures, hashes, transactions) per second; shown with SI prefixes.
    PerSecond,
    /// Seconds.
    Seconds,
    /// Nanoseconds (per-operation costs).
    Nanoseconds,
    /// Bytes (sizes, memory).
    Bytes,
    /// Percent (0..=100, CPU use and shares).
    Percent,
    /// A plain count.
    Count,
}

impl Unit {
    /// The stable symbol of the base unit, as stored and exported.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::BytesPerSecond => "B/s",
            Unit::PerSecond => "/s",
            Unit::Seconds => "s",
            Unit::Nanoseconds => "ns",
            Unit::Bytes => "B",
            Unit::Percent => "%",
            Unit::Count => "count",
        }
    }

    /// Parses [`Unit::symbol`] back.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Unit::BytesPerSecond,
            Unit::PerSecond,
            Unit::Seconds,
            Unit::Nanoseconds,
            Unit::Bytes,
            Unit::Percent,
            Unit::Count,
        ]
        .into_iter()
        .find(|u| u.symbol() == s)
    }
}

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * 1024.0;
const GIB: f64 = MIB * 1024.0;

/// Formats a byte rate the way Substrate's `benchmark machine` does: two decimals in the
/// largest of GiB/s, MiB/s and KiB/s that keeps the number at least 1 (KiB/s below that).
pub fn format_binary_rate(bytes_per_second: f64) -> String {
    let (v, u) = if bytes_per_second >= GIB {
        (bytes_per_second / GIB, "GiB/s")
    } else if bytes_per_second >= MIB {
        (bytes_per_second / MIB, "MiB/s")
    } else {
        (bytes_per_second / KIB, "KiB/s")
    };
    format!("{v:.2} {u}")
}

/// Formats a value of `unit` for people, with a suitable prefix and three significant
/// figures or two decimals. Never used for storage.
pub fn format_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::BytesPerSecond => format_binary_rate(value),
        Unit::PerSecond => {
            let (v, p) = si_prefix(value);
            format!("{v:.2} {p}/s")
        }
        Unit::Seconds => {
            if value.abs() >= 1.0 {
                format!("{value:.2} s")
            } else if value.abs() >= 1e-3 {
                format!("{:.2} ms", value * 1e3)
            } else {
                format!("{:.2} µs", value * 1e6)
            }
        }
        Unit::Nanoseconds => {
            if value.abs() >= 1e6 {
                format!("{:.2} ms", value / 1e6)
            } else if value.abs() >= 1e3 {
                format!("{:.2} µs", value / 1e3)
            } else {
                format!("{value:.1} ns")
            }
        }
        Unit::Bytes => {
            let (v, u) = if value >= GIB {
                (value / GIB, "GiB")
            } else if value >= MIB {
                (value / MIB, "MiB")
            } else if value >= KIB {
                (value / KIB, "KiB")
            } else {
                (value, "B")
            };
            format!("{v:.2} {u}")
        }
        Unit::Percent => format!("{value:.1} %"),
        Unit::Count => {
            if value.fract() == 0.0 && value.abs() < 1e15 {
                format!("{value:.0}")
            } else {
                format!("{value:.2}")
            }
        }
    }
}

fn si_prefix(value: f64) -> (f64, &'static str) {
    let a = value.abs();
    if a >= 1e9 {
        (value / 1e9, "G")
    } else if a >= 1e6 {
        (value / 1e6, "M")
    } else if a >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_rates_pick_the_largest_unit_at_least_one() {
        assert_eq!(format_binary_rate(1000.0 * MIB), "1000.00 MiB/s");
        assert_eq!(format_binary_rate(1024.0 * MIB), "1.00 GiB/s");
        assert_eq!(format_binary_rate(11768.341 * MIB), "11.49 GiB/s");
        assert_eq!(format_binary_rate(0.622675781 * MIB), "637.62 KiB/s");
        assert_eq!(format_binary_rate(512.0), "0.50 KiB/s");
        assert_eq!(format_binary_rate(MIB - 1.0), "1024.00 KiB/s");
    }

    #[test]
    fn values_get_readable_prefixes() {
        assert_eq!(format_value(31_000.0, Unit::PerSecond), "31.00 k/s");
        assert_eq!(format_value(20_500_000.0, Unit::PerSecond), "20.50 M/s");
        assert_eq!(format_value(0.0025, Unit::Seconds), "2.50 ms");
        assert_eq!(format_value(1534.0, Unit::Nanoseconds), "1.53 µs");
        assert_eq!(format_value(3.0 * GIB, Unit::Bytes), "3.00 GiB");
        assert_eq!(format_value(42.0, Unit::Count), "42");
    }

    #[test]
    fn unit_symbols_round_trip() {
        for u in [
            Unit::BytesPerSecond,
            Unit::PerSecond,
            Unit::Nanoseconds,
            Unit::Count,
        ] {
            assert_eq!(Unit::parse(u.symbol()), Some(u));
        }
        assert_eq!(Unit::parse("furlongs"), None);
    }
}
