//! Requirement sets (what a chain demands of a machine) and the pass rule.
//!
//! Thresholds are data: the built-in sets are Substrate `reference_hardware.json` files
//! compiled in, and any chain's file in that format can be read, as can dyno's own TOML
//! format, which also sets minimums for dyno's extra metrics. Measuring and judging are
//! separate: nothing here runs a benchmark.

use crate::MetricId;
use dyno_model::{Direction, Unit};
use serde::Deserialize;
use std::path::Path;

const MIB: f64 = 1024.0 * 1024.0;

/// The most threads BLAKE2-256-Parallel runs: the bound of `--parallel-cores`, and of
/// `num_cores` in a requirements file (a file must not start more threads than the flag
/// may; 4096 is beyond any machine a node runs on).
pub const MAX_PARALLEL_CORES: usize = 4096;

/// One minimum a machine must reach.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The metric.
    pub metric: MetricId,
    /// Threads of a parallel metric (`Blake2256Parallel`), from the file.
    pub num_cores: Option<usize>,
    /// Minimum score in the metric's base unit (bytes/s or operations/s).
    pub minimum: f64,
    /// Marked as applying to validators (authorities) only.
    pub validator_only: bool,
}

/// A named list of requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementSet {
    /// Name shown in the output (built-in name or file name).
    pub name: String,
    /// The requirements, in the order the metrics are reported.
    pub requirements: Vec<Requirement>,
}

/// Errors reading a requirements file; each names the file and, where known, the line.
#[derive(Debug, thiserror::Error)]
pub enum RequirementsError {
    /// The file could not be read.
    #[error("cannot read requirements file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid in its format.
    #[error("invalid requirements file {path}{}: {message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A TOML requirements file is not valid: file:line:column, the key and toml's snippet.
    #[error("{0}")]
    File(dyno_model::ConfigDiagnostic),
    /// No built-in set is known for that chain.
    #[error(
        "no built-in requirement set for chain `{name}`; chains with one: {}. For another chain pass its reference_hardware.json with --requirements FILE",
        chain_names().join(", ")
    )]
    UnknownChain {
        /// The chain asked for, whole.
        name: String,
    },
    /// A unit in a requirements file does not fit its metric (a rate for a byte metric).
    #[error("unit `{unit}` does not fit {metric}; use one of {}", allowed.join(", "))]
    UnitMismatch {
        /// The unit given.
        unit: String,
        /// The metric.
        metric: MetricId,
        /// The units that fit it.
        allowed: Vec<&'static str>,
    },
    /// No built-in set has that name.
    #[error("unknown requirement set `{name}`; built-in sets: {}", builtin_names().join(", "))]
    UnknownSet {
        /// The name asked for.
        name: String,
    },
}

/// Built-in sets: name, Substrate-format JSON.
const BUILTIN: [(&str, &str); 3] = [
    ("substrate", include_str!("../requirements/substrate.json")),
    (
        "substrate-2023-02",
        include_str!("../requirements/substrate-2023-02.json"),
    ),
    (
        "substrate-2022",
        include_str!("../requirements/substrate-2022.json"),
    ),
];

/// Chains whose nodes judge hardware against a built-in set: chain id as `--chain` takes
/// it, and the set. The relay chains' nodes (and the dev and local chains of the
/// Substrate and Polkadot binaries) check the one `reference_hardware.json` of
/// polkadot-sdk, which is the built-in `substrate` set; a chain that ships its own file
/// is judged with `--requirements FILE` instead of being guessed here.
const CHAINS: [(&str, &str); 14] = [
    ("polkadot", "substrate"),
    ("polkadot-dev", "substrate"),
    ("polkadot-local", "substrate"),
    ("kusama", "substrate"),
    ("kusama-dev", "substrate"),
    ("kusama-local", "substrate"),
    ("westend", "substrate"),
    ("westend-dev", "substrate"),
    ("westend-local", "substrate"),
    ("paseo", "substrate"),
    ("rococo", "substrate"),
    ("rococo-local", "substrate"),
    ("dev", "substrate"),
    ("local", "substrate"),
];

/// Chain ids that `--chain` knows (see [`RequirementSet::for_chain`]).
pub fn chain_names() -> Vec<&'static str> {
    CHAINS.iter().map(|c| c.0).collect()
}

/// Names of the built-in requirement sets; the first is the default.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|b| b.0).collect()
}

