//! Metric extractors: how a benchmark's output becomes samples. Each reads the full
//! precision the program printed; none rounds.

use dyno_model::{Direction, Metric, Unit};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// How to read metrics from a benchmark's output (`extract = { kind = ... }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Extract {
    /// `dyno machine --format json` (schema `dyno.machine/1`): `results[].score`.
    DynoJson {
        /// Metric names to keep (`Blake2256`...); all when absent.
        #[serde(default)]
        metrics: Option<Vec<String>>,
    },
    /// Substrate's `benchmark machine` table: the Function and Score columns.
    SubstrateTable {
        /// Function names to keep (`BLAKE2-256`...); all when absent.
        #[serde(default)]
        metrics: Option<Vec<String>>,
    },
    /// A regular expression with a `value` capture group.
    Regex {
        /// The pattern; must contain `(?P<value>...)`.
        pattern: String,
        /// The metric's name.
        metric: String,
        /// Unit of the printed number (`ns`, `ms`, `s`, `MiB/s`, `/s`...).
        unit: String,
        /// `higher` or `lower` is better.
        direction: DirectionSpec,
    },
    /// A JSON pointer (RFC 6901) into the output parsed as JSON.
    JsonPointer {
        /// The pointer, e.g. `/results/0/score`.
        pointer: String,
        /// The metric's name.
        metric: String,
        /// Unit of the value.
        unit: String,
        /// `higher` or `lower` is better.
        direction: DirectionSpec,
    },
    /// The command's wall-clock time (lower is better).
    WallTime {
        /// The metric's name (default `wall_time`).
        #[serde(default)]
        metric: Option<String>,
    },
}

/// `direction = "higher"` or `"lower"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectionSpec {
    /// Higher is better.
    Higher,
    /// Lower is better.
    Lower,
}

impl From<DirectionSpec> for Direction {
    fn from(d: DirectionSpec) -> Direction {
        match d {
            DirectionSpec::Higher => Direction::HigherIsBetter,
            DirectionSpec::Lower => Direction::LowerIsBetter,
        }
    }
}

/// A unit as written in a study file or a table: the stored base unit and the factor to it.
pub fn parse_unit(text: &str) -> Option<(Unit, f64)> {
    const K: f64 = 1024.0;
    Some(match text.trim() {
        "B/s" => (Unit::BytesPerSecond, 1.0),
        "KiB/s" | "KiBs" => (Unit::BytesPerSecond, K),
        "MiB/s" | "MiBs" => (Unit::BytesPerSecond, K * K),
        "GiB/s" | "GiBs" => (Unit::BytesPerSecond, K * K * K),
        "kB/s" | "KB/s" => (Unit::BytesPerSecond, 1e3),
        "MB/s" => (Unit::BytesPerSecond, 1e6),
        "GB/s" => (Unit::BytesPerSecond, 1e9),
        "/s" => (Unit::PerSecond, 1.0),
        "k/s" => (Unit::PerSecond, 1e3),
        "M/s" => (Unit::PerSecond, 1e6),
        "G/s" => (Unit::PerSecond, 1e9),
        "s" => (Unit::Seconds, 1.0),
        "ms" => (Unit::Seconds, 1e-3),
        "us" | "µs" => (Unit::Seconds, 1e-6),
        "ns" => (Unit::Nanoseconds, 1.0),
        "B" => (Unit::Bytes, 1.0),
        "KiB" => (Unit::Bytes, K),
        "MiB" => (Unit::Bytes, K * K),
        "GiB" => (Unit::Bytes, K * K * K),
        "%" => (Unit::Percent, 1.0),
        "count" => (Unit::Count, 1.0),
        _ => return None,
    })
}

/// A metric value read from one run of a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The metric (name, base unit, direction).
    pub metric: Metric,
    /// The value in the base unit, full precision.
    pub value: f64,
}

/// Why nothing could be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ExtractError(pub String);

impl Extract {
    /// Checks patterns, pointers and units; the message names the key at fault.
    pub fn validate(&self) -> Result<(), ExtractError> {
        match self {
            Extract::Regex {
                pattern,
                metric,
                unit,
                ..
            } => {
                let re = Regex::new(pattern)
                    .map_err(|e| ExtractError(format!("`pattern` does not compile: {e}")))?;
                if !re.capture_names().any(|n| n == Some("value")) {
                    return Err(ExtractError("`pattern` has no (?P<value>...) group".into()));
                }
                check_metric_and_unit(metric, unit)
            }
            Extract::JsonPointer {
                pointer,
                metric,
                unit,
                ..
            } => {
                if !pointer.is_empty() && !pointer.starts_with('/') {
                    return Err(ExtractError(format!(
                        "`pointer` {pointer:?} must start with '/'"
                    )));
                }
                check_metric_and_unit(metric, unit)
            }
            Extract::DynoJson { metrics } | Extract::SubstrateTable { metrics } => match metrics {
                Some(m) if m.is_empty() => Err(ExtractError(
                    "`metrics` is empty (leave it out to keep all)".into(),
                )),
                _ => Ok(()),
            },
            Extract::WallTime { metric } => match metric {
                Some(m) if m.is_empty() => Err(ExtractError("`metric` is empty".into())),
                _ => Ok(()),
            },
        }
    }

