//! The bounds of a comparison's numbers and names, one definition for the file's keys and
//! `dyno compare run`'s flags: a value past them is a typo or a hostile file (a
//! `measure_s = 1e9` window, a 100 KB name), refused before anything runs rather than
//! run for 31 years or written into file names, HTML and terminal tables.

use std::ops::RangeInclusive;

/// Rounds of a comparison (`rounds`, `max_rounds`, `--rounds`, `--max-rounds`).
pub const ROUNDS: RangeInclusive<u32> = 1..=10_000;

/// A workload's fixed rate in transactions per second: above 0, at most 100 million (no
/// node takes more, and a fixed rate is a load, not flat out).
pub const RATE_TPS: RangeInclusive<f64> = f64::MIN_POSITIVE..=100_000_000.0;

/// A measured window in seconds: one sample a second at least twice, a day at most.
pub const MEASURE_S: RangeInclusive<f64> = 2.0..=86_400.0;

/// A warm-up in seconds: a day at most.
pub const WARMUP_S: RangeInclusive<f64> = 0.0..=86_400.0;

/// The grace period between SIGINT and SIGKILL, in seconds: an hour at most.
pub const GRACE_S: RangeInclusive<f64> = 0.0..=3_600.0;

/// How long a node may take to be ready, in seconds: a day at most.
pub const READY_TIMEOUT_S: RangeInclusive<f64> = f64::MIN_POSITIVE..=86_400.0;

/// A precision target's budget in minutes (`max_minutes`, `--max-minutes`): a week.
pub const MAX_MINUTES: RangeInclusive<f64> = f64::MIN_POSITIVE..=10_080.0;

/// The most characters of a subject's or workload's name.
pub const NAME_CHARS: usize = 64;

/// `value` if it lies in `range`, else a message naming the range in `unit` (`seconds`).
pub fn within(value: f64, range: &RangeInclusive<f64>, unit: &str) -> Result<f64, String> {
    if value.is_finite() && range.contains(&value) {
        return Ok(value);
    }
    let low = if *range.start() == f64::MIN_POSITIVE {
        "more than 0".to_string()
    } else {
        format!("{}", range.start())
    };
    // 1e300 as written, not as 301 digits.
    let shown = if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        format!("{value}")
    };
    Err(format!(
        "{shown} is out of range: give {low} to {} {unit}",
        range.end()
    ))
}

/// A count in `range`, else a message naming the range.
pub fn count(value: i64, range: &RangeInclusive<u32>, unit: &str) -> Result<u32, String> {
    u32::try_from(value)
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| {
            format!(
                "{value} is out of range: give {} to {} {unit}",
                range.start(),
                range.end()
            )
        })
}

/// Checks a subject's or workload's name: not empty, at most [`NAME_CHARS`] characters,
/// and no control or bidirectional-formatting character (a NUL, a newline, U+202E that
/// turns a table's text around). `Err` says what is wrong, showing the name escaped.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("is empty".into());
    }
    let chars = name.chars().count();
    if chars > NAME_CHARS {
        let head: String = name.chars().take(16).collect();
        return Err(format!(
            "`{}...` is {chars} characters long: give at most {NAME_CHARS} (names end up in file names, tables and the store)",
            head.escape_debug()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c.is_control() || dyno_model::is_unprintable(c))
    {
        return Err(format!(
            "`{}` holds the control character U+{:04X}: names are shown in tables, HTML and file names, so give printable characters only",
            name.escape_debug(),
            c as u32
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_past_their_bound_are_refused_with_the_range() {
        assert_eq!(within(30.0, &MEASURE_S, "seconds"), Ok(30.0));
        let e = within(1e9, &MEASURE_S, "seconds").unwrap_err();
        assert_eq!(e, "1000000000 is out of range: give 2 to 86400 seconds");
        let e = within(0.0, &RATE_TPS, "tx/s").unwrap_err();
        assert!(e.contains("give more than 0 to 100000000 tx/s"), "{e}");
        assert!(within(f64::NAN, &WARMUP_S, "seconds").is_err());
        assert!(within(f64::INFINITY, &GRACE_S, "seconds").is_err());
        assert_eq!(count(5, &ROUNDS, "rounds"), Ok(5));
        let e = count(4_000_000_000, &ROUNDS, "rounds").unwrap_err();
        assert!(e.contains("give 1 to 10000 rounds"), "{e}");
        assert!(count(-1, &ROUNDS, "rounds").is_err());
    }

    #[test]
    fn long_control_and_bidi_names_are_refused() {
        assert!(check_name("v1.0 (rc-2)").is_ok());
        assert!(check_name("ノード").is_ok());
        assert!(check_name(&"é".repeat(NAME_CHARS)).is_ok());
        let e = check_name(&"x".repeat(100_000)).unwrap_err();
        assert!(e.contains("100000 characters long: give at most 64"), "{e}");
        assert!(e.len() < 200, "the message does not repeat the name: {e}");
        let e = check_name("a\0b").unwrap_err();
        assert!(e.contains("U+0000") && e.contains("a\\0b"), "{e}");
        let e = check_name("v1\u{202E}0.2v").unwrap_err();
        assert!(e.contains("U+202E"), "{e}");
        for c in ['\n', '\u{1b}', '\u{7f}', '\u{2066}', '\u{2069}', '\u{202A}'] {
            assert!(check_name(&format!("a{c}b")).is_err(), "{c:?}");
        }
        assert_eq!(check_name("  ").unwrap_err(), "is empty");
    }
}