/// dyno's requirements file as written ([`RequirementSet::from_dyno_toml`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DynoFile {
    name: Option<String>,
    #[serde(default)]
    requirement: Vec<DynoEntry>,
}

/// One `[[requirement]]` of a [`DynoFile`], its spans kept for the messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DynoEntry {
    metric: toml::Spanned<String>,
    minimum: toml::Spanned<f64>,
    unit: Option<toml::Spanned<String>>,
    num_cores: Option<toml::Spanned<i64>>,
    #[serde(default)]
    validator_only: bool,
}

impl RequirementSet {
    /// The minimum of the metric named `metric` (any spelling [`MetricId::parse`]
    /// reads), if this set has one.
    pub fn minimum_of(&self, metric: &str) -> Option<f64> {
        MetricId::parse(metric)
            .and_then(|id| self.get(id))
            .map(|r| r.minimum)
    }

    /// A built-in set by name (`substrate`, the current reference hardware, is the default).
    pub fn builtin(name: &str) -> Result<RequirementSet, RequirementsError> {
        let (name, json) =
            BUILTIN
                .iter()
                .find(|b| b.0 == name)
                .ok_or_else(|| RequirementsError::UnknownSet {
                    name: name.to_string(),
                })?;
        Self::from_substrate_json(json, name)
    }

    /// The built-in set a chain's nodes check, by chain id as Substrate's `--chain` takes
    /// it (`polkadot`, `kusama-local`, `dev`...; case and surrounding spaces ignored).
    /// Returns the set's name with it, so the caller can say which set was chosen.
    pub fn for_chain(chain: &str) -> Result<(&'static str, RequirementSet), RequirementsError> {
        let key = chain.trim().to_ascii_lowercase();
        let set = CHAINS
            .iter()
            .find(|c| c.0 == key)
            .map(|c| c.1)
            .ok_or_else(|| RequirementsError::UnknownChain {
                name: chain.to_string(),
            })?;
        Ok((set, Self::builtin(set)?))
    }

