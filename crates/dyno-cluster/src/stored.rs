//! What `dyno cluster report` reads besides a cluster file: the node logs of a stored
//! `cluster run` (its run directory, slots and window, from the run's settings), a
//! directory of node logs, or the nodes' own output read by `[extract]` rules.

use crate::events::Event;
use crate::extract::Extractors;
use crate::{ClusterError, ClusterSpec};
use std::ops::Range;
use std::path::{Path, PathBuf};

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
        let text = read(&file)?;
        all.extend(rules.parse_log(&file, &node, &text)?);
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

fn read(path: &Path) -> Result<String, ClusterError> {
    std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    })
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
}
