//! Load commands: an outside load generator a workload runs against the node, and how its
//! output is read.
//!
//! ```toml
//! [[workload]]
//! name = "kv"
//! rate = 200
//! warmup_s = 5
//! measure_s = 30
//! [workload.load]
//! command = ["./load.sh", "--url", "{rpc}", "--rate", "{rate}", "--duration", "{load_s}"]
//! cwd = "examples/compare-cometbft"        # optional
//! output = "jsonl"                         # numeric fields of JSON lines (the default)
//! # or regex extractors, one metric each, every match one observation:
//! # [[workload.load.extract]]
//! # metric = "achieved_tps"
//! # pattern = 'sent (?P<value>[0-9.]+) tx/s'
//! # unit = "/s"            # /s, s, ms, us, ns, B, %, count
//! # direction = "higher"   # or "lower"
//! ```
//!
//! The load starts once the subject is ready (see `ready` of a subject) and is stopped
//! (SIGINT, SIGKILL after the grace period) when the measured window ends; a load that
//! exits before then fails the execution with its last output. `{rpc}`-style
//! placeholders name the subject's `addresses`; `{rate}`, `{warmup_s}`, `{measure_s}`,
//! `{workload}` are the workload's, and `{load_s}` is warm-up plus window plus 10 s (a
//! load told to run that long is still running when dyno stops it).
//!
//! Its metrics are named `load:<field or metric>`, read from the lines it printed from the
//! start of the measured window on (warm-up lines are left out; a summary printed when
//! it is stopped is kept); its process tree is sampled apart from
//! the node's (`load:cpu_percent`, `load:rss_bytes`), so its cost is not charged to the
//! node.

use crate::execution::{guess_direction, Series, SeriesKind};
pub use crate::spec::{Extractor, FieldUnit, LoadOutput, LoadSpec};
use dyno_model::{Direction, Metric, Unit};
use regex::Regex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Seconds `{load_s}` adds to warm-up and window.
pub const LOAD_MARGIN_S: f64 = 10.0;

/// `[workload.load]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLoad {
    command: Vec<String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    extract: Vec<RawExtractor>,
    #[serde(default)]
    fields: BTreeMap<String, RawField>,
    #[serde(default)]
    cpus: Option<String>,
}

/// A JSON-lines field's unit, as written (`fields = { latency = { unit = "ms" } }`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    unit: String,
    #[serde(default)]
    direction: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExtractor {
    metric: String,
    pattern: String,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    direction: Option<String>,
}

/// The base unit and factor of a unit as written (`ms` is 1e-3 seconds).
fn parse_unit(text: &str) -> Option<(Unit, f64)> {
    Some(match text {
        "/s" => (Unit::PerSecond, 1.0),
        "s" => (Unit::Seconds, 1.0),
        "ms" => (Unit::Seconds, 1e-3),
        "us" => (Unit::Seconds, 1e-6),
        "ns" => (Unit::Seconds, 1e-9),
        "B" => (Unit::Bytes, 1.0),
        "%" => (Unit::Percent, 1.0),
        "count" => (Unit::Count, 1.0),
        _ => return None,
    })
}

impl RawLoad {
    /// How the load's output is read: JSON lines, or text through its extractors.
    fn output_kind(&self) -> Result<LoadOutput, (String, String)> {
        match (self.output.as_deref(), self.extract.is_empty()) {
            (None | Some("jsonl"), true) => Ok(LoadOutput::Jsonl),
            (None | Some("regex"), false) => {
                let mut out = Vec::new();
                for (i, e) in self.extract.iter().enumerate() {
                    out.push(
                        e.validate()
                            .map_err(|(k, why)| (format!("extract[{i}].{k}"), why))?,
                    );
                }
                Ok(LoadOutput::Regex(out))
            }
            (Some("jsonl"), false) => Err((
                "extract".into(),
                "extractors read text output: leave out `output = \"jsonl\"` or the extractors"
                    .into(),
            )),
            (Some("regex"), true) => Err((
                "extract".into(),
                "`output = \"regex\"` needs [[workload.load.extract]] entries".into(),
            )),
            (Some(other), _) => Err((
                "output".into(),
                format!("`{other}` is not `jsonl` or `regex`"),
            )),
        }
    }

