//! The study report: per metric a table of medians, intervals and changes against the
//! baseline; the Pareto and near-Pareto sets; the recommended variants with a ready-to-paste
//! profile; box plots. Built from records only, so a report can be made at any time from
//! the store, and rendered as terminal tables or one HTML file.

use crate::artifact::{BuildRecord, PgoRecord};
use crate::error::TuneError;
use crate::portability::CpuAssumption;
use crate::race::{metrics_of, recommended, values, Contestant, Exit, Replay};
use crate::record::{JobRecord, JobResult};
use crate::variant::Variant;
use dyno_model::{format_value, Direction, Metric};
use dyno_report::plot::BoxPlot;
use dyno_report::{Align, Cell, HtmlReport, Section, Table, TableFormat};
use dyno_stats::{
    compare_many, median, median_ci, near_pareto, pareto_front, Better, ComparisonSettings,
    Interval, Verdict,
};

/// Everything a report is made from.
#[derive(Debug, Clone)]
pub struct ReportInput<'a> {
    /// Title (the study file).
    pub title: String,
    /// The race subjects.
    pub contestants: &'a [Contestant],
    /// Their variants (`None` for baselines).
    pub variants: &'a [Option<Variant>],
    /// Their build records (`None` for baselines).
    pub builds: &'a [Option<BuildRecord>],
    /// Variants whose build failed, with the compiler's last lines.
    pub failed_builds: &'a [(Variant, String)],
    /// The job records, per subject.
    pub records: &'a [Vec<JobRecord>],
    /// The race state replayed from the records.
    pub replay: &'a Replay,
    /// The profile name for the snippet.
    pub profile: &'a str,
    /// Significance level and noise band of the baseline comparisons.
    pub alpha: f64,
    /// Smallest relative change called a change.
    pub min_effect: f64,
    /// The project's binary, for the PGO recipe.
    pub bin: &'a str,
    /// Per subject: what its `target-cpu` assumes (`None`: no CPU flag, or a baseline).
    pub cpu: &'a [Option<CpuAssumption>],
}

/// One subject's line in a metric table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Subject index.
    pub subject: usize,
    /// Samples.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// 95% distribution-free interval of the median.
    pub ci: (f64, f64),
    /// Relative change of the median against the reference (+ = larger value).
    pub change: Option<f64>,
    /// 95% bootstrap interval of that change (`None` with fewer than 2 samples a side).
    pub change_ci: Option<(f64, f64)>,
    /// Verdict of the comparison with the reference (Holm across the table).
    pub verdict: Option<Verdict>,
}

/// One metric's results, best median first.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricReport {
    /// The metric.
    pub metric: Metric,
    /// Rows, best first.
    pub rows: Vec<Row>,
}

/// The judged study.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyReport {
    /// Per metric.
    pub metrics: Vec<MetricReport>,
    /// The subject the changes are relative to.
    pub reference: Option<usize>,
    /// Pareto-efficient variants on the medians.
    pub pareto: Vec<usize>,
    /// Variants whose interval boxes touch a Pareto variant's (relative scales).
    pub near_pareto: Vec<usize>,
    /// Variants no other beats significantly by at least `min_effect` on every metric
    /// ([`crate::race::recommended`]).
    pub recommended: Vec<usize>,
    /// Labels of every subject.
    pub labels: Vec<String>,
    /// Status of each subject in the race.
    pub status: Vec<String>,
    /// Label, `[profile.X]` section and build command (RUSTFLAGS and toolchain included)
    /// of each recommended variant on the Pareto front.
    pub snippets: Vec<(String, String, String)>,
    /// Warnings for the reader.
    pub warnings: Vec<String>,
    /// Rounds completed and benchmark jobs recorded.
    pub rounds: u32,
    /// Jobs recorded (failed included).
    pub jobs: usize,
    /// Failed builds: label and tail.
    pub failed_builds: Vec<(String, String)>,
    /// Build facts per subject: (build time s, size B, rustc release).
    pub builds: Vec<Option<(f64, u64, String)>>,
    /// Per subject: the steps of its profile-guided build.
    pub pgo: Vec<Option<PgoRecord>>,
    /// Per subject: what its `target-cpu` assumes.
    pub cpu: Vec<Option<CpuAssumption>>,
    /// Per subject: its variant (`None` for baselines).
    pub variants: Vec<Option<Variant>>,
    /// Per subject: the commands that build it (the whole recipe for a PGO variant).
    pub commands: Vec<Option<String>>,
    /// The profile name of the snippets.
    pub profile: String,
    /// Significance level of the comparisons.
    pub alpha: f64,
    /// Smallest relative change called a change.
    pub min_effect: f64,
    /// The study per CPU family when the store holds runs from several CPU models
    /// ([`crate::report_cpu::per_cpu`]); empty otherwise, and then the report is unchanged.
    pub per_cpu: Vec<crate::report_cpu::CpuFamily>,
    samples: Samples,
}

