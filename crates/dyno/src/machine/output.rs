//! What `dyno machine` prints: the host block, the table in Substrate's layout (plus
//! spread columns when repeated), the summary and verdict lines, and the JSON document.

use super::{Format, Report};
use crate::build_info;
use dyno_hw::{MachineReport, MetricId, MetricResult};
use dyno_model::{format_value, Host};
use dyno_report::{Align, Cell, Table, TableFormat};
use std::fmt::Write as _;
use std::path::Path;

/// The host block printed before measuring starts.
pub fn host_block(host: &Host, base_path: &Path) -> String {
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
    let _ = writeln!(s, "Build     {}", build_info::describe());
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

/// Renders the finished report in the requested format.
pub fn render(r: &Report) -> String {
    match r.args.format {
        Format::Table => {
            let color = crate::term::color_stdout();
            let mut s = TableFormat::Terminal { color }.render(&table(r));
            s.push('\n');
            s.push_str(&footer(r));
            s
        }
        Format::Markdown => {
            let mut s = TableFormat::Markdown.render(&table(r));
            s.push('\n');
            s.push_str(&footer(r));
            s
        }
        Format::Csv => csv(r),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json(r)).expect("JSON values serialise");
            s.push('\n');
            s
        }
    }
}

fn function_name(r: &Report, id: MetricId) -> String {
    let name = id.display(r.parallel_cores);
    if id.is_substrate() {
        name
    } else {
        format!("{name} *")
    }
}

fn repeated(r: &Report) -> bool {
    r.args.repeat > 1
}

/// Substrate's columns, then the spread when repeated.
fn table(r: &Report) -> Table {
    let mut t = Table::new("dyno machine")
        .column("Category", Align::Left)
        .column("Function", Align::Left)
        .column("Score", Align::Right)
        .column("Minimum", Align::Right)
        .column("Result", Align::Left);
    if repeated(r) {
        t = t
            .column("95% CI of median", Align::Right)
            .column("CV", Align::Right)
            .column("Runs", Align::Right);
    }
    for m in &r.verdict.results {
        let unit = m.id.unit();
        let mut row = vec![
            Cell::new(m.id.category()),
            Cell::new(function_name(r, m.id)),
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
        if repeated(r) {
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

/// Footnotes, Substrate's summary line and the verdict.
fn footer(r: &Report) -> String {
    let v = &r.verdict;
    let mut s = String::new();
    if v.results.iter().any(|m| !m.id.is_substrate()) {
        s.push_str("* not part of Substrate's benchmark set (a dyno extra metric)\n");
    }
    if repeated(r) {
        let level = v
            .results
            .iter()
            .filter_map(|m| m.interval.map(|i| i.2))
            .fold(f64::NAN, f64::min);
        let _ = writeln!(
            s,
            "Scores are medians of {} interleaved repetitions; the interval is distribution-free (order statistics){}.",
            r.args.repeat,
            if level.is_finite() && level < 0.95 {
                format!(", and with this few repetitions it covers only {:.2}%", level * 100.0)
            } else {
                String::new()
            }
        );
    }
    if r.parallel_cores > r.host.cores_online
        && v.results
            .iter()
            .any(|m| m.id == MetricId::Blake2256Parallel)
    {
        let _ = writeln!(
            s,
            "Note: this machine has {} core(s) online, fewer than the {} threads of BLAKE2-256-Parallel-{}.",
            r.host.cores_online, r.parallel_cores, r.parallel_cores
        );
    }
    let _ = writeln!(s, "Requirements: {}", r.requirements.name);
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
    if let Some(id) = r.run_id {
        let _ = writeln!(s, "Saved as run {id} (dyno results show {id}).");
    }
    if r.debug_build {
        s.push_str("WARNING: measured by a debug build; these scores are meaningless.\n");
    }
    s
}

fn csv(r: &Report) -> String {
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
    for m in &r.verdict.results {
        t.push_row([
            m.id.name().to_string(),
            m.id.category().to_string(),
            m.id.display(r.parallel_cores),
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
    TableFormat::Csv.render(&t)
}

fn json(r: &Report) -> MachineReport {
    MachineReport::new(
        super::settings(r.args, r.parallel_cores, &r.requirements.name),
        r.host.clone(),
        &r.verdict,
        r.warnings.clone(),
        r.run_id,
        (build_info::json(), r.debug_build),
    )
}
