//! What `dyno cluster report` reads besides a cluster file: the node logs of a stored
//! `cluster run` (its run directory, slots and window, from the run's settings), a
//! directory of node logs, or the nodes' own output read by `[extract]` rules; and the
//! analysis it reports ([`ReportLogs::analyse`]), which `dyno serve` shows for a stored
//! run ([`stored_html`]).

use crate::events::{self, Event};
use crate::extract::Extractors;
use crate::fault_analysis::FaultReport;
use crate::launch::{in_slots, in_window};
use crate::propagation::{self, Analysis};
use crate::render::{html_report, ClusterReport};
use crate::{ClusterError, ClusterSpec};
use std::ops::Range;
use std::path::PathBuf;

/// Node logs to report on, and which part of them is the measured window.
#[derive(Debug, Clone)]
pub struct ReportLogs {
    /// The cluster file: its node count and names, `[extract]` rules and topology.
    pub spec: Option<ClusterSpec>,
    /// Node logs: files, or directories of them (a run directory).
    pub paths: Vec<PathBuf>,
    /// A stored run's slots: events outside them are left out, and the fault records
    /// its run directory keeps are read.
    pub slots: Option<Range<u64>>,
    /// A stored run's window in Unix ns: extracted events outside it are left out.
    pub window_ns: Option<Range<u64>>,
}

/// A propagation analysis read from node logs, with what the run's faults did.
#[derive(Debug, Clone)]
pub struct Analysed {
    /// Adoption, forging and peer metrics.
    pub analysis: Analysis,
    /// The fault report, for a stored run whose directory holds fault records.
    pub faults: Option<FaultReport>,
}

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A stored run's cluster file cannot be read.
    #[error("run {run}'s cluster file")]
    ClusterFile {
        /// The run.
        run: dyno_store::RunId,
        /// What is wrong with the file.
        #[source]
        source: ClusterError,
    },
    /// The run, or its logs, cannot be read, or hold nothing to analyse.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

impl ReportLogs {
    /// The logs of a stored `cluster run`: its run directory, slots and window, and its
    /// own cluster file unless `spec` is given.
    pub fn of_stored(
        run: &dyno_store::StoredRun,
        spec: Option<ClusterSpec>,
    ) -> Result<ReportLogs, ReportError> {
        let stored = StoredClusterRun::of(run)?;
        let spec = match spec {
            Some(spec) => spec,
            None => ClusterSpec::load(&stored.file).map_err(|source| ReportError::ClusterFile {
                run: run.id,
                source,
            })?,
        };
        Ok(ReportLogs {
            spec: Some(spec),
            paths: vec![stored.dir],
            slots: Some(stored.slots),
            window_ns: stored.window_ns,
        })
    }

    /// Reads the logs and analyses them: the events the cluster file's `[extract]` rules
    /// find in the nodes' own output when it has such rules, else the nodes' event logs.
    /// Adoption fractions count the cluster file's nodes, else `nodes`, else every node
    /// seen. Logs with no event in the window are refused.
    pub fn analyse(&self, nodes: Option<usize>) -> Result<Analysed, ClusterError> {
        let spec = self.spec.as_ref();
        let expected = spec.map(|s| s.nodes.len()).or(nodes).unwrap_or(0);
        if let Some((spec, rules)) = spec.and_then(|s| Some((s, s.extract.as_ref()?))) {
            let mut all = extracted_events(spec, rules, &self.paths)?;
            if let Some(window) = &self.window_ns {
                all = in_window(all, window);
            }
            if all.is_empty() {
                return Err(missing(
                    "no line of the node outputs given matches an [extract] rule".into(),
                ));
            }
            return Ok(Analysed {
                analysis: propagation::analyse_extracted(&all, expected, &rules.unavailable()),
                faults: None,
            });
        }
        let mut all = Vec::new();
        for file in log_files(&self.paths)? {
            all.extend(events::read_log(&file)?);
        }
        if let Some(slots) = &self.slots {
            all = in_slots(all, slots);
        }
        if all.is_empty() {
            return Err(missing(
                "no propagation events (\"kind\":\"event\" lines) in the logs given".into(),
            ));
        }
        let analysis = propagation::analyse(&all, expected);
        // A stored run's directory keeps its fault records: the report shows them again.
        let faults = match (spec, &self.slots, self.paths.as_slice()) {
            (Some(spec), Some(slots), [dir]) if dir.is_dir() => {
                crate::fault_analysis::of_run_dir(spec, dir, &analysis, slots.end)?
            }
            _ => None,
        };
        Ok(Analysed { analysis, faults })
    }
}