    /// Reads a file: `.toml` is dyno's format, anything else is Substrate's JSON.
    pub fn load(path: &Path) -> Result<RequirementSet, RequirementsError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RequirementsError::Read {
            path: shown.clone(),
            source,
        })?;
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        if is_toml {
            Self::from_dyno_toml(&text, &shown)
        } else {
            Self::from_substrate_json(&text, &shown)
        }
    }

    /// Parses Substrate's `reference_hardware.json`: a list of `{metric, minimum}` with
    /// minimums in MiB/s. Unknown extra keys are tolerated (chains add their own, e.g.
    /// `check_on_rc_authority`).
    pub fn from_substrate_json(
        text: &str,
        path: &str,
    ) -> Result<RequirementSet, RequirementsError> {
        #[derive(Deserialize)]
        enum SubstrateMetric {
            Blake2256,
            Blake2256Parallel { num_cores: u64 },
            Sr25519Verify,
            MemCopy,
            DiskSeqWrite,
            DiskRndWrite,
        }
        #[derive(Deserialize)]
        struct Entry {
            metric: SubstrateMetric,
            minimum: f64,
            #[serde(default)]
            validator_only: bool,
            #[serde(default)]
            check_on_rc_authority: bool,
        }
        let entries: Vec<Entry> =
            serde_json::from_str(text).map_err(|e| RequirementsError::Invalid {
                path: path.to_string(),
                line: Some(e.line()),
                message: e.to_string(),
            })?;
        let mut requirements = Vec::with_capacity(entries.len());
        for (i, e) in entries.into_iter().enumerate() {
            let (metric, num_cores) = match e.metric {
                SubstrateMetric::Blake2256 => (MetricId::Blake2256, None),
                SubstrateMetric::Blake2256Parallel { num_cores } => (
                    MetricId::Blake2256Parallel,
                    Some(usize::try_from(num_cores).unwrap_or(usize::MAX)),
                ),
                SubstrateMetric::Sr25519Verify => (MetricId::Sr25519Verify, None),
                SubstrateMetric::MemCopy => (MetricId::MemCopy, None),
                SubstrateMetric::DiskSeqWrite => (MetricId::DiskSeqWrite, None),
                SubstrateMetric::DiskRndWrite => (MetricId::DiskRndWrite, None),
            };
            let invalid = |message: String| RequirementsError::Invalid {
                path: path.to_string(),
                line: None,
                message: format!("entry {} ({metric}): {message}", i + 1),
            };
            if !(e.minimum.is_finite() && e.minimum > 0.0) {
                return Err(invalid(format!(
                    "minimum must be a positive number, got {}",
                    e.minimum
                )));
            }
            if let Some(n) = num_cores.filter(|n| !(1..=MAX_PARALLEL_CORES).contains(n)) {
                return Err(invalid(format!(
                    "num_cores must be in 1..={MAX_PARALLEL_CORES} (as --parallel-cores), got {n}"
                )));
            }
            requirements.push(Requirement {
                metric,
                num_cores,
                minimum: e.minimum * MIB,
                validator_only: e.validator_only || e.check_on_rc_authority,
            });
        }
        check_unique(&requirements, path)?;
        Ok(RequirementSet {
            name: path.to_string(),
            requirements,
        })
    }

    /// Parses dyno's TOML format (see `requirements/example.toml`): a `name` and
    /// `[[requirement]]` tables with `metric`, `minimum`, an optional `unit` (default
    /// MiB/s for byte rates, /s for rates), `num_cores` and `validator_only`.
    pub fn from_dyno_toml(text: &str, path: &str) -> Result<RequirementSet, RequirementsError> {
        let file_path = Path::new(path);
        let invalid = |span: Option<std::ops::Range<usize>>, key: String, message: String| {
            RequirementsError::File(dyno_model::ConfigDiagnostic::new(
                file_path,
                text,
                span,
                Some(&key),
                message,
            ))
        };
        let file: DynoFile = dyno_model::ConfigDiagnostic::parse_toml(file_path, text)
            .map_err(RequirementsError::File)?;
        let mut requirements: Vec<Requirement> = Vec::new();
        for (i, e) in file.requirement.into_iter().enumerate() {
            let key = |k: &str| format!("requirement[{i}].{k}");
            let metric = MetricId::parse(e.metric.get_ref()).ok_or_else(|| {
                invalid(
                    Some(e.metric.span()),
                    key("metric"),
                    format!(
                        "unknown metric `{}`; known metrics: {}",
                        e.metric.get_ref(),
                        MetricId::ALL.map(|m| m.spellings()).join(", ")
                    ),
                )
            })?;
            if requirements.iter().any(|o| o.metric == metric) {
                return Err(invalid(
                    Some(e.metric.span()),
                    key("metric"),
                    format!("metric {metric} is listed twice"),
                ));
            }
            let scale = match &e.unit {
                None => 1.0 * default_unit_scale(metric),
                Some(u) => unit_scale(metric, u.get_ref())
                    .map_err(|e| invalid(Some(u.span()), key("unit"), e.to_string()))?,
            };
            let minimum = *e.minimum.get_ref();
            if !(minimum.is_finite() && minimum > 0.0) {
                return Err(invalid(
                    Some(e.minimum.span()),
                    key("minimum"),
                    format!("must be a positive number, got {minimum}"),
                ));
            }
            let num_cores = match &e.num_cores {
                None => None,
                Some(n) if metric != MetricId::Blake2256Parallel => {
                    return Err(invalid(
                        Some(n.span()),
                        key("num_cores"),
                        format!("applies only to Blake2256Parallel, not {metric}"),
                    ))
                }
                Some(n) => Some(
                    usize::try_from(*n.get_ref())
                        .ok()
                        .filter(|n| (1..=MAX_PARALLEL_CORES).contains(n))
                        .ok_or_else(|| {
                            invalid(
                                Some(n.span()),
                                key("num_cores"),
                                format!(
                                    "must be in 1..={MAX_PARALLEL_CORES} (as --parallel-cores), got {}",
                                    n.get_ref()
                                ),
                            )
                        })?,
                ),
            };
            requirements.push(Requirement {
                metric,
                num_cores,
                minimum: minimum * scale,
                validator_only: e.validator_only,
            });
        }
        Ok(RequirementSet {
            name: file.name.unwrap_or_else(|| path.to_string()),
            requirements,
        })
    }

    /// The requirement for a metric, if the set has one.
    pub fn get(&self, metric: MetricId) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.metric == metric)
    }

    /// Threads for the parallel BLAKE2 metric: the set's `num_cores`, else upstream's 8.
    pub fn parallel_cores(&self) -> usize {
        self.get(MetricId::Blake2256Parallel)
            .and_then(|r| r.num_cores)
            .unwrap_or(8)
    }
}