    /// The units (and directions) of the JSON-lines fields, checked; only JSON lines
    /// take them.
    fn field_units(
        &self,
        output: &LoadOutput,
    ) -> Result<BTreeMap<String, FieldUnit>, (String, String)> {
        let mut fields = BTreeMap::new();
        for (name, f) in &self.fields {
            if !matches!(output, LoadOutput::Jsonl) {
                return Err((
                    "fields".into(),
                    "units of JSON-lines fields: the extractors give their own `unit`".into(),
                ));
            }
            let key = |k: &str| format!("fields.{name}.{k}");
            if parse_unit(&f.unit).is_none() {
                return Err((
                    key("unit"),
                    format!(
                        "`{}` is unknown (use /s, s, ms, us, ns, B, %, count)",
                        f.unit
                    ),
                ));
            }
            if let Some(d) = f
                .direction
                .as_deref()
                .filter(|d| *d != "higher" && *d != "lower")
            {
                return Err((
                    key("direction"),
                    format!("`{d}` is not `higher` or `lower`"),
                ));
            }
            fields.insert(
                name.clone(),
                FieldUnit {
                    unit: f.unit.clone(),
                    direction: f.direction.clone(),
                },
            );
        }
        Ok(fields)
    }

    /// Checks the load; errors are `(key under load, message)`.
    pub(crate) fn validate(
        &self,
        base_cwd: Option<&std::path::Path>,
    ) -> Result<LoadSpec, (String, String)> {
        let Some(program) = self.command.first() else {
            return Err(("command".into(), "is empty".into()));
        };
        let cwd = match (&self.cwd, base_cwd) {
            (Some(c), _) => Some(c.clone()),
            (None, b) => b.map(|p| p.to_path_buf()),
        };
        if let Some(dir) = &cwd {
            if !dir.is_dir() {
                return Err((
                    "cwd".into(),
                    format!("{} is not a directory", dir.display()),
                ));
            }
        }
        // A program given as a placeholder is only known per subject; checked when run.
        if !program.contains('{') {
            crate::spec::check_executable(program, cwd.as_deref())
                .map_err(|why| ("command".to_string(), why.to_string()))?;
        }
        let output = self.output_kind()?;
        let fields = self.field_units(&output)?;
        let cpus = match &self.cpus {
            None => None,
            Some(c) => Some(
                crate::pinning::parse_cpus(c, &crate::pinning::machine_cpus())
                    .map_err(|why| ("cpus".to_string(), why))?,
            ),
        };
        Ok(LoadSpec {
            command: self.command.clone(),
            cwd,
            env: self.env.clone(),
            output,
            fields,
            cpus,
        })
    }
}

/// A declared field's unit, factor and direction, for a series read from JSON lines.
fn declare(series: &mut Series, field: &FieldUnit) {
    let (unit, factor) = parse_unit(&field.unit).unwrap_or((Unit::Count, 1.0));
    series.metric.unit = unit;
    for p in &mut series.points {
        p.1 *= factor;
    }
    match field.direction.as_deref() {
        Some("higher") => series.metric.direction = Direction::HigherIsBetter,
        Some("lower") => series.metric.direction = Direction::LowerIsBetter,
        _ => {}
    }
}

impl RawExtractor {
    fn validate(&self) -> Result<Extractor, (String, String)> {
        if self.metric.trim().is_empty() {
            return Err(("metric".into(), "is empty".into()));
        }
        let re = Regex::new(&self.pattern)
            .map_err(|e| ("pattern".to_string(), format!("does not compile: {e}")))?;
        if !re.capture_names().any(|n| n == Some("value")) {
            return Err((
                "pattern".into(),
                format!("`{}` has no (?P<value>...) group", self.pattern),
            ));
        }
        let unit = self.unit.clone().unwrap_or_else(|| "count".into());
        if parse_unit(&unit).is_none() {
            return Err((
                "unit".into(),
                format!("`{unit}` is unknown (use /s, s, ms, us, ns, B, %, count)"),
            ));
        }
        if let Some(d) = &self.direction {
            if d != "higher" && d != "lower" {
                return Err((
                    "direction".into(),
                    format!("`{d}` is not `higher` or `lower`"),
                ));
            }
        }
        Ok(Extractor {
            metric: self.metric.clone(),
            pattern: self.pattern.clone(),
            unit,
            direction: self.direction.clone(),
        })
    }
}

/// Placeholders every load command may use, whatever the subject (the slot fills `{dir}`).
const WORKLOAD_PLACEHOLDERS: [&str; 6] =
    ["workload", "rate", "warmup_s", "measure_s", "load_s", "dir"];

/// Checks that every placeholder of the load is known for every subject; `Err((subject,
/// placeholder))` names the first that is not.
pub(crate) fn check_placeholders(
    spec: &LoadSpec,
    subjects: &[crate::spec::SubjectSpec],
) -> Result<(), (String, String)> {
    for text in spec.command.iter().chain(spec.env.values()) {
        for name in crate::placeholder::names_in(text) {
            if WORKLOAD_PLACEHOLDERS.contains(&name) {
                continue;
            }
            if let Some(s) = subjects.iter().find(|s| !s.addresses.contains_key(name)) {
                return Err((s.name.clone(), name.to_string()));
            }
        }
    }
    Ok(())
}

