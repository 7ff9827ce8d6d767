//! `dyno tune report --format json`: the judged study as data.
//!
//! Schema `dyno.tune.report`, version 1. Field names are snake_case and stable; values are
//! in the base unit named by each metric's `unit` (`B/s`, `/s`, `s`, `ns`, `B`...), at full
//! precision; times are RFC 3339 UTC. A new field may be added within a version; a field
//! renamed or removed, or a meaning changed, bumps `version`.
//!
//! ```text
//! { "schema": "dyno.tune.report/1", "study", "generated_at",
//!   "rounds", "benchmark_runs", "alpha", "min_effect", "reference",
//!   "metrics":  [{ "name", "unit", "direction" }],
//!   "subjects": [{ "label", "kind": "variant"|"baseline", "variant_id", "settings",
//!                  "profile_section", "build_commands",
//!                  "status", "status_detail", "recommended", "pareto", "near_pareto",
//!                  "build": { "build_time_s", "binary_size_bytes", "rustc",
//!                             "pgo": { "mode", "instrumented_build_s", "training_s",
//!                                      "final_build_s", "bolt_s", "profile_sha256",
//!                                      "training_commands", "training_same_input" } },
//!                  "cpu_assumption": { "target_cpu", "features", "portable_level",
//!                                      "missing_here" },
//!                  "results": { METRIC: { "n", "median", "ci95_low", "ci95_high",
//!                                          "change_vs_reference", "change_ci95_low",
//!                                          "change_ci95_high", "verdict" } } }],
//!   "failed_builds": [{ "label", "error_tail" }],
//!   "pareto", "near_pareto", "recommended": [labels],
//!   "snippets": [{ "label", "profile_section", "build_commands" }],
//!   "warnings": [text],
//!   "per_cpu": [{ "cpu_model", "hosts", "runs", "recommended": [labels],
//!                 "results": { METRIC: [{ "label", "kind", "hosts", "runs", "n",
//!                                         "median", "ci95_low", "ci95_high",
//!                                         "recommended" }] } }] }
//! ```
//!
//! `per_cpu` is empty unless the store holds runs of the study from more than one CPU
//! model (a fleet store): then it has one entry per model as recorded, rows best first.

use crate::report::StudyReport;
use dyno_stats::Verdict;
use serde_json::{json, Map, Value};

/// The schema of every document: its name and major version (docs/output.md), which
/// changes only when a field changes meaning or goes away.
pub const SCHEMA: &str = "dyno.tune.report/1";

fn status_code(detail: &str) -> &'static str {
    if detail.starts_with("eliminated") {
        "eliminated"
    } else if detail.starts_with("retired") {
        "retired"
    } else if detail == "baseline" {
        "baseline"
    } else if detail == "recommended" {
        "recommended"
    } else {
        "contender"
    }
}

fn verdict(v: Option<Verdict>) -> Value {
    match v {
        Some(Verdict::Improvement) => "improvement".into(),
        Some(Verdict::Regression) => "regression".into(),
        Some(Verdict::NoSignificantChange) => "no_significant_change".into(),
        None => Value::Null,
    }
}

impl StudyReport {
    /// The report as a JSON document (see the module documentation); `study` is the study
    /// file as given, `generated_unix` the time of the report in seconds since the epoch.
    pub fn json(&self, study: &str, generated_unix: f64) -> Value {
        let labels =
            |v: &[usize]| -> Vec<String> { v.iter().map(|&i| self.labels[i].clone()).collect() };
        let subjects: Vec<Value> = (0..self.labels.len())
            .map(|s| self.subject_json(s))
            .collect();
        json!({
            "schema": SCHEMA,
            "study": study,
            "generated_at": dyno_model::format_timestamp(generated_unix),
            "rounds": self.rounds,
            "benchmark_runs": self.jobs,
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "reference": self.reference.map(|r| self.labels[r].clone()),
            "metrics": self.metrics.iter().map(|m| json!({
                "name": m.metric.name,
                "unit": m.metric.unit.symbol(),
                "direction": m.metric.direction,
            })).collect::<Vec<_>>(),
            "subjects": subjects,
            "failed_builds": self.failed_builds.iter().map(|(label, tail)| json!({
                "label": label,
                "error_tail": tail,
            })).collect::<Vec<_>>(),
            "pareto": labels(&self.pareto),
            "near_pareto": labels(&self.near_pareto),
            "recommended": labels(&self.recommended),
            "snippets": self.snippets.iter().map(|(label, section, build)| json!({
                "label": label,
                "profile_section": section,
                "build_commands": build,
            })).collect::<Vec<_>>(),
            "warnings": self.warnings,
            "per_cpu": crate::report_cpu::per_cpu_json(&self.per_cpu),
        })
    }

    fn subject_json(&self, s: usize) -> Value {
        let variant = self.variants.get(s).cloned().flatten();
        let mut results = Map::new();
        for m in &self.metrics {
            if let Some(row) = m.rows.iter().find(|r| r.subject == s) {
                results.insert(
                    m.metric.name.clone(),
                    json!({
                        "n": row.n,
                        "median": row.median,
                        "ci95_low": row.ci.0,
                        "ci95_high": row.ci.1,
                        "change_vs_reference": row.change,
                        "change_ci95_low": row.change_ci.map(|c| c.0),
                        "change_ci95_high": row.change_ci.map(|c| c.1),
                        "verdict": verdict(row.verdict),
                    }),
                );
            }
        }
        let build = self.builds[s].as_ref().map(|(time, size, rustc)| {
            json!({
                "build_time_s": time,
                "binary_size_bytes": size,
                "rustc": rustc,
                "pgo": self.pgo[s].as_ref().map(|p| json!({
                    "mode": p.mode,
                    "instrumented_build_s": p.instrumented_build_s,
                    "training_s": p.training_s,
                    "final_build_s": p.final_build_s,
                    "bolt_s": p.bolt_s,
                    "profile_sha256": p.profile_sha256,
                    "training_commands": p.training,
                    "training_same_input": p.same_input,
                })),
            })
        });
        json!({
            "label": self.labels[s],
            "kind": if variant.is_some() { "variant" } else { "baseline" },
            "variant_id": variant.as_ref().map(|v| v.id.clone()),
            "settings": variant.as_ref().map(|v| &v.settings),
            "profile_section": variant.as_ref().map(|v| v.profile_section(&self.profile)),
            "build_commands": self.commands[s],
            "status": status_code(&self.status[s]),
            "status_detail": self.status[s],
            "recommended": self.recommended.contains(&s),
            "pareto": self.pareto.contains(&s),
            "near_pareto": self.near_pareto.contains(&s),
            "build": build,
            "cpu_assumption": self.cpu[s],
            "results": results,
        })
    }
}
