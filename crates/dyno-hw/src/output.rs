//! What `dyno machine` shows: the host block, the table in Substrate's layout (plus spread
//! columns when repeated), the summary and verdict lines, the CSV table, the JSON
//! document, and the requirements section of a stored machine run's report. The binary
//! picks the format and prints.

use crate::report::{judge_stored, MachineReport, MachineSettings};
use crate::{MetricId, MetricResult, Verdict};
use dyno_model::{format_value, Host, RunStatus};
use dyno_report::{Align, Cell, Section, Table, TableFormat, Verdict as Badge};
use dyno_store::{RunId, StoredRun};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// A judged machine run, as the outputs show it.
#[derive(Debug, Clone)]
pub struct MachineOutcome {
    /// How it measured and judged (threads, repetitions, the requirement set's name...).
    pub settings: MachineSettings,
    /// The machine.
    pub host: Host,
    /// Warnings about the measurement (a busy CPU, a debug build...).
    pub warnings: Vec<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// The run in the results store, when saved.
    pub run_id: Option<RunId>,
    /// The dyno build as JSON, and whether it is a debug build.
    pub build: (Value, bool),
}

/// The host block printed before measuring starts; `build` describes the dyno build.
pub fn host_block(host: &Host, base_path: &Path, build: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Host      {}", host.hostname);
    let _ = writeln!(s, "CPU       {}", or_unknown(&host.cpu_model));
    let _ = writeln!(s, "Cores     {} online", host.cores_online);
    let _ = writeln!(
        s,
        "Memory    {}",
        format_value(host.memory_bytes as f64, dyno_model::Unit::Bytes)
    );
    let _ = writeln!(s, "Kernel    {}", or_unknown(&host.kernel));
    let _ = writeln!(
        s,
        "Virtual   {}",
        host.virtualization.as_deref().unwrap_or("none detected")
    );
    let fs = host
        .filesystem
        .as_ref()
        .map(|f| {
            format!(
                "{} ({} on {})",
                f.fs_type,
                f.source,
                f.mount_point.display()
            )
        })
        .unwrap_or_else(|| "unknown".into());
    let _ = writeln!(s, "Disk dir  {}: {fs}", base_path.display());
    let _ = writeln!(s, "Build     {build}");
    s.push('\n');
    s
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "unknown"
    } else {
        s
    }
}

impl MachineOutcome {
    fn function_name(&self, id: MetricId) -> String {
        let name = id.display(self.settings.parallel_cores);
        if id.is_substrate() {
            name
        } else {
            format!("{name} *")
        }
    }

    fn repeated(&self) -> bool {
        self.settings.repeat > 1
    }

    /// The outcome as `dyno machine` prints it in `format`: the table and its footer
    /// (terminal, Markdown), or one row per metric (CSV).
    pub fn text(&self, format: TableFormat) -> String {
        match format {
            TableFormat::Csv => format.render(&self.csv_table()),
            f => f.render(&self.table()) + "\n" + &self.footer(),
        }
    }

    /// Substrate's columns, then the spread when repeated.
    pub fn table(&self) -> Table {
        let mut t = Table::new("dyno machine")
            .column("Category", Align::Left)
            .column("Function", Align::Left)
            .column("Score", Align::Right)
            .column("Minimum", Align::Right)
            .column("Result", Align::Left);
        if self.repeated() {
            t = t
                .column("95% CI of median", Align::Right)
                .column("CV", Align::Right)
                .column("Runs", Align::Right);
        }
        for m in &self.verdict.results {
            let unit = m.id.unit();
            let mut row = vec![
                Cell::new(m.id.category()),
                Cell::new(self.function_name(m.id)),
                Cell::new(format_value(m.median, unit)),
                Cell::new(
                    m.requirement
                        .as_ref()
                        .map(|q| match m.id.direction() {
                            // For a time per transaction the requirement is a maximum.
                            dyno_model::Direction::LowerIsBetter => {
                                format!("≤ {}", format_value(q.minimum, unit))
                            }
                            dyno_model::Direction::HigherIsBetter => format_value(q.minimum, unit),
                        })
                        .unwrap_or_else(|| "-".into()),
                ),
                result_cell(m),
            ];
            if self.repeated() {
                row.push(Cell::new(
                    m.interval
                        .map(|(lo, hi, _)| {
                            format!("{} .. {}", format_value(lo, unit), format_value(hi, unit))
                        })
                        .unwrap_or_else(|| "-".into()),
                ));
                // A metric whose run was cut short can hold one repetition: no spread, "-".
                row.push(match m.cv {
                    Some(cv) if cv > 0.02 => Cell::new(format!("{:.2} %", cv * 100.0)).warn(),
                    Some(cv) => Cell::new(format!("{:.2} %", cv * 100.0)),
                    None => Cell::new("-"),
                });
                row.push(Cell::new(m.repetitions.len().to_string()));
            }
            t.push_row(row);
        }
        t
    }