/// The HTML report `dyno cluster report RUN --html` writes for a stored `cluster run`,
/// for `dyno serve`: rebuilt from the node logs its run directory still holds.
pub fn stored_html(run: &dyno_store::StoredRun) -> Result<String, ReportError> {
    let logs = ReportLogs::of_stored(run, None)?;
    let analysed = logs.analyse(None)?;
    let spec = logs.spec.as_ref();
    let report = ClusterReport::new(&analysed.analysis, spec).with_faults(analysed.faults);
    Ok(html_report(&report, spec))
}

/// Where a stored `cluster run` left its node logs, and which slots and window it analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredClusterRun {
    /// The run directory (node logs, configs, outputs).
    pub dir: PathBuf,
    /// The cluster file it ran.
    pub file: PathBuf,
    /// The slots of its window.
    pub slots: Range<u64>,
    /// Its window in Unix ns (extracted logs are cut to it).
    pub window_ns: Option<Range<u64>>,
}

fn missing(what: String) -> ClusterError {
    ClusterError::NoData { what }
}

impl StoredClusterRun {
    /// Reads the run's settings; refuses a run of another command, one whose settings
    /// lack the run directory or slots, and one whose run directory is gone.
    pub fn of(run: &dyno_store::StoredRun) -> Result<StoredClusterRun, ClusterError> {
        let id = run.id;
        if run.info.command != "cluster run" {
            return Err(missing(format!(
                "run {id} is a `{}` run, not a `cluster run`",
                run.info.command
            )));
        }
        let text = |key: &str| {
            run.info.settings[key]
                .as_str()
                .map(PathBuf::from)
                .ok_or_else(|| missing(format!("run {id}: no `{key}` in its settings")))
        };
        let dir = text("run_dir")?;
        if !dir.is_dir() {
            return Err(missing(format!(
                "run {id}: its node logs were in {}, which is gone; its samples remain: `dyno results show {id}`",
                dir.display()
            )));
        }
        let slot = |i: usize| run.info.settings["slots"][i].as_u64();
        let (Some(first), Some(end)) = (slot(0), slot(1)) else {
            return Err(missing(format!("run {id}: no `slots` in its settings")));
        };
        let window = |i: usize| run.info.settings["window_ns"][i].as_u64();
        Ok(StoredClusterRun {
            dir,
            file: text("cluster_file")?,
            slots: first..end,
            window_ns: window(0).zip(window(1)).map(|(a, b)| a..b),
        })
    }
}

/// Events read from the nodes' own output by the cluster file's `[extract]` rules: for
/// a directory, each node's `<name>.out`; a file is the node its stem names.
pub fn extracted_events(
    spec: &ClusterSpec,
    rules: &Extractors,
    paths: &[PathBuf],
) -> Result<Vec<Event>, ClusterError> {
    if !rules.timed_in_line() {
        return Err(missing(format!(
            "{}: an [extract] rule has no (?P<ts>...) group, so its times were taken as the \
             lines were read; only `dyno cluster run` reports on such a cluster",
            spec.path.display()
        )));
    }
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            for n in &spec.nodes {
                files.push((p.join(format!("{}.out", n.name)), n.name.clone()));
            }
        } else {
            let node = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((p.clone(), node));
        }
    }
    let mut all = Vec::new();
    for (file, node) in files {
        // A line over the line cap is no line a rule was written for: skipped.
        events::for_each_line(&file, |number, line, cut| {
            if !cut {
                all.extend(rules.numbered_line(&file, &node, number, line)?);
            }
            Ok(())
        })?;
    }
    Ok(all)
}

/// The node logs named: a file as it is, a directory's `*.log` and `*.jsonl` files in
/// name order (a directory with none is refused).
pub fn log_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ClusterError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let entries = std::fs::read_dir(p).map_err(|source| ClusterError::Io {
                path: p.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "log" || x == "jsonl"))
                .collect();
            if found.is_empty() {
                return Err(missing(format!(
                    "{}: no *.log or *.jsonl node logs in this directory",
                    p.display()
                )));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_node_logs_is_refused_and_files_keep_their_order() {
        let dir = std::env::temp_dir().join(format!("dyno-stored-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = log_files(std::slice::from_ref(&dir)).unwrap_err();
        assert!(
            err.to_string().contains("no *.log or *.jsonl node logs"),
            "{err}"
        );
        for name in ["b.jsonl", "a.log", "c.txt"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let found = log_files(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(found, vec![dir.join("a.log"), dir.join("b.jsonl")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn logs_without_an_event_are_refused_rather_than_reported_empty() {
        let dir = std::env::temp_dir().join(format!("dyno-stored-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("n0.log"), "").unwrap();
        let logs = ReportLogs {
            spec: None,
            paths: vec![dir.clone()],
            slots: None,
            window_ns: None,
        };
        let err = logs.analyse(Some(3)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no propagation events (\"kind\":\"event\" lines) in the logs given"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