fn check_unique(requirements: &[Requirement], path: &str) -> Result<(), RequirementsError> {
    for (i, r) in requirements.iter().enumerate() {
        if requirements[..i].iter().any(|o| o.metric == r.metric) {
            return Err(RequirementsError::Invalid {
                path: path.to_string(),
                line: None,
                message: format!("metric {} is listed twice", r.metric),
            });
        }
    }
    Ok(())
}

fn default_unit_scale(metric: MetricId) -> f64 {
    match metric.unit() {
        Unit::BytesPerSecond => MIB,
        _ => 1.0,
    }
}

/// Base units per one of the named unit, checked against the metric's kind.
fn unit_scale(metric: MetricId, unit: &str) -> Result<f64, RequirementsError> {
    let byte_units = [
        ("B/s", 1.0),
        ("KiB/s", 1024.0),
        ("MiB/s", MIB),
        ("GiB/s", MIB * 1024.0),
    ];
    let rate_units = [("/s", 1.0), ("k/s", 1e3), ("M/s", 1e6), ("G/s", 1e9)];
    let time_units = [("ns", 1.0), ("µs", 1e3), ("us", 1e3), ("ms", 1e6)];
    let table: &[(&str, f64)] = match metric.unit() {
        Unit::BytesPerSecond => &byte_units,
        Unit::Nanoseconds => &time_units,
        _ => &rate_units,
    };
    table
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, s)| *s)
        .ok_or_else(|| RequirementsError::UnitMismatch {
            unit: unit.to_string(),
            metric,
            allowed: table.iter().map(|t| t.0).collect(),
        })
}

/// How one score compares with its minimum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgement {
    /// score / minimum.
    pub relative: f64,
    /// relative >= 1 - tolerance/100.
    pub passed: bool,
    /// The score is off by a factor of 100 or more either way: upstream rejects such
    /// results as a broken measurement rather than a slow machine.
    pub bad_result: bool,
}