    /// Footnotes, Substrate's summary line and the verdict.
    pub fn footer(&self) -> String {
        let v = &self.verdict;
        let mut s = String::new();
        if v.results.iter().any(|m| !m.id.is_substrate()) {
            s.push_str("* not part of Substrate's benchmark set (a dyno extra metric)\n");
        }
        if self.repeated() {
            let level = v
                .results
                .iter()
                .filter_map(|m| m.interval.map(|i| i.2))
                .fold(f64::NAN, f64::min);
            let _ = writeln!(
                s,
                "Scores are medians of {} interleaved repetitions; the interval is distribution-free (order statistics){}.",
                self.settings.repeat,
                if level.is_finite() && level < 0.95 {
                    format!(", and with this few repetitions it covers only {:.2}%", level * 100.0)
                } else {
                    String::new()
                }
            );
        }
        if self.settings.parallel_cores > self.host.cores_online
            && v.results
                .iter()
                .any(|m| m.id == MetricId::Blake2256Parallel)
        {
            let _ = writeln!(
                s,
                "Note: this machine has {} core(s) online, fewer than the {} threads of BLAKE2-256-Parallel-{}.",
                self.host.cores_online, self.settings.parallel_cores, self.settings.parallel_cores
            );
        }
        let _ = writeln!(s, "Requirements: {}", self.settings.requirements);
        let _ = writeln!(
            s,
            "From {} benchmarks in total, {} passed and {} failed ({:.0}% fault tolerance).",
            v.judged, v.passed, v.failed, v.tolerance
        );
        if !v.bad_results.is_empty() {
            let names: Vec<_> = v.bad_results.iter().map(|m| m.name()).collect();
            let _ = writeln!(
                s,
                "Results off by a factor of 100 or more were rejected as broken measurements: {}",
                names.join(", ")
            );
        }
        s.push_str(if v.meets_requirements() {
            "The hardware meets the requirements.\n"
        } else {
            "The hardware fails to meet the requirements.\n"
        });
        if let Some(id) = self.run_id {
            let _ = writeln!(s, "Saved as run {id} (dyno results show {id}).");
        }
        if self.build.1 {
            s.push_str("WARNING: measured by a debug build; these scores are meaningless.\n");
        }
        s
    }

    /// One row per metric, numbers at full precision (the CSV format).
    pub fn csv_table(&self) -> Table {
        let mut t = Table::new("dyno machine");
        for h in [
            "metric",
            "category",
            "function",
            "substrate",
            "unit",
            "score",
            "minimum",
            "relative",
            "passed",
            "ci_low",
            "ci_high",
            "ci_level",
            "cv",
            "repetitions",
        ] {
            t = t.column(h, Align::Left);
        }
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        for m in &self.verdict.results {
            t.push_row([
                m.id.name().to_string(),
                m.id.category().to_string(),
                m.id.display(self.settings.parallel_cores),
                m.id.is_substrate().to_string(),
                m.id.unit().symbol().to_string(),
                m.median.to_string(),
                opt(m.requirement.as_ref().map(|q| q.minimum)),
                opt(m.judgement.map(|j| j.relative)),
                m.judgement
                    .map(|j| j.passed.to_string())
                    .unwrap_or_default(),
                opt(m.interval.map(|i| i.0)),
                opt(m.interval.map(|i| i.1)),
                opt(m.interval.map(|i| i.2)),
                opt(m.cv),
                m.repetitions.len().to_string(),
            ]);
        }
        t
    }