    /// Metric names known before running (for duplicate checks); table and JSON
    /// extractors without a `metrics` list declare none.
    pub fn declared_metrics(&self) -> Vec<String> {
        match self {
            Extract::DynoJson { metrics } | Extract::SubstrateTable { metrics } => {
                metrics.clone().unwrap_or_default()
            }
            Extract::Regex { metric, .. } | Extract::JsonPointer { metric, .. } => {
                vec![metric.clone()]
            }
            Extract::WallTime { metric } => vec![wall_name(metric)],
        }
    }

    /// Reads the metrics from one run's standard output and wall time.
    pub fn read(&self, stdout: &str, wall_time_s: f64) -> Result<Vec<Reading>, ExtractError> {
        let out = match self {
            Extract::DynoJson { metrics } => dyno_json(stdout, metrics.as_deref())?,
            Extract::SubstrateTable { metrics } => substrate_table(stdout, metrics.as_deref())?,
            Extract::Regex {
                pattern,
                metric,
                unit,
                direction,
            } => {
                let re = Regex::new(pattern).map_err(|e| ExtractError(e.to_string()))?;
                let caps = re
                    .captures(stdout)
                    .ok_or_else(|| ExtractError(format!("pattern {pattern:?} matched nothing")))?;
                let text = caps.name("value").map_or("", |m| m.as_str());
                let v: f64 = text.trim().parse().map_err(|_| {
                    ExtractError(format!("captured value {text:?} is not a number"))
                })?;
                vec![scaled(metric, unit, *direction, v)?]
            }
            Extract::JsonPointer {
                pointer,
                metric,
                unit,
                direction,
            } => {
                let doc: serde_json::Value = serde_json::from_str(stdout.trim())
                    .map_err(|e| ExtractError(format!("output is not JSON: {e}")))?;
                let v = doc.pointer(pointer).ok_or_else(|| {
                    ExtractError(format!("JSON pointer {pointer} not found in output"))
                })?;
                let v = v
                    .as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    .ok_or_else(|| {
                        ExtractError(format!("value at {pointer} is not a number: {v}"))
                    })?;
                vec![scaled(metric, unit, *direction, v)?]
            }
            Extract::WallTime { metric } => vec![Reading {
                metric: Metric::new(wall_name(metric), Unit::Seconds, Direction::LowerIsBetter),
                value: wall_time_s,
            }],
        };
        if let Some(bad) = out.iter().find(|r| !r.value.is_finite()) {
            return Err(ExtractError(format!(
                "{} is not a finite number",
                bad.metric.name
            )));
        }
        Ok(out)
    }
}

fn wall_name(metric: &Option<String>) -> String {
    metric.clone().unwrap_or_else(|| "wall_time".into())
}

fn check_metric_and_unit(metric: &str, unit: &str) -> Result<(), ExtractError> {
    if metric.is_empty() {
        return Err(ExtractError("`metric` is empty".into()));
    }
    parse_unit(unit).map(|_| ()).ok_or_else(|| {
        ExtractError(format!("`unit` {unit:?} is unknown (use B/s, KiB/s, MiB/s, GiB/s, /s, k/s, M/s, s, ms, us, ns, B, %, count)"))
    })
}

fn scaled(metric: &str, unit: &str, dir: DirectionSpec, v: f64) -> Result<Reading, ExtractError> {
    let (unit, factor) =
        parse_unit(unit).ok_or_else(|| ExtractError(format!("unknown unit {unit}")))?;
    Ok(Reading {
        metric: Metric::new(metric, unit, dir.into()),
        value: v * factor,
    })
}

fn keep(filter: Option<&[String]>, name: &str) -> bool {
    match filter {
        None => true,
        Some(f) => f.iter().any(|m| m == name),
    }
}

fn missing(filter: Option<&[String]>, found: &[Reading]) -> Result<(), ExtractError> {
    if let Some(f) = filter {
        let absent: Vec<&str> = f
            .iter()
            .filter(|m| !found.iter().any(|r| &r.metric.name == *m))
            .map(String::as_str)
            .collect();
        if !absent.is_empty() {
            return Err(ExtractError(format!(
                "metrics not in output: {}",
                absent.join(", ")
            )));
        }
    }
    if found.is_empty() {
        return Err(ExtractError("no metrics in output".into()));
    }
    Ok(())
}

