//! Which metrics a node's run records, and which way each is better: what the subject's
//! `metrics` table declares first (`higher_is_better`, `lower_is_better`, `ignore`), then
//! what the names suggest ([`guess_direction`], [`index_like`]).
//!
//! ```
//! use dyno_compare::spec::MetricSources;
//! use dyno_compare::declared::{rule_for, Rule};
//! use dyno_model::Direction;
//!
//! let m = MetricSources {
//!     lower_is_better: vec!["jsonl:stage_*".into()],
//!     ignore: vec!["jsonl:cost_units".into()],
//!     ..MetricSources::default()
//! };
//! assert_eq!(rule_for(&m, "jsonl:stage_forged_s", false), Some(Rule::Direction(Direction::LowerIsBetter)));
//! assert_eq!(rule_for(&m, "jsonl:cost_units", false), Some(Rule::Ignore));
//! assert_eq!(rule_for(&m, "jsonl:tps", false), None); // guessed: higher is better
//! ```

use crate::spec::MetricSources;
use dyno_exec::{Series, SeriesKind};
use dyno_model::Direction;

/// One entry of a declaration list: a metric name, or a name with one `*` at its start or
/// its end standing for any text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePattern {
    /// The whole name.
    Exact(String),
    /// `prefix*`.
    Prefix(String),
    /// `*suffix`.
    Suffix(String),
}

/// Why a declared name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadPattern {
    /// More than one `*`, or one in the middle.
    #[error("`{0}`: one `*` at most, at the start or the end of the name")]
    Stars(String),
    /// Nothing but the `*`.
    #[error("`{0}` names no metric (or every metric)")]
    Empty(String),
}

impl NamePattern {
    /// Parses an entry; the error says what is wrong with it.
    pub fn parse(entry: &str) -> Result<Self, BadPattern> {
        let stars = entry.matches('*').count();
        let pattern = match (entry.strip_suffix('*'), entry.strip_prefix('*')) {
            _ if stars == 0 => NamePattern::Exact(entry.to_string()),
            (Some(p), _) if stars == 1 => NamePattern::Prefix(p.to_string()),
            (_, Some(s)) if stars == 1 => NamePattern::Suffix(s.to_string()),
            _ => return Err(BadPattern::Stars(entry.to_string())),
        };
        match &pattern {
            NamePattern::Exact(s) | NamePattern::Prefix(s) | NamePattern::Suffix(s)
                if s.trim().is_empty() =>
            {
                Err(BadPattern::Empty(entry.to_string()))
            }
            _ => Ok(pattern),
        }
    }

    /// True when `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Exact(s) => name == s,
            NamePattern::Prefix(p) => name.starts_with(p.as_str()),
            NamePattern::Suffix(s) => name.ends_with(s.as_str()),
        }
    }

    /// True when some name matches both patterns and that can be told from the patterns
    /// alone. A prefix and a suffix pattern may share names (`jsonl:*` and `*_s`); that
    /// case is settled by precedence instead (see [`rule_for`]).
    pub fn overlaps(&self, other: &NamePattern) -> bool {
        use NamePattern::*;
        match (self, other) {
            (Exact(a), b) | (b, Exact(a)) => b.matches(a),
            (Prefix(a), Prefix(b)) => a.starts_with(b.as_str()) || b.starts_with(a.as_str()),
            (Suffix(a), Suffix(b)) => a.ends_with(b.as_str()) || b.ends_with(a.as_str()),
            _ => false,
        }
    }
}

/// What a declaration says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not recorded.
    Ignore,
    /// Recorded with this direction, whatever the name suggests.
    Direction(Direction),
}

