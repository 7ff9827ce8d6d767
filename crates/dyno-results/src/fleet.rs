//! The answer to `dyno results fleet`, as a typed, schema-versioned report: each machine
//! (host name and CPU model) counts once, with the median of its newest complete run of
//! the metric; from those medians the distribution per CPU model and over all machines,
//! the share meeting a reference minimum, and where one machine or run stands.
//!
//! Judging a value against a requirement set is the caller's (dyno-hw's): the report
//! takes the verdict as a function, so this crate stays below the command crates.
//!
//! Serde writes a struct's fields in declaration order; the fields here are declared in
//! the order the JSON document has always had (alphabetical), so the bytes do not change.

use dyno_model::{format_timestamp, Direction, Metric};
use dyno_stats::Better;
use dyno_store::{FleetRuns, RunId};
use serde::Serialize;

/// The JSON document's `schema`: name and major version, which changes only when a
/// field changes meaning or goes away (docs/output.md).
pub const FLEET_SCHEMA: &str = "dyno.results.fleet/1";

/// The label of the group of all machines.
pub const ALL_MACHINES: &str = "all machines";

/// Whether a machine's value meets the reference minimum (within its tolerance).
pub type Passes<'a> = Option<&'a dyn Fn(f64) -> bool>;

/// dyno-stats' direction of a stored metric.
pub fn better(direction: Direction) -> Better {
    match direction {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// A metric's name, unit and direction as the reports write them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRef {
    /// `higher-is-better` or `lower-is-better`.
    pub direction: &'static str,
    /// The metric's name.
    pub name: String,
    /// The unit's symbol.
    pub unit: &'static str,
}

impl From<&Metric> for MetricRef {
    fn from(m: &Metric) -> Self {
        MetricRef {
            direction: m.direction.as_str(),
            name: m.name.clone(),
            unit: m.unit.symbol(),
        }
    }
}

/// Which runs were looked at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetFilter {
    /// Only runs of this command.
    pub command: String,
    /// Only CPU models containing this text.
    pub cpu: Option<String>,
}

/// The requirement set every machine was judged against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReference {
    /// The set's minimum of the metric, if it has one.
    pub minimum: Option<f64>,
    /// The set's name.
    pub set: String,
    /// Fault tolerance in percent.
    pub tolerance_percent: f64,
}

/// The distribution of the scores of a group of machines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetGroup {
    /// The CPU model; `None` for the group of all machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Number of machines.
    pub machines: usize,
    /// Largest median.
    pub max: f64,
    /// Median of the medians.
    pub median: f64,
    /// Smallest median.
    pub min: f64,
    /// Share of machines meeting the minimum, when there is one.
    pub passing_share: Option<f64>,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// The machines' medians (for plots; not in the JSON document).
    #[serde(skip)]
    pub values: Vec<f64>,
}

impl FleetGroup {
    fn new(cpu_model: Option<String>, values: Vec<f64>, passes: Passes) -> Option<FleetGroup> {
        let s = dyno_stats::summarize(&values)?;
        let passing_share =
            passes.map(|p| values.iter().filter(|v| p(**v)).count() as f64 / values.len() as f64);
        Some(FleetGroup {
            cpu_model,
            machines: s.n,
            max: s.max,
            median: s.median,
            min: s.min,
            passing_share,
            q1: s.q1,
            q3: s.q3,
            values,
        })
    }

    /// The CPU model, or "all machines".
    pub fn label(&self) -> &str {
        self.cpu_model.as_deref().unwrap_or(ALL_MACHINES)
    }
}

/// One machine's score: the median of its newest complete run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetMachine {
    /// CPU model.
    pub cpu_model: String,
    /// Host name.
    pub hostname: String,
    /// The run (id in this store).
    pub run_id: RunId,
    /// The run's globally unique id.
    pub run_uuid: String,
    /// Number of samples.
    pub samples: usize,
    /// Start of the run (RFC 3339, UTC).
    pub started_at: String,
    /// Median of the run's samples.
    pub value: f64,
}

/// Who is being placed, and where they stand.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetStanding {
    /// CPU model.
    pub cpu_model: String,
    /// Host name.
    pub hostname: String,
    /// Whether the value meets the reference minimum, when there is one.
    pub meets_minimum: Option<bool>,
    /// Percent of all machines this one is at least as good as (ties count half).
    pub percentile_all: f64,
    /// The same among machines with its CPU model.
    pub percentile_cpu: f64,
    /// The run placed.
    pub run_id: RunId,
    /// `run`, `hostname` or `this host`: how the placed machine was chosen.
    pub source: &'static str,
    /// Its value.
    pub value: f64,
}

/// `dyno results fleet`'s report (`dyno.results.fleet/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    /// One group per CPU model, in the store's order (by CPU model).
    pub cpu_models: Vec<FleetGroup>,
    /// Which runs were looked at.
    pub filter: FleetFilter,
    /// Every machine's score.
    pub machines: Vec<FleetMachine>,
    /// The metric.
    pub metric: MetricRef,
    /// All machines together.
    pub overall: Option<FleetGroup>,
    /// The requirement set, when one was given.
    pub reference: Option<FleetReference>,
    /// [`FLEET_SCHEMA`].
    pub schema: &'static str,
    /// Where the chosen machine or run stands, when it is in the store.
    pub standing: Option<FleetStanding>,
    /// The metric with its unit and direction.
    #[serde(skip)]
    pub measured: Metric,
}