impl LoadSpec {
    fn substitute(
        &self,
        text: &str,
        addresses: &BTreeMap<String, String>,
        w: &crate::spec::WorkloadSpec,
    ) -> String {
        let mut out = crate::spec::substitute(text, w).replace(
            "{load_s}",
            &(w.warmup_s + w.measure_s + LOAD_MARGIN_S).to_string(),
        );
        for (k, v) in addresses {
            out = out.replace(&format!("{{{k}}}"), v);
        }
        out
    }

    /// The load's command line against `subject` under `w`, placeholders replaced (a
    /// slot's ports and directory not yet: see [`crate::slot`]).
    pub fn command_for(
        &self,
        subject: &crate::spec::SubjectSpec,
        w: &crate::spec::WorkloadSpec,
    ) -> Vec<String> {
        self.command_with(&subject.addresses, w)
    }

    /// The load's command line against a subject at `addresses` under `w`.
    pub fn command_with(
        &self,
        addresses: &BTreeMap<String, String>,
        w: &crate::spec::WorkloadSpec,
    ) -> Vec<String> {
        self.command
            .iter()
            .map(|a| self.substitute(a, addresses, w))
            .collect()
    }

    /// The load's extra environment against a subject at `addresses` under `w`,
    /// placeholders replaced.
    pub fn env_with(
        &self,
        addresses: &BTreeMap<String, String>,
        w: &crate::spec::WorkloadSpec,
    ) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), self.substitute(v, addresses, w)))
            .collect()
    }
}