fn better(d: Direction) -> Better {
    match d {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// Every subject's values of one metric, all rounds.
fn all_values(input: &ReportInput, s: usize, metric: &str) -> Vec<f64> {
    values(&input.records[s], metric, u32::MAX)
}

/// Judges a study from its records.
pub fn build_report(input: &ReportInput) -> Result<StudyReport, TuneError> {
    let n = input.contestants.len();
    let metrics = metrics_of(input.records);
    let reference = reference_subject(input, &metrics);
    let (metric_reports, samples) = metric_reports(input, &metrics, reference)?;
    let variants: Vec<usize> = (0..n)
        .filter(|&s| {
            !input.contestants[s].baseline && has_data(input, &metrics, s) && !metrics.is_empty()
        })
        .collect();
    let (pareto, near) = pareto_sets(input, &metrics, &variants)?;
    let recommended = recommended(input.replay, input.records)?;
    let labels: Vec<String> = input.contestants.iter().map(|c| c.label.clone()).collect();
    let status = statuses(input, &labels, &recommended);
    let commands = build_commands(input);
    let (snippets, mut warnings) = snippets(input, &winners(&recommended, &pareto), &commands);
    let trained: Vec<PgoRecord> = (0..n).filter_map(|s| pgo_of(input, s)).collect();
    warnings.extend(study_warnings(input, &trained));
    Ok(StudyReport {
        metrics: metric_reports,
        reference,
        pareto,
        near_pareto: near,
        recommended,
        labels,
        status,
        snippets,
        warnings,
        rounds: input.replay.rounds_done,
        jobs: input.records.iter().map(Vec::len).sum(),
        failed_builds: input
            .failed_builds
            .iter()
            .map(|(v, t)| (v.label.clone(), t.clone()))
            .collect(),
        builds: input
            .builds
            .iter()
            .map(|b| {
                b.as_ref()
                    .map(|b| (b.build_time_s, b.size, b.rustc_release()))
            })
            .collect(),
        pgo: (0..n).map(|s| pgo_of(input, s)).collect(),
        cpu: (0..n)
            .map(|s| input.cpu.get(s).cloned().flatten())
            .collect(),
        variants: input.variants.to_vec(),
        commands,
        profile: input.profile.to_string(),
        alpha: input.alpha,
        min_effect: input.min_effect,
        per_cpu: Vec::new(),
        samples,
    })
}

/// Whether subject `s` has samples of every metric.
fn has_data(input: &ReportInput, metrics: &[Metric], s: usize) -> bool {
    metrics
        .iter()
        .all(|m| !all_values(input, s, &m.name).is_empty())
}

/// The subject the changes are relative to: the first baseline with data, else the first
/// variant with data.
fn reference_subject(input: &ReportInput, metrics: &[Metric]) -> Option<usize> {
    let n = input.contestants.len();
    (0..n)
        .find(|&s| input.contestants[s].baseline && has_data(input, metrics, s))
        .or_else(|| (0..n).find(|&s| !input.contestants[s].baseline && has_data(input, metrics, s)))
}

/// Per subject, its metrics' samples by name (for the plots).
type Samples = Vec<Vec<(String, Vec<f64>)>>;

/// Each metric's rows, compared with the reference and best median first, and every
/// subject's samples.
fn metric_reports(
    input: &ReportInput,
    metrics: &[Metric],
    reference: Option<usize>,
) -> Result<(Vec<MetricReport>, Samples), TuneError> {
    let settings = ComparisonSettings {
        noise_band: input.min_effect,
        alpha: input.alpha,
        resamples: 2000,
        ..ComparisonSettings::default()
    };
    let mut reports = Vec::new();
    let mut samples = vec![Vec::new(); input.contestants.len()];
    for m in metrics {
        let mut rows = metric_rows(input, m, &mut samples);
        if let Some(r) = reference {
            compare_to_reference(input, m, r, &settings, &mut rows)?;
        }
        rows.sort_by(|a, b| {
            let o = a.median.total_cmp(&b.median);
            match m.direction {
                Direction::HigherIsBetter => o.reverse(),
                Direction::LowerIsBetter => o,
            }
        });
        reports.push(MetricReport {
            metric: m.clone(),
            rows,
        });
    }
    Ok((reports, samples))
}

/// The variants a snippet is written for: each recommended variant that is also on the
/// Pareto front (the best medians among statistically equal ones); all recommended ones
/// if none is.
fn winners(recommended: &[usize], pareto: &[usize]) -> Vec<usize> {
    let best: Vec<usize> = recommended
        .iter()
        .copied()
        .filter(|s| pareto.contains(s))
        .collect();
    if best.is_empty() {
        recommended.to_vec()
    } else {
        best
    }
}

/// The steps of subject `s`'s profile-guided build, if it had one.
fn pgo_of(input: &ReportInput, s: usize) -> Option<PgoRecord> {
    input.builds[s]
        .as_ref()
        .and_then(|b| b.pgo.as_deref().cloned())
}

/// Every variant's commands (the JSON report carries them all, so a PGO variant that did
/// not win still comes with its recipe); the text shows the winners'.
fn build_commands(input: &ReportInput) -> Vec<Option<String>> {
    (0..input.contestants.len())
        .map(|s| {
            let v = input.variants[s].as_ref()?;
            Some(match (pgo_of(input, s), input.builds[s].as_ref()) {
                (Some(p), Some(b)) => pgo_recipe(v, input.profile, input.bin, b, &p),
                _ => v.build_command(input.profile),
            })
        })
        .collect()
}

/// One row per subject with samples of `m`: its median and the median's 95% interval;
/// the samples are kept in `samples` for the plots.
fn metric_rows(
    input: &ReportInput,
    m: &Metric,
    samples: &mut [Vec<(String, Vec<f64>)>],
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (s, kept) in samples.iter_mut().enumerate() {
        let v = all_values(input, s, &m.name);
        let Some(med) = median(&v) else { continue };
        let ci = median_ci(&v, 0.95).map_or((med, med), |c| (c.low, c.high));
        kept.push((m.name.clone(), v.clone()));
        rows.push(Row {
            subject: s,
            n: v.len(),
            median: med,
            ci,
            change: None,
            change_ci: None,
            verdict: None,
        });
    }
    rows
}

/// Each row's change against the reference subject `r`: a comparison (ratio, interval,
/// verdict, Holm-corrected over the subjects) where both have two samples or more, else
/// the plain ratio of medians.
fn compare_to_reference(
    input: &ReportInput,
    m: &Metric,
    r: usize,
    settings: &ComparisonSettings,
    rows: &mut [Row],
) -> Result<(), TuneError> {
    let base = all_values(input, r, &m.name);
    let others: Vec<(usize, Vec<f64>)> = rows
        .iter()
        .filter(|row| row.subject != r && row.n >= 2 && base.len() >= 2)
        .map(|row| (row.subject, all_values(input, row.subject, &m.name)))
        .collect();
    let inputs: Vec<(&[f64], &[f64], Better)> = others
        .iter()
        .map(|(_, v)| (base.as_slice(), v.as_slice(), better(m.direction)))
        .collect();
    if !inputs.is_empty() {
        let cmp = compare_many(&inputs, settings)?;
        for ((s, _), c) in others.iter().zip(cmp) {
            if let Some(row) = rows.iter_mut().find(|row| row.subject == *s) {
                row.change = Some(c.ratio.estimate - 1.0);
                row.change_ci = Some((c.ratio.low - 1.0, c.ratio.high - 1.0));
                row.verdict = Some(c.verdict);
            }
        }
    }
    for row in rows
        .iter_mut()
        .filter(|row| row.subject != r && row.change.is_none())
    {
        if let Some(bm) = median(&base) {
            row.change = Some(row.median / bm - 1.0);
        }
    }
    Ok(())
}

/// The Pareto front of the variants' medians over all metrics, and the variants whose
/// intervals reach it (near the front).
fn pareto_sets(
    input: &ReportInput,
    metrics: &[Metric],
    variants: &[usize],
) -> Result<(Vec<usize>, Vec<usize>), TuneError> {
    if variants.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let dirs: Vec<Better> = metrics.iter().map(|m| better(m.direction)).collect();
    let centers: Vec<Vec<f64>> = variants
        .iter()
        .map(|&s| {
            metrics
                .iter()
                .map(|m| median(&all_values(input, s, &m.name)).unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let pareto = pareto_front(&centers, &dirs)?
        .into_iter()
        .map(|i| variants[i])
        .collect();
    let intervals: Vec<Vec<Interval>> = variants
        .iter()
        .map(|&s| {
            metrics
                .iter()
                .map(|m| {
                    let v = all_values(input, s, &m.name);
                    let c = median_ci(&v, 0.95).expect("non-empty");
                    Interval {
                        low: c.low,
                        center: c.estimate,
                        high: c.high,
                    }
                })
                .collect()
        })
        .collect();
    let near = match near_pareto(&intervals, &dirs, 0.0) {
        Ok(np) => np.near.into_iter().map(|i| variants[i]).collect(),
        Err(_) => Vec::new(),
    };
    Ok((pareto, near))
}

/// What the race made of each subject: baseline, eliminated, retired, recommended or
/// still a contender.
fn statuses(input: &ReportInput, labels: &[String], recommended: &[usize]) -> Vec<String> {
    (0..input.contestants.len())
        .map(|s| {
            if input.contestants[s].baseline {
                return "baseline".to_string();
            }
            match input.replay.exits.get(&s) {
                Some(Exit::Eliminated { round, by }) => {
                    format!("eliminated after round {round} (beaten by {})", labels[*by])
                }
                Some(Exit::Retired { round }) => {
                    format!("retired in round {round}: 3 failures in a row")
                }
                None if recommended.contains(&s) => "recommended".to_string(),
                None => "contender".to_string(),
            }
        })
        .collect()
}

/// Per recommended variant: label, profile section, build commands.
type Snippets = Vec<(String, String, String)>;

/// The profile snippet and build commands of each of the `best` variants, with the
/// warnings their target CPU calls for.
fn snippets(
    input: &ReportInput,
    best: &[usize],
    commands: &[Option<String>],
) -> (Snippets, Vec<String>) {
    let (mut snippets, mut warnings) = (Vec::new(), Vec::new());
    for &s in best {
        let (Some(v), Some(build)) = (&input.variants[s], &commands[s]) else {
            continue;
        };
        snippets.push((
            v.label.clone(),
            v.profile_section(input.profile),
            build.clone(),
        ));
        if let Some(Some(a)) = input.cpu.get(s) {
            warnings.push(a.describe(&v.label));
        } else if v.settings.target_cpu == Some(crate::profile::TargetCpu::Native) {
            let w = "target-cpu=native builds use every instruction of THIS CPU: such a binary may crash (illegal instruction) or lose its advantage on another CPU; build it on the machine that runs it, or name the CPU (target_cpu = \"znver4\") instead.".to_string();
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    (snippets, warnings)
}

/// Warnings about the study as a whole: how PGO variants were trained, failed runs, and
/// too few rounds.
fn study_warnings(input: &ReportInput, trained: &[PgoRecord]) -> Vec<String> {
    let mut warnings = Vec::new();
    let failed: usize = input
        .records
        .iter()
        .flatten()
        .filter(|j| matches!(j.result, JobResult::Failed { .. }))
        .count();
    if trained.iter().any(|p| p.same_input) {
        warnings.push("PGO variants were trained on the measured benchmarks' own commands (the study has no [pgo] training): their gain is measured on the input they were tuned for and may be smaller on other work; give [pgo] training commands with a different input.".into());
    } else if !trained.is_empty() {
        warnings.push("PGO variants were trained with the study's [pgo] training commands, which differ from the measured benchmarks.".into());
    }
    if failed > 0 {
        warnings.push(format!("{failed} benchmark runs failed; their output tails are in the store (labels `error`, `tail`)."));
    }
    if input.replay.rounds_done < input.replay.min_rounds() {
        warnings.push(format!(
            "only {} complete rounds: too few for any significance; run `dyno tune run` again to continue",
            input.replay.rounds_done
        ));
    }
    warnings
}

/// The commands that reproduce a PGO variant ([`crate::pgo::recipe`]).
fn pgo_recipe(v: &Variant, profile: &str, bin: &str, b: &BuildRecord, p: &PgoRecord) -> String {
    let job = crate::pgo::PgoJob {
        mode: if p.bolt.is_some() {
            crate::profile::Pgo::OnBolt
        } else {
            crate::profile::Pgo::On
        },
        training: p.training.clone(),
        same_input: p.same_input,
        timeout_s: 0.0,
    };
    let name = |path: &std::path::Path| {
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let bolt = p.bolt.as_deref().map(|b| {
        let bolt = name(b);
        let merge = bolt.replacen("llvm-bolt", "merge-fdata", 1);
        (bolt, merge)
    });
    crate::pgo::recipe(
        |flags| v.build_command_with(profile, flags),
        profile,
        bin,
        &crate::pgo::host_triple(&b.rustc).unwrap_or_else(|| "<host triple>".into()),
        &job,
        &p.profdata.display().to_string(),
        bolt.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
    )
}

/// `instrumented 12.0 s + training 3.1 s + final 14.2 s (+ BOLT 4.0 s)`.
pub fn pgo_steps(p: &PgoRecord) -> String {
    let mut s = format!(
        "instrumented {:.1} s + training {:.1} s + final {:.1} s",
        p.instrumented_build_s, p.training_s, p.final_build_s
    );
    if p.bolt.is_some() {
        s.push_str(&format!(" + BOLT {:.1} s", p.bolt_s));
    }
    s
}

fn percent(x: f64) -> String {
    format!("{:+.2}%", x * 100.0)
}

impl StudyReport {
    /// One table per metric: rank, subject, n, median, 95% CI, change vs the reference.
    pub fn metric_tables(&self) -> Vec<Table> {
        let reference = self.reference.map(|r| self.labels[r].clone());
        self.metrics
            .iter()
            .map(|m| {
                let dir = match m.metric.direction {
                    Direction::HigherIsBetter => "higher is better",
                    Direction::LowerIsBetter => "lower is better",
                };
                let mut t = Table::new(format!("{} ({dir})", m.metric.name))
                    .column("#", Align::Right)
                    .column("subject", Align::Left)
                    .column("n", Align::Right)
                    .column("median", Align::Right)
                    .column("95% CI", Align::Right)
                    .column(
                        format!(
                            "vs {}",
                            reference.clone().unwrap_or_else(|| "reference".into())
                        ),
                        Align::Right,
                    )
                    .column("change 95% CI", Align::Right)
                    .column("status", Align::Left);
                for (i, row) in m.rows.iter().enumerate() {
                    let unit = m.metric.unit;
                    let change =
                        match (row.change, row.verdict, Some(row.subject) == self.reference) {
                            (_, _, true) => Cell::new("reference").emphasis(),
                            (Some(c), Some(Verdict::Improvement), _) => {
                                Cell::new(format!("{} *", percent(c))).good()
                            }
                            (Some(c), Some(Verdict::Regression), _) => {
                                Cell::new(format!("{} *", percent(c))).bad()
                            }
                            (Some(c), _, _) => Cell::new(percent(c)),
                            (None, _, _) => Cell::new("-"),
                        };
                    let label = Cell::new(self.labels[row.subject].clone());
                    let label = if self.recommended.contains(&row.subject) {
                        label.good()
                    } else {
                        label
                    };
                    t.push_row(vec![
                        Cell::new((i + 1).to_string()),
                        label,
                        Cell::new(row.n.to_string()),
                        Cell::new(format_value(row.median, unit)),
                        Cell::new(format!(
                            "{} .. {}",
                            format_value(row.ci.0, unit),
                            format_value(row.ci.1, unit)
                        )),
                        change,
                        Cell::new(row.change_ci.map_or_else(
                            || "-".to_string(),
                            |(lo, hi)| format!("{} .. {}", percent(lo), percent(hi)),
                        )),
                        Cell::new(self.status[row.subject].clone()),
                    ]);
                }
                t
            })
            .collect()
    }

    /// Builds: label, status, build time, size, rustc.
    pub fn build_table(&self) -> Table {
        let mut t = Table::new("Builds")
            .column("subject", Align::Left)
            .column("build time", Align::Right)
            .column("binary size", Align::Right)
            .column("rustc", Align::Left)
            .column("race", Align::Left)
            .column("PGO steps", Align::Left);
        for (s, label) in self.labels.iter().enumerate() {
            let (time, size, rustc) = match &self.builds[s] {
                Some((t, z, r)) => (
                    format!("{t:.1} s"),
                    format_value(*z as f64, dyno_model::Unit::Bytes),
                    r.clone(),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            let steps = self.pgo[s].as_ref().map_or_else(|| "-".into(), pgo_steps);
            t.push_row(vec![
                label.clone(),
                time,
                size,
                rustc,
                self.status[s].clone(),
                steps,
            ]);
        }
        for (label, _) in &self.failed_builds {
            t.push_row(vec![
                Cell::new(label.clone()),
                Cell::new("-"),
                Cell::new("-"),
                Cell::new("-"),
                Cell::new("build failed").bad(),
                Cell::new("-"),
            ]);
        }
        t
    }

    /// The text after the tables: sets, recommendation, snippets, warnings.
    pub fn summary_text(&self) -> String {
        let names = |v: &[usize]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter()
                    .map(|&i| self.labels[i].clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut out = String::new();
        out.push_str(&format!(
            "{} rounds, {} benchmark runs recorded.\n",
            self.rounds, self.jobs
        ));
        out.push_str(&format!("Pareto set (medians): {}\n", names(&self.pareto)));
        out.push_str(&format!(
            "Near-Pareto set (95% intervals touch a Pareto variant's, relative scales): {}\n",
            names(&self.near_pareto)
        ));
        out.push_str(&format!(
            "Recommended (no other variant significantly better by at least min_effect on every metric): {}\n",
            names(&self.recommended)
        ));
        out.push_str(&crate::report_cpu::per_cpu_text(&self.per_cpu));
        if !self.snippets.is_empty() {
            out.push_str(
                "Profiles below: the recommended variants with the best medians (Pareto set).\n",
            );
        }
        for (label, section, build) in &self.snippets {
            if build.contains('\n') {
                out.push_str(&format!(
                    "\n# {label}: paste into Cargo.toml\n{section}# then build it profile-guided:\n{build}\n"
                ));
            } else {
                out.push_str(&format!(
                    "\n# {label}: paste into Cargo.toml\n{section}# and build with: {build}\n"
                ));
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("\nwarning: {w}\n"));
        }
        for (label, tail) in &self.failed_builds {
            out.push_str(&format!("\nbuild of {label} failed:\n{tail}\n"));
        }
        out
    }

    /// The report as `dyno tune run` and `dyno tune report` print it in `format`
    /// (terminal, Markdown or CSV): each metric's table, the per-CPU tables of a fleet
    /// store, the build table, then [`StudyReport::summary_text`].
    pub fn text(&self, format: TableFormat) -> String {
        let mut out = String::new();
        let tables = self.metric_tables().into_iter().chain(
            crate::report_cpu::per_cpu_tables(&self.per_cpu)
                .into_iter()
                .chain([self.build_table()]),
        );
        for t in tables {
            out += &format.render(&t);
            out.push('\n');
        }
        out += &self.summary_text();
        out.push('\n');
        out
    }

    /// The self-contained HTML report.
    pub fn html(&self, title: &str) -> String {
        let mut report = HtmlReport::new(format!("dyno tune: {title}"))
            .parameter("rounds", self.rounds.to_string())
            .parameter("benchmark runs", self.jobs.to_string());
        if let Some(r) = self.reference {
            report = report.parameter("reference", self.labels[r].clone());
        }
        // dyno-report has no preformatted block, so each snippet is a one-column table
        // with a row per line: pasting it keeps the lines.
        let names = |v: &[usize]| {
            let n: Vec<&str> = v.iter().map(|&i| self.labels[i].as_str()).collect();
            if n.is_empty() {
                "none".to_string()
            } else {
                n.join(", ")
            }
        };
        let mut rec = Section::new("Recommendation")
            .paragraph(format!(
                "Recommended (no other variant significantly better by at least min_effect on every metric): {}",
                names(&self.recommended)
            ))
            .paragraph(format!("Pareto set (medians): {}", names(&self.pareto)))
            .paragraph(format!(
                "Near-Pareto set (95% intervals touch a Pareto variant's, relative scales): {}",
                names(&self.near_pareto)
            ));
        for (label, section, build) in &self.snippets {
            let mut t = Table::new(format!("{label}: paste into Cargo.toml"))
                .column("Cargo.toml", Align::Left);
            for line in section.lines() {
                t.push_row(vec![line.to_string()]);
            }
            let mut lines = build.lines();
            if let Some(first) = lines.next() {
                t.push_row(vec![format!("build with: {first}")]);
            }
            for line in lines {
                t.push_row(vec![line.to_string()]);
            }
            rec = rec.table(t);
        }
        for w in &self.warnings {
            rec = rec.note(w.clone());
        }
        report = report.section(rec);
        if let Some(section) = crate::report_cpu::per_cpu_section(&self.per_cpu) {
            report = report.section(section);
        }
        for (m, table) in self.metrics.iter().zip(self.metric_tables()) {
            let mut plot = BoxPlot::new(m.metric.name.clone(), m.metric.clone());
            for (s, series) in self.samples.iter().enumerate() {
                if let Some((_, v)) = series.iter().find(|(name, _)| *name == m.metric.name) {
                    plot = plot.subject(self.labels[s].clone(), v.clone());
                }
            }
            if let Some(r) = self.reference {
                if let Some(row) = m.rows.iter().find(|row| row.subject == r) {
                    plot = plot.baseline(format!("{} median", self.labels[r]), row.median);
                }
            }
            report = report.section(
                Section::new(m.metric.name.clone())
                    .table(table)
                    .plot_result(
                        format!("{} by subject, best first", m.metric.name),
                        plot.render_svg(),
                    ),
            );
        }
        report = report.section(Section::new("Builds").table(self.build_table()));
        report.render()
    }
}