impl FleetReport {
    /// Scores every machine of `runs` (whose metric is `metric`) and groups them by CPU
    /// model; `passes` judges a value against `reference`'s minimum. No standing yet.
    pub fn new(
        metric: Metric,
        runs: &FleetRuns,
        filter: FleetFilter,
        reference: Option<FleetReference>,
        passes: Passes,
    ) -> FleetReport {
        let machines: Vec<FleetMachine> = runs
            .machines
            .iter()
            .filter_map(|m| {
                Some(FleetMachine {
                    cpu_model: m.cpu_model.clone(),
                    hostname: m.hostname.clone(),
                    run_id: m.run,
                    run_uuid: m.run_uuid.clone(),
                    samples: m.samples.len(),
                    started_at: format_timestamp(m.started_at),
                    value: dyno_stats::median(&m.samples)?,
                })
            })
            .collect();
        let mut models: Vec<&str> = machines.iter().map(|s| s.cpu_model.as_str()).collect();
        models.dedup(); // the store orders machines by CPU model
        let cpu_models = models
            .iter()
            .filter_map(|model| {
                let values = machines
                    .iter()
                    .filter(|s| s.cpu_model == *model)
                    .map(|s| s.value)
                    .collect();
                FleetGroup::new(Some(model.to_string()), values, passes)
            })
            .collect();
        let overall = FleetGroup::new(None, machines.iter().map(|s| s.value).collect(), passes);
        FleetReport {
            cpu_models,
            filter,
            metric: MetricRef::from(&metric),
            overall,
            reference,
            schema: FLEET_SCHEMA,
            standing: None,
            machines,
            measured: metric,
        }
    }

    /// The machine with this host name (and CPU model, when given).
    pub fn machine(&self, hostname: &str, cpu_model: Option<&str>) -> Option<&FleetMachine> {
        self.machines
            .iter()
            .find(|s| s.hostname == hostname && cpu_model.is_none_or(|c| c == s.cpu_model))
    }

    /// Where a machine with `cpu_model` and this `value` (of run `run_id`) stands among
    /// all machines and among those with its CPU model.
    pub fn place(
        &self,
        source: &'static str,
        hostname: String,
        cpu_model: String,
        run_id: RunId,
        value: f64,
        passes: Passes,
    ) -> FleetStanding {
        let better = better(self.measured.direction);
        let all: Vec<f64> = self.machines.iter().map(|s| s.value).collect();
        let same_cpu: Vec<f64> = self
            .machines
            .iter()
            .filter(|s| s.cpu_model == cpu_model)
            .map(|s| s.value)
            .collect();
        FleetStanding {
            percentile_all: dyno_stats::percentile_rank(&all, value, better),
            percentile_cpu: dyno_stats::percentile_rank(&same_cpu, value, better),
            meets_minimum: passes.map(|p| p(value)),
            cpu_model,
            hostname,
            run_id,
            source,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Unit;
    use dyno_store::MachineRun;

    fn machine(host: &str, cpu: &str, run: RunId, samples: &[f64]) -> MachineRun {
        MachineRun {
            hostname: host.into(),
            cpu_model: cpu.into(),
            run,
            run_uuid: format!("u{run}"),
            started_at: 0.0,
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn groups_count_passing_machines() {
        let pass = |v: f64| v >= 2.0;
        let g = FleetGroup::new(None, vec![1.0, 2.0, 3.0, 4.0], Some(&pass)).unwrap();
        assert_eq!(g.passing_share, Some(0.75));
        assert_eq!(g.median, 2.5);
        assert_eq!(g.label(), ALL_MACHINES);
        assert!(FleetGroup::new(None, vec![], None).is_none());
    }

    #[test]
    fn the_report_keeps_its_json_field_names_and_order() {
        let metric = Metric::new("M", Unit::PerSecond, Direction::HigherIsBetter);
        let runs = FleetRuns {
            metric: Some(metric.clone()),
            machines: vec![
                machine("a", "X", 1, &[1.0, 3.0]),
                machine("b", "X", 2, &[4.0]),
                machine("c", "Y", 3, &[5.0]),
            ],
        };
        let filter = FleetFilter {
            command: "machine".into(),
            cpu: None,
        };
        let mut r = FleetReport::new(metric, &runs, filter, None, None);
        assert_eq!(r.cpu_models.len(), 2);
        assert_eq!(r.overall.as_ref().unwrap().machines, 3);
        let m = r.machine("b", None).unwrap().clone();
        r.standing = Some(r.place("hostname", m.hostname, m.cpu_model, 2, 4.0, None));
        let s = r.standing.as_ref().unwrap();
        assert_eq!((s.percentile_all, s.percentile_cpu), (50.0, 75.0));
        let doc = serde_json::to_value(&r).unwrap();
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "cpu_models",
                "filter",
                "machines",
                "metric",
                "overall",
                "reference",
                "schema",
                "standing"
            ]
        );
        assert_eq!(doc["cpu_models"][0]["cpu_model"], "X");
        assert!(doc["overall"].get("cpu_model").is_none());
        assert_eq!(doc["machines"][0]["value"], 2.0);
    }
}