    /// The JSON document (`dyno.machine/1`).
    pub fn report(&self) -> MachineReport {
        MachineReport::new(
            self.settings.clone(),
            self.host.clone(),
            &self.verdict,
            self.warnings.clone(),
            self.run_id,
            self.build.clone(),
        )
    }
}

fn result_cell(m: &MetricResult) -> Cell {
    match m.judgement {
        None => Cell::new("no minimum"),
        Some(j) if j.bad_result => {
            Cell::new(format!("❌ Bad result ({:>5.1} %)", j.relative * 100.0)).bad()
        }
        Some(j) if j.passed => Cell::new(format!("✅ Pass ({:>5.1} %)", j.relative * 100.0)).good(),
        Some(j) => Cell::new(format!("❌ Fail ({:>5.1} %)", j.relative * 100.0)).bad(),
    }
}

/// The "Requirements" section of a stored machine run's report (`dyno results report`)
/// and of its page in `dyno serve`: the minimums the run recorded judge its samples again,
/// so a report made later judges against what the run saw. It is the run's answer (the
/// overall verdict, then pass or fail per requirement, the result column first), so it
/// is marked [`Section::answer`]. `None` for runs of other commands.
pub fn stored_verdict_section(run: &StoredRun) -> Option<Section> {
    if run.info.command != "machine" {
        return None;
    }
    let heading = format!("Requirements: run {}", run.id);
    let metrics: Vec<&str> = run.metrics.iter().map(|m| m.name.as_str()).collect();
    let samples: Vec<(&str, f64)> = run
        .samples
        .iter()
        .map(|s| (s.metric.as_str(), s.value))
        .collect();
    let Some(judged) = judge_stored(&run.info.settings, &metrics, &samples) else {
        return Some(Section::new(heading).note(
            "This run was judged against a requirements file whose minimums it did not record; no verdict can be rebuilt.",
        ));
    };
    let (set, v, parallel_cores) = (&judged.requirements, &judged.verdict, judged.parallel_cores);
    let mut table = Table::new("Verdict")
        .column("Result", Align::Left)
        .column("Category", Align::Left)
        .column("Function", Align::Left)
        .column("Score (median)", Align::Right)
        .column("Minimum", Align::Right);
    for m in &v.results {
        let unit = m.id.unit();
        let result = match m.judgement {
            None => Cell::new("no minimum"),
            Some(j) if j.bad_result => {
                Cell::new(format!("Bad result ({:.1} %)", j.relative * 100.0)).bad()
            }
            Some(j) if j.passed => Cell::new(format!("Pass ({:.1} %)", j.relative * 100.0)).good(),
            Some(j) => Cell::new(format!("Fail ({:.1} %)", j.relative * 100.0)).bad(),
        };
        table.push_row([
            result,
            Cell::new(m.id.category()),
            Cell::new(m.id.display(parallel_cores)),
            Cell::new(format_value(m.median, unit)),
            Cell::new(
                m.requirement
                    .as_ref()
                    .map(|q| format_value(q.minimum, unit))
                    .unwrap_or_else(|| "-".into()),
            ),
        ]);
    }
    let summary = format!(
        "Against {}: from {} benchmarks in total, {} passed and {} failed ({:.0}% fault tolerance).",
        set.name, v.judged, v.passed, v.failed, v.tolerance
    );
    let (badge, sentence) = if v.meets_requirements() {
        (Badge::Pass, "The hardware meets the requirements.")
    } else {
        (Badge::Fail, "The hardware fails to meet the requirements.")
    };
    let mut section = Section::new(heading)
        .answer()
        .verdict(badge, format!("{sentence} {summary}"))
        .table(table);
    if run.status != RunStatus::Complete {
        section = section.note(format!(
            "The run is {}: the verdict covers only the metrics it measured.",
            run.status.as_str()
        ));
    }
    Some(section)
}