/// Substrate's pass rule and sanity bounds. `tolerance_percent` must be within 0..=100.
/// For a lower-is-better metric (a time per transaction) the requirement is a maximum and
/// `relative` is limit / score, so "relative >= 1 passes" reads the same for both.
pub fn judge(score: f64, minimum: f64, tolerance_percent: f64, direction: Direction) -> Judgement {
    let relative = match direction {
        Direction::HigherIsBetter => score / minimum,
        Direction::LowerIsBetter => minimum / score,
    };
    Judgement {
        relative,
        passed: relative >= 1.0 - tolerance_percent / 100.0,
        bad_result: !(relative < 100.0 && relative > 0.01),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: Direction = Direction::HigherIsBetter;

    #[test]
    fn the_default_set_is_the_current_reference_hardware() {
        let set = RequirementSet::builtin("substrate").unwrap();
        let mib = |m| set.get(m).unwrap().minimum / MIB;
        assert_eq!(mib(MetricId::Blake2256), 1000.0);
        assert_eq!(mib(MetricId::Blake2256Parallel), 1000.0);
        assert_eq!(mib(MetricId::Sr25519Verify), 0.622675781);
        assert_eq!(mib(MetricId::MemCopy), 11768.341);
        assert_eq!(mib(MetricId::DiskSeqWrite), 950.0);
        assert_eq!(mib(MetricId::DiskRndWrite), 420.0);
        assert_eq!(set.parallel_cores(), 8);
        assert!(set.get(MetricId::Blake2256Parallel).unwrap().validator_only);
        assert_eq!(set.requirements.len(), 6);
    }

    #[test]
    fn older_sets_are_selectable_and_unknown_names_list_the_choices() {
        let old = RequirementSet::builtin("substrate-2022").unwrap();
        assert_eq!(old.get(MetricId::Blake2256).unwrap().minimum, 1029.0 * MIB);
        // By any spelling of the metric; none for a metric the set does not require.
        assert_eq!(old.minimum_of("blake2-256"), Some(1029.0 * MIB));
        assert_eq!(old.minimum_of("Blake2256"), Some(1029.0 * MIB));
        assert_eq!(old.minimum_of("no-such-metric"), None);
        assert_eq!(
            old.parallel_cores(),
            8,
            "no parallel entry: upstream default"
        );
        let err = RequirementSet::builtin("polkadot-1999")
            .unwrap_err()
            .to_string();
        assert!(err.contains("substrate-2023-02"), "{err}");
    }

    #[test]
    fn chains_pick_their_built_in_set_and_unknown_chains_list_the_known() {
        for chain in ["polkadot", "Kusama", " dev ", "westend-local"] {
            let (name, set) = RequirementSet::for_chain(chain).unwrap();
            assert_eq!(name, "substrate", "{chain}");
            assert_eq!(set, RequirementSet::builtin("substrate").unwrap());
        }
        let err = RequirementSet::for_chain("moonbeam, polkadot")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`moonbeam, polkadot`"), "quoted whole: {err}");
        assert!(err.contains("polkadot, polkadot-dev"), "{err}");
        assert!(err.contains("--requirements FILE"), "{err}");
        // Every chain's set exists.
        for chain in chain_names() {
            assert!(RequirementSet::for_chain(chain).is_ok(), "{chain}");
        }
    }

    #[test]
    fn substrate_json_from_a_chain_with_extra_keys_parses() {
        let json = r#"[
            {"metric": "Blake2256", "minimum": 783.27},
            {"metric": {"Blake2256Parallel": {"num_cores": 4}}, "minimum": 966.43, "check_on_rc_authority": true}
        ]"#;
        let set = RequirementSet::from_substrate_json(json, "chain.json").unwrap();
        assert_eq!(set.parallel_cores(), 4);
        assert!(set.requirements[1].validator_only);
        assert_eq!(set.requirements[0].minimum, 783.27 * MIB);
    }

    #[test]
    fn substrate_json_errors_name_file_and_line() {
        let json = "[\n {\"metric\": \"Blake2256\", \"minimum\": 1.0},\n {\"metric\": \"Blake3\", \"minimum\": 1.0}\n]";
        let err = RequirementSet::from_substrate_json(json, "bad.json").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("bad.json, line 3"), "{msg}");
        assert!(msg.contains("Blake3"), "{msg}");
        let err = RequirementSet::from_substrate_json(
            "[{\"metric\": \"MemCopy\", \"minimum\": -1}]",
            "neg.json",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("positive"), "{err}");
        for n in ["5000", "1000000000", "0", "18446744073709551615"] {
            let json = format!(
                "[{{\"metric\": {{\"Blake2256Parallel\": {{\"num_cores\": {n}}}}}, \"minimum\": 1.0}}]"
            );
            let err = RequirementSet::from_substrate_json(&json, "cores.json")
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!("invalid requirements file cores.json: entry 1 (Blake2256Parallel): num_cores must be in 1..=4096 (as --parallel-cores), got {n}")
            );
        }
        let json =
            "[{\"metric\": {\"Blake2256Parallel\": {\"num_cores\": 1e9}}, \"minimum\": 1.0}]";
        let err = RequirementSet::from_substrate_json(json, "cores.json").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid requirements file cores.json, line 1"),
            "{err}"
        );
    }

    #[test]
    fn dyno_toml_sets_extra_metrics_with_units() {
        let text = include_str!("../requirements/example.toml");
        let set = RequirementSet::from_dyno_toml(text, "example.toml").unwrap();
        assert_eq!(set.name, "example validator set");
        assert_eq!(set.get(MetricId::Sha256Chain).unwrap().minimum, 10e6);
        assert_eq!(
            set.get(MetricId::Sr25519Verify).unwrap().minimum,
            637.62 * 1024.0
        );
        assert_eq!(
            set.get(MetricId::MemCopy).unwrap().minimum,
            11.49 * MIB * 1024.0
        );
        assert_eq!(set.parallel_cores(), 8);
    }

    #[test]
    fn dyno_toml_errors_name_file_line_column_and_key() {
        let cases = [
            (
                "[[requirement]]\nmetric = \"Blake3\"\nminimum = 1\n",
                "r.toml:2:10: key `requirement[0].metric`: unknown metric",
            ),
            (
                "[[requirement]]\nmetric = \"Sha256Chain\"\nminimum = 1\nunit = \"MiB/s\"\n",
                "r.toml:4:8: key `requirement[0].unit`: ",
            ),
            (
                "[[requirement]]\nmetric = \"MemCopy\"\nminimum = 1\ncolour = 3\n",
                "r.toml:4:1: key `requirement[0].colour`: unknown field",
            ),
            (
                "[[requirement]]\nmetric = \"MemCopy\"\nminimum = -5\n",
                "r.toml:3:11: key `requirement[0].minimum`: must be a positive number",
            ),
            (
                "[[requirement]]\nmetric = \"MemCopy\"\nminimum = \"fast\"\n",
                "r.toml:3:11: key `requirement[0].minimum`: invalid type",
            ),
            (
                "[[requirement]]\nmetric = \"MemCopy\"\nnum_cores = 2\nminimum = 1\n",
                "r.toml:3:13: key `requirement[0].num_cores`: applies only",
            ),
            (
                "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 5000\nminimum = 1\n",
                "r.toml:3:13: key `requirement[0].num_cores`: must be in 1..=4096 (as --parallel-cores), got 5000",
            ),
            (
                "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 1000000000\nminimum = 1\n",
                "r.toml:3:13: key `requirement[0].num_cores`: must be in 1..=4096",
            ),
            (
                "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 0\nminimum = 1\n",
                "r.toml:3:13: key `requirement[0].num_cores`: must be in 1..=4096",
            ),
            (
                "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 1e9\nminimum = 1\n",
                "r.toml:3:13: key `requirement[0].num_cores`: invalid type",
            ),
            (
                "[[requirement]]\nmetric = \"MemCopy\"\nminimum = 1\n[[requirement]]\nmetric = \"memcopy\"\nminimum = 2\n",
                "r.toml:5:10: key `requirement[1].metric`: metric MemCopy is listed twice",
            ),
        ];
        for (text, start) in cases {
            let msg = RequirementSet::from_dyno_toml(text, "r.toml")
                .unwrap_err()
                .to_string();
            assert!(msg.starts_with(start), "{msg}");
            let line: usize = start.split(':').nth(1).unwrap().parse().unwrap();
            let written = text.lines().nth(line - 1).unwrap();
            assert!(msg.contains(&format!("\n{line} | {written}\n")), "{msg}");
        }
    }

    #[test]
    fn duplicates_are_refused() {
        let text = "[[requirement]]\nmetric = \"MemCopy\"\nminimum = 1\n[[requirement]]\nmetric = \"memcopy\"\nminimum = 2\n";
        let msg = RequirementSet::from_dyno_toml(text, "d.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("listed twice"), "{msg}");
    }

    #[test]
    fn pass_rule_and_sanity_bounds_follow_upstream() {
        // Exactly at the tolerance edge passes; just below fails.
        assert!(judge(90.0, 100.0, 10.0, H).passed);
        assert!(!judge(89.999, 100.0, 10.0, H).passed);
        assert!(judge(100.0, 100.0, 0.0, H).passed);
        assert!(!judge(99.9, 100.0, 0.0, H).passed);
        assert!(judge(0.0001, 100.0, 100.0, H).passed);
        assert!(judge(100.0 * 100.0, 100.0, 10.0, H).bad_result);
        assert!(judge(1.0, 100.0, 10.0, H).bad_result);
        assert!(!judge(1.01, 100.0, 10.0, H).bad_result);
        assert!(!judge(9999.0, 100.0, 10.0, H).bad_result);
    }

    #[test]
    fn a_time_passes_when_it_is_below_its_limit() {
        let l = Direction::LowerIsBetter;
        let fast = judge(800.0, 1000.0, 0.0, l);
        assert!(fast.passed && fast.relative == 1.25);
        assert!(
            judge(1100.0, 1000.0, 10.0, l).passed,
            "1000/1100 = 0.909 >= 0.9"
        );
        assert!(!judge(1200.0, 1000.0, 10.0, l).passed);
        let text = "[[requirement]]\nmetric = \"TransferExecute\"\nminimum = 2\nunit = \"µs\"\n";
        let set = RequirementSet::from_dyno_toml(text, "t.toml").unwrap();
        assert_eq!(set.get(MetricId::TransferExecute).unwrap().minimum, 2000.0);
    }

    proptest! {
        #[test]
        fn a_higher_score_never_judges_worse(min in 1.0f64..1e10, s in 0.0f64..1e12, extra in 0.0f64..1e12, tol in 0.0f64..=100.0) {
            let a = judge(s, min, tol, H);
            let b = judge(s + extra, min, tol, H);
            prop_assert!(!a.passed || b.passed);
        }

        #[test]
        fn toml_parser_never_panics(text in "\\PC{0,200}") {
            let _ = RequirementSet::from_dyno_toml(&text, "fuzz.toml");
            let _ = RequirementSet::from_substrate_json(&text, "fuzz.json");
        }
    }
}