fn dyno_json(stdout: &str, filter: Option<&[String]>) -> Result<Vec<Reading>, ExtractError> {
    let doc: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| ExtractError(format!("output is not dyno JSON: {e}")))?;
    let results = doc
        .get("results")
        .and_then(|r| r.as_array())
        .ok_or_else(|| ExtractError("dyno JSON without a `results` array".into()))?;
    let mut out = Vec::new();
    for r in results {
        let name = r.get("metric").and_then(|v| v.as_str()).unwrap_or_default();
        if name.is_empty() || !keep(filter, name) {
            continue;
        }
        let unit = r
            .get("unit")
            .and_then(|v| v.as_str())
            .and_then(Unit::parse)
            .ok_or_else(|| ExtractError(format!("{name}: unknown or missing `unit`")))?;
        let direction = r
            .get("direction")
            .and_then(|v| v.as_str())
            .and_then(Direction::parse)
            .unwrap_or(Direction::HigherIsBetter);
        let value = r
            .get("score")
            .and_then(|v| v.as_f64())
            .ok_or_else(|| ExtractError(format!("{name}: `score` is not a number")))?;
        out.push(Reading {
            metric: Metric::new(name, unit, direction),
            value,
        });
    }
    missing(filter, &out)?;
    Ok(out)
}

/// Parses the rows of Substrate's `benchmark machine` table:
/// `| Category | Function | Score | Minimum | Result |`, scores like `1.02 GiBs`.
/// Upstream prints scores with few digits; they are read as printed, never re-rounded.
fn substrate_table(stdout: &str, filter: Option<&[String]>) -> Result<Vec<Reading>, ExtractError> {
    let mut out = Vec::new();
    let mut columns: Option<(usize, usize)> = None;
    for line in stdout.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if let (Some(f), Some(s)) = (
            cells.iter().position(|c| *c == "Function"),
            cells.iter().position(|c| *c == "Score"),
        ) {
            columns = Some((f, s));
            continue;
        }
        let Some((f, s)) = columns else { continue };
        let (Some(name), Some(score)) = (cells.get(f), cells.get(s)) else {
            continue;
        };
        if name.is_empty() || !keep(filter, name) {
            continue;
        }
        let mut parts = score.split_whitespace();
        let (Some(number), Some(unit)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(v), Some((unit, factor))) = (number.parse::<f64>(), parse_unit(unit)) else {
            continue;
        };
        let direction = match unit {
            Unit::Seconds | Unit::Nanoseconds => Direction::LowerIsBetter,
            _ => Direction::HigherIsBetter,
        };
        out.push(Reading {
            metric: Metric::new(*name, unit, direction),
            value: v * factor,
        });
    }
    if columns.is_none() {
        return Err(ExtractError(
            "no table with Function and Score columns in output".into(),
        ));
    }
    missing(filter, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale_to_base() {
        assert_eq!(
            parse_unit("MiBs"),
            Some((Unit::BytesPerSecond, 1_048_576.0))
        );
        assert_eq!(parse_unit("KiB/s"), Some((Unit::BytesPerSecond, 1024.0)));
        assert_eq!(parse_unit("ms"), Some((Unit::Seconds, 1e-3)));
        assert_eq!(parse_unit("parsecs"), None);
    }

    #[test]
    fn regex_reads_full_precision() {
        let e = Extract::Regex {
            pattern: r"time per extrinsic: (?P<value>[0-9.]+) ns".into(),
            metric: "remark".into(),
            unit: "ns".into(),
            direction: DirectionSpec::Lower,
        };
        let r = e
            .read("warmup\ntime per extrinsic: 1534.1234567 ns\n", 0.0)
            .unwrap();
        assert_eq!(r[0].value, 1534.1234567);
        assert_eq!(r[0].metric.direction, Direction::LowerIsBetter);
        assert!(e
            .read("nothing", 0.0)
            .unwrap_err()
            .0
            .contains("matched nothing"));
    }

    #[test]
    fn json_pointer_and_wall_time() {
        let e = Extract::JsonPointer {
            pointer: "/a/b".into(),
            metric: "x".into(),
            unit: "ms".into(),
            direction: DirectionSpec::Lower,
        };
        let r = e.read(r#"{"a":{"b":2.5}}"#, 0.0).unwrap();
        assert!((r[0].value - 0.0025).abs() < 1e-15);
        assert_eq!(r[0].metric.unit, Unit::Seconds);
        assert!(e.read(r#"{"a":{}}"#, 0.0).is_err());
        assert!(e.read("", 0.0).is_err());
        let w = Extract::WallTime { metric: None };
        let r = w.read("", 1.25).unwrap();
        assert_eq!((r[0].metric.name.as_str(), r[0].value), ("wall_time", 1.25));
    }

    #[test]
    fn validation_names_the_key() {
        let bad = Extract::Regex {
            pattern: "([0-9]+)".into(),
            metric: "x".into(),
            unit: "ns".into(),
            direction: DirectionSpec::Lower,
        };
        assert!(bad.validate().unwrap_err().0.contains("`pattern`"));
        let bad = Extract::JsonPointer {
            pointer: "/a".into(),
            metric: "x".into(),
            unit: "furlongs".into(),
            direction: DirectionSpec::Lower,
        };
        assert!(bad.validate().unwrap_err().0.contains("`unit`"));
    }
}