/// The metrics in a load's output lines. Regex extractors that match nothing, and
/// declared JSON-lines fields never printed, give a message in the second element (the
/// execution's warnings).
pub fn read_output(spec: &LoadSpec, lines: &[String]) -> (Vec<Series>, Vec<String>) {
    match &spec.output {
        LoadOutput::Jsonl => {
            let text = lines.join("\n");
            let mut series = crate::jsonl::parse(&text);
            for s in &mut series {
                let field = s.metric.name.trim_start_matches("jsonl:").to_string();
                if let Some(f) = spec.fields.get(&field) {
                    declare(s, f);
                }
                s.metric.name = format!("load:{field}");
            }
            let warnings = spec
                .fields
                .keys()
                .filter(|f| !series.iter().any(|s| s.metric.name == format!("load:{f}")))
                .map(|f| {
                    format!("load output: field `{f}` (declared in `fields`) was never printed")
                })
                .collect();
            (series, warnings)
        }
        LoadOutput::Regex(extractors) => {
            let mut out = Vec::new();
            let mut warnings = Vec::new();
            for e in extractors {
                let Ok(re) = Regex::new(&e.pattern) else {
                    continue;
                };
                let (unit, factor) = parse_unit(&e.unit).unwrap_or((Unit::Count, 1.0));
                let direction = match e.direction.as_deref() {
                    Some("higher") => Direction::HigherIsBetter,
                    Some("lower") => Direction::LowerIsBetter,
                    _ => guess_direction(&e.metric),
                };
                let points: Vec<(f64, f64)> = lines
                    .iter()
                    .flat_map(|l| re.captures_iter(l).collect::<Vec<_>>())
                    .filter_map(|c| c.name("value")?.as_str().trim().parse::<f64>().ok())
                    .enumerate()
                    .map(|(i, v)| (i as f64, v * factor))
                    .collect();
                if points.is_empty() {
                    warnings.push(format!(
                        "load output: `{}` matched nothing (metric load:{})",
                        e.pattern, e.metric
                    ));
                    continue;
                }
                out.push(Series {
                    metric: Metric::new(format!("load:{}", e.metric), unit, direction),
                    kind: SeriesKind::Observations,
                    points,
                });
            }
            (out, warnings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawLoad {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn extractors_need_a_value_group_a_known_unit_and_a_direction() {
        let ok = raw("command = [\"sh\"]\n[[extract]]\nmetric = \"tps\"\npattern = 'tps=(?P<value>[0-9.]+)'\nunit = \"/s\"\ndirection = \"higher\"\n");
        assert!(
            matches!(ok.validate(None).unwrap().output, LoadOutput::Regex(ref e) if e.len() == 1)
        );
        let e =
            raw("command = [\"sh\"]\n[[extract]]\nmetric = \"tps\"\npattern = 'tps=([0-9.]+)'\n")
                .validate(None)
                .unwrap_err();
        assert_eq!(e.0, "extract[0].pattern");
        assert!(e.1.contains("no (?P<value>...) group"), "{}", e.1);
        let e = raw("command = [\"sh\"]\n[[extract]]\nmetric = \"tps\"\npattern = 'tps=(?P<value>[0-9.]+'\n")
            .validate(None)
            .unwrap_err();
        assert!(e.1.contains("does not compile"), "{}", e.1);
        let e = raw("command = [\"sh\"]\n[[extract]]\nmetric = \"t\"\npattern = '(?P<value>x)'\nunit = \"furlongs\"\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "extract[0].unit");
        let e = raw("command = [\"./nope/load\"]\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "command");
        let e = raw("command = [\"sh\"]\noutput = \"csv\"\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "output");
    }

    #[test]
    fn jsonl_and_regex_output_become_load_metrics() {
        let lines: Vec<String> = [
            "{\"t\": 1, \"achieved_tps\": 198.5, \"errors\": 0}",
            "sent 200 tx in 1.0 s, latency p50 12.5 ms",
            "{\"t\": 2, \"achieved_tps\": 201.0, \"errors\": 2}",
            "sent 190 tx in 1.0 s, latency p50 14 ms",
        ]
        .map(String::from)
        .to_vec();
        let spec = |output| LoadSpec {
            command: vec!["load".into()],
            cwd: None,
            env: BTreeMap::new(),
            output,
            fields: BTreeMap::new(),
            cpus: None,
        };
        let (s, w) = read_output(&spec(LoadOutput::Jsonl), &lines);
        assert!(w.is_empty());
        let tps = s
            .iter()
            .find(|s| s.metric.name == "load:achieved_tps")
            .unwrap();
        assert_eq!(tps.points, vec![(1.0, 198.5), (2.0, 201.0)]);
        assert_eq!(tps.metric.unit, Unit::PerSecond);
        assert_eq!(
            s.iter()
                .find(|s| s.metric.name == "load:errors")
                .unwrap()
                .metric
                .direction,
            Direction::LowerIsBetter
        );
        let ex = |metric: &str, pattern: &str, unit: &str| Extractor {
            metric: metric.into(),
            pattern: pattern.into(),
            unit: unit.into(),
            direction: None,
        };
        let out = LoadOutput::Regex(vec![
            ex("latency_p50_s", r"p50 (?P<value>[0-9.]+) ms", "ms"),
            ex("dropped", r"dropped (?P<value>\d+)", "count"),
        ]);
        let (s, w) = read_output(&spec(out), &lines);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].metric.name, "load:latency_p50_s");
        assert_eq!(s[0].points.len(), 2);
        assert!(
            (s[0].points[0].1 - 0.0125).abs() < 1e-15 && (s[0].points[1].1 - 0.014).abs() < 1e-15
        );
        assert_eq!(s[0].metric.direction, Direction::LowerIsBetter);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("load:dropped"), "{w:?}");
    }

    #[test]
    fn a_json_lines_field_can_carry_its_unit() {
        // A latency in milliseconds under a name dyno cannot read a unit from: declared,
        // it is seconds (and so in the default primary family); undeclared, a count.
        let lines: Vec<String> = [
            "{\"t\": 1, \"p50_ms\": 12.5, \"sent\": 200}",
            "{\"t\": 2, \"p50_ms\": 14}",
        ]
        .map(String::from)
        .to_vec();
        let declared = raw("command = [\"sh\"]\n[fields]\np50_ms = { unit = \"ms\", direction = \"lower\" }\nnever = { unit = \"s\" }\n")
            .validate(None)
            .unwrap();
        let (s, w) = read_output(&declared, &lines);
        let p50 = s.iter().find(|s| s.metric.name == "load:p50_ms").unwrap();
        assert_eq!(p50.metric.unit, Unit::Seconds);
        assert_eq!(p50.points, vec![(1.0, 0.0125), (2.0, 0.014)]);
        assert!(dyno_judge::family::default_primary(&p50.metric));
        assert_eq!(
            w,
            ["load output: field `never` (declared in `fields`) was never printed"]
        );
        let plain = raw("command = [\"sh\"]\n").validate(None).unwrap();
        let (s, _) = read_output(&plain, &lines);
        let p50 = s.iter().find(|s| s.metric.name == "load:p50_ms").unwrap();
        assert_eq!(p50.metric.unit, Unit::Count);
        assert!(!dyno_judge::family::default_primary(&p50.metric));
        // Bad units and directions name their key.
        let e = raw("command = [\"sh\"]\n[fields]\nlat = { unit = \"fortnights\" }\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "fields.lat.unit");
        let e = raw("command = [\"sh\"]\n[fields]\nlat = { unit = \"ms\", direction = \"up\" }\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "fields.lat.direction");
        let e = raw("command = [\"sh\"]\ncpus = \"4096\"\n")
            .validate(None)
            .unwrap_err();
        assert_eq!(e.0, "cpus");
        assert!(e.1.contains("not on this machine"), "{}", e.1);
    }
}