/// The three lists of a `metrics` table, in precedence order, with their key names.
pub fn lists(m: &MetricSources) -> [(&'static str, &[String]); 3] {
    [
        ("ignore", &m.ignore),
        ("lower_is_better", &m.lower_is_better),
        ("higher_is_better", &m.higher_is_better),
    ]
}

/// The names a metric answers to: the name as reports show it, and for Prometheus series
/// (`node:family{labels}`) also the name without labels, the bare family name, and for
/// counters the rate name reports show (`node:family_per_s`).
pub fn names_of(name: &str, counter: bool) -> Vec<String> {
    let mut names = vec![name.to_string()];
    if let Some(series) = name.strip_prefix("node:") {
        let (base, labels) = series.split_at(series.find('{').unwrap_or(series.len()));
        names.push(format!("node:{base}"));
        names.push(base.to_string());
        if counter {
            names.push(format!("node:{base}_per_s{labels}"));
            names.push(format!("node:{base}_per_s"));
        }
    }
    names
}

/// The declared rule for metric `name` (a `counter` also answers to its rate name), if
/// any. When patterns of two lists both match (only a prefix and a suffix pattern can),
/// `ignore` wins over `lower_is_better`, which wins over `higher_is_better`.
pub fn rule_for(m: &MetricSources, name: &str, counter: bool) -> Option<Rule> {
    let names = names_of(name, counter);
    for (key, entries) in lists(m) {
        let hit = entries
            .iter()
            .any(|e| NamePattern::parse(e).is_ok_and(|p| names.iter().any(|n| p.matches(n))));
        if hit {
            return Some(match key {
                "ignore" => Rule::Ignore,
                "lower_is_better" => Rule::Direction(Direction::LowerIsBetter),
                _ => Rule::Direction(Direction::HigherIsBetter),
            });
        }
    }
    None
}

/// Applies the declarations of `m` to the series of one execution: drops ignored ones and
/// index-like node fields that were not declared, and sets declared directions.
pub fn apply(m: &MetricSources, series: &mut Vec<Series>) {
    series.retain_mut(
        |s| match rule_for(m, &s.metric.name, s.kind == SeriesKind::Counter) {
            Some(Rule::Ignore) => false,
            Some(Rule::Direction(d)) => {
                s.metric.direction = d;
                true
            }
            None => !node_field(&s.metric.name).is_some_and(index_like),
        },
    );
}

/// The field or family name of a node metric (`jsonl:slot` -> `slot`,
/// `node:x_total{a="b"}` -> `x_total`); `None` for the /proc metrics.
fn node_field(name: &str) -> Option<&str> {
    let field = name
        .strip_prefix("jsonl:")
        .or_else(|| name.strip_prefix("node:"))?;
    Some(field.split('{').next().unwrap_or(field))
}

/// Words of a name, lowercase, split at anything not a letter or digit.
fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// True for a field that numbers things rather than measures them: its last word is
/// `slot`, `seq`, `sequence`, `id`, `round`, `height`, `epoch`, `index`, `idx`, `number`,
/// `timestamp` or `ts` (`slot`, `block_height`, `tx_id`). Its median over a run says how
/// long the run was, not how good the node is, so it is not recorded unless declared.
pub fn index_like(field: &str) -> bool {
    const INDEX: [&str; 12] = [
        "slot",
        "seq",
        "sequence",
        "id",
        "round",
        "height",
        "epoch",
        "index",
        "idx",
        "number",
        "timestamp",
        "ts",
    ];
    words(field)
        .last()
        .is_some_and(|w| INDEX.contains(&w.as_str()))
}

/// Direction of a node metric, guessed from its name (declarations win over it):
/// lower is better for latencies, times and durations (a name containing `latency`,
/// `seconds` or `delay`, a word `stage`, `wait` or `lag`, a last word `s`, `ms`, `us` or
/// `ns` not after `per`), losses, errors, drops, rejections, timeouts, overruns and
/// backpressure; higher is better for everything else (throughputs such as `tps` or frag
/// counters).
pub fn guess_direction(name: &str) -> Direction {
    const LOWER_STEMS: [&str; 13] = [
        "latency",
        "seconds",
        "delay",
        "lost",
        "loss",
        "error",
        "drop",
        "reject",
        "timeout",
        "ovrn",
        "overrun",
        "backpressure",
        "fail",
    ];
    const LOWER_WORDS: [&str; 3] = ["stage", "wait", "lag"];
    const TIME_UNITS: [&str; 4] = ["s", "ms", "us", "ns"];
    let lower = name.to_ascii_lowercase();
    let w = words(name);
    let duration = match w.as_slice() {
        [.., before, last] => TIME_UNITS.contains(&last.as_str()) && before != "per",
        _ => false,
    };
    if duration
        || LOWER_STEMS.iter().any(|s| lower.contains(s))
        || w.iter().any(|x| LOWER_WORDS.contains(&x.as_str()))
    {
        Direction::LowerIsBetter
    } else {
        Direction::HigherIsBetter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Metric, Unit};

    #[test]
    fn patterns() {
        let p = |s| NamePattern::parse(s).unwrap();
        assert!(p("jsonl:stage_*").matches("jsonl:stage_forged_s"));
        assert!(!p("jsonl:stage_*").matches("jsonl:tps"));
        assert!(p("*_s").matches("jsonl:latency_p99_s"));
        assert!(p("jsonl:tps").matches("jsonl:tps") && !p("jsonl:tps").matches("jsonl:tps2"));
        for bad in ["a*b", "*a*", "**", "*", ""] {
            assert!(NamePattern::parse(bad).is_err(), "{bad}");
        }
        assert!(p("jsonl:*").overlaps(&p("jsonl:stage_*")));
        assert!(p("jsonl:tps").overlaps(&p("jsonl:*")));
        assert!(p("*_s").overlaps(&p("*latency_s")));
        assert!(!p("jsonl:*").overlaps(&p("node:*")));
        assert!(!p("jsonl:*").overlaps(&p("*_s")), "settled by precedence");
    }

    #[test]
    fn the_reference_node_log_gets_the_right_directions_without_declarations() {
        let lower = Direction::LowerIsBetter;
        let higher = Direction::HigherIsBetter;
        for (field, want) in [
            ("tps", higher),
            ("latency_p50_s", lower),
            ("latency_p99_s", lower),
            ("stage_leader_check_s", lower),
            ("stage_ticking_s", lower),
            ("stage_adopted_s", lower),
            ("txs", higher),
            ("dyno_link_frags_total", higher),
            ("dyno_link_frags_per_s", higher),
            ("tx_msgs_total", higher), // not `_ms`
            ("tx_latency_seconds", lower),
            ("dyno_tile_backpressure_total", lower),
            ("forge_ms", lower),
            ("rejected_txs_total", lower),
        ] {
            assert_eq!(guess_direction(field), want, "{field}");
        }
        for index in [
            "slot",
            "seq",
            "id",
            "round",
            "block_height",
            "tx_id",
            "epoch",
        ] {
            assert!(index_like(index), "{index}");
        }
        for measure in [
            "tps",
            "txs",
            "cost_units",
            "stage_ticking_s",
            "rounds_total",
        ] {
            assert!(!index_like(measure), "{measure}");
        }
    }

    fn series(name: &str, kind: SeriesKind) -> Series {
        Series {
            metric: Metric::new(name, Unit::Count, guess_direction(name)),
            kind,
            points: vec![(0.0, 1.0)],
        }
    }

    #[test]
    fn declarations_win_and_index_fields_go_unless_declared() {
        let m = MetricSources {
            higher_is_better: vec!["jsonl:slot".into(), "dyno_tile_backpressure_total".into()],
            lower_is_better: vec!["jsonl:cost_*".into()],
            ignore: vec!["*_bytes_per_s".into(), "jsonl:txs".into()],
            ..MetricSources::default()
        };
        let mut s: Vec<Series> = [
            "cpu_percent",
            "read_bytes_per_s",
            "jsonl:slot",
            "jsonl:seq",
            "jsonl:txs",
            "jsonl:cost_units",
            "jsonl:tps",
        ]
        .iter()
        .map(|n| series(n, SeriesKind::Observations))
        .collect();
        s.push(series(
            "node:dyno_tile_backpressure_total{tile=\"a\"}",
            SeriesKind::Counter,
        ));
        s.push(series("node:dyno_round", SeriesKind::Gauge));
        apply(&m, &mut s);
        let kept: Vec<(&str, Direction)> = s
            .iter()
            .map(|s| (s.metric.name.as_str(), s.metric.direction))
            .collect();
        use Direction::*;
        assert_eq!(
            kept,
            vec![
                ("cpu_percent", HigherIsBetter), // as built by `series`; no rule
                ("jsonl:slot", HigherIsBetter),
                ("jsonl:cost_units", LowerIsBetter),
                ("jsonl:tps", HigherIsBetter),
                (
                    "node:dyno_tile_backpressure_total{tile=\"a\"}",
                    HigherIsBetter
                ),
            ]
        );
        // A counter also answers to the rate name the report shows.
        let rate = MetricSources {
            ignore: vec!["node:dyno_link_frags_total_per_s".into()],
            ..MetricSources::default()
        };
        let mut s = vec![series(
            "node:dyno_link_frags_total{link=\"a\"}",
            SeriesKind::Counter,
        )];
        apply(&rate, &mut s);
        assert!(s.is_empty());
    }

    #[test]
    fn ignore_wins_over_directions_when_a_prefix_and_a_suffix_both_match() {
        let m = MetricSources {
            lower_is_better: vec!["*_s".into()],
            higher_is_better: vec!["jsonl:*".into()],
            ignore: vec!["*_p99_s".into()],
            ..MetricSources::default()
        };
        assert_eq!(
            rule_for(&m, "jsonl:latency_p50_s", false),
            Some(Rule::Direction(Direction::LowerIsBetter))
        );
        assert_eq!(
            rule_for(&m, "jsonl:tps", false),
            Some(Rule::Direction(Direction::HigherIsBetter))
        );
        assert_eq!(
            rule_for(&m, "jsonl:latency_p99_s", false),
            Some(Rule::Ignore)
        );
    }
}
