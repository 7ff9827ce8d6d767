//! How figures read in every dyno output: p-values, shares and times of day, formatted
//! in one place so that the terminal, the reports and `dyno serve` agree to the digit.

/// Below this a p-value reads `< 0.001`: three decimals are all a verdict needs, and
/// `1.2e-7` suggests a precision the tests do not have.
const SMALLEST_P_SHOWN: f64 = 0.001;

/// A p-value as people read it: three decimals (`0.042`, `1.000`), `< 0.001` below that,
/// `-` when there is none (NaN).
///
/// ```
/// assert_eq!(dyno_report::format_p_value(0.0421), "0.042");
/// assert_eq!(dyno_report::format_p_value(0.001), "0.001");
/// assert_eq!(dyno_report::format_p_value(3e-9), "< 0.001");
/// assert_eq!(dyno_report::format_p_value(1.0), "1.000");
/// ```
pub fn format_p_value(p: f64) -> String {
    if !p.is_finite() {
        return "-".into();
    }
    // 0.0009996 would round to "0.001" but is below it: say so.
    if p < SMALLEST_P_SHOWN - 5e-13 {
        return format!("< {SMALLEST_P_SHOWN}");
    }
    format!("{:.3}", p.min(1.0))
}

/// A p-value in a sentence: `p = 0.042`, `p < 0.001`, `p = -` (none).
///
/// ```
/// assert_eq!(dyno_report::format_p_clause(0.0421), "p = 0.042");
/// assert_eq!(dyno_report::format_p_clause(1e-9), "p < 0.001");
/// ```
pub fn format_p_clause(p: f64) -> String {
    let shown = format_p_value(p);
    if shown.starts_with('<') {
        format!("p {shown}")
    } else {
        format!("p = {shown}")
    }
}

/// A share in percent (`value` already in percent) with as many decimals as it takes to
/// show three significant digits, at least one (`24.5 %`, `2.45 %`, `0.0245 %`), so a
/// small share never reads as `0.0 %`; exactly zero reads `0 %`, a NaN `-`.
///
/// ```
/// assert_eq!(dyno_report::format_percent(24.51), "24.5 %");
/// assert_eq!(dyno_report::format_percent(0.0312), "0.0312 %");
/// assert_eq!(dyno_report::format_percent(0.0), "0 %");
/// ```
pub fn format_percent(value: f64) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    if value == 0.0 {
        return "0 %".into();
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(1, 6) as usize;
    format!("{value:.decimals$} %")
}

/// A Unix time as the pages and reports show it: `2026-11-25 13:40:02 UTC`.
pub fn format_when(unix: f64) -> String {
    let t = dyno_model::format_timestamp(unix);
    match (t.get(..10), t.get(11..19)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_read_as_three_decimals_or_below_a_thousandth() {
        for (p, shown) in [
            (1.0, "1.000"),
            (0.5, "0.500"),
            (0.04999, "0.050"),
            (0.0014, "0.001"),
            (0.001, "0.001"),
            (0.000_999_6, "< 0.001"),
            (0.0, "< 0.001"),
            (f64::NAN, "-"),
            // Holm's adjustment caps at 1; a value above it is shown as 1.
            (1.0000001, "1.000"),
        ] {
            assert_eq!(format_p_value(p), shown, "{p}");
        }
        // Never the exponent form the pages used to show ("1.00e0").
        assert!(!format_p_value(1e-12).contains('e'));
        assert_eq!(format_p_clause(0.5), "p = 0.500");
        assert_eq!(format_p_clause(1e-5), "p < 0.001");
    }

    #[test]
    fn percentages_keep_three_significant_digits() {
        for (v, shown) in [
            (100.0, "100.0 %"),
            (24.51, "24.5 %"),
            (2.451, "2.45 %"),
            (0.245, "0.245 %"),
            (0.0312, "0.0312 %"),
            (-1.5, "-1.50 %"),
            (0.0, "0 %"),
            (f64::INFINITY, "-"),
        ] {
            assert_eq!(format_percent(v), shown, "{v}");
        }
    }

    #[test]
    fn times_of_day_are_whole_and_name_the_zone() {
        assert_eq!(format_when(1_795_000_000.0), "2026-11-18 11:06:40 UTC");
    }
}
