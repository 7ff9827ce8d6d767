//! A whole cluster as a subject: `cluster = "path/cluster.toml"` plus what differs per
//! release.
//!
//! ```toml
//! [[subject]]
//! name = "v0.38"
//! cluster = "cluster.toml"                  # relative to this comparison file
//! [[subject]]
//! name = "v1.0"
//! cluster = "cluster.toml"
//! node_command = ["./run-node.sh", "v1.0.1", "{id}", "{listen}", "{peers}"]  # replaces node.command
//! # or, for the reference node: the dyno build whose `dyno node` the cluster runs
//! # node_binary = "../dyno-v2/target/release/dyno"
//! ```
//!
//! This module only checks what the comparison file says (the cluster file exists, the
//! override is executable); reading the cluster file and running the cluster belong to
//! dyno-cluster, which [`crate::cluster_run`] reaches as a child `dyno cluster check|run`.
//! So compare keeps judging executions from any source without importing dyno-cluster,
//! and dyno-cluster knows nothing of verdicts.

pub use crate::spec::ClusterSubject;
use std::path::{Path, PathBuf};

/// What a `[[subject]]` says about a cluster, as written.
pub(crate) struct Written<'a> {
    pub cluster: Option<&'a PathBuf>,
    pub node_command: Option<&'a Vec<String>>,
    pub node_binary: Option<&'a PathBuf>,
    /// Keys set that only a process subject takes (`command`, `ready`, ...).
    pub process_keys: Vec<&'static str>,
}

/// Checks a subject's cluster keys; `Ok(None)` for a process subject. Errors are the key
/// (relative to the subject) and what is wrong.
pub(crate) fn validate(
    w: &Written<'_>,
    comparison: &Path,
) -> Result<Option<ClusterSubject>, (&'static str, String)> {
    let Some(file) = w.cluster else {
        if w.node_command.is_some() {
            return Err(("node_command", "only for a `cluster` subject".into()));
        }
        if w.node_binary.is_some() {
            return Err(("node_binary", "only for a `cluster` subject".into()));
        }
        return Ok(None);
    };
    if let Some(k) = w.process_keys.first() {
        return Err((
            k,
            "not for a `cluster` subject: its nodes, readiness and load come from the cluster file (give `node_command` or `node_binary` for what differs per release)".into(),
        ));
    }
    let dir = comparison.parent().unwrap_or(Path::new("."));
    let file = dir.join(file);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ("cluster", format!("{}: {e}", file.display())))?;
    let node_command = match w.node_command {
        None => None,
        Some(argv) => {
            let Some(program) = argv.first() else {
                return Err(("node_command", "is empty".into()));
            };
            let resolved = crate::spec::check_executable(program, Some(dir))
                .map_err(|why| ("node_command", why.to_string()))?;
            let mut argv = argv.clone();
            argv[0] = resolved.display().to_string();
            Some(argv)
        }
    };
    if node_command.is_some() && w.node_binary.is_some() {
        return Err((
            "node_binary",
            "give `node_command` (any node) or `node_binary` (the reference node), not both".into(),
        ));
    }
    let node_binary = match w.node_binary {
        None => None,
        Some(b) => {
            let b = b.display().to_string();
            Some(
                crate::spec::check_executable(&b, Some(dir))
                    .map_err(|why| ("node_binary", why.to_string()))?,
            )
        }
    };
    Ok(Some(ClusterSubject {
        file,
        node_command,
        node_binary,
        file_digest: crate::resume::digest(&text),
    }))
}

/// Refuses a comparison that mixes clusters with single nodes (their metrics have
/// nothing in common), and workloads a cluster cannot take (its load is the cluster
/// file's, run at the workload's rate and window). Errors: the key and what is wrong.
pub(crate) fn check_comparison(
    subjects: &[crate::SubjectSpec],
    workloads: &[crate::WorkloadSpec],
) -> Result<(), (String, String)> {
    let clusters = subjects.iter().filter(|s| s.cluster.is_some()).count();
    if clusters == 0 {
        return Ok(());
    }
    if let Some(i) = subjects.iter().position(|s| s.cluster.is_none()) {
        return Err((
            format!("subject[{i}]"),
            "every subject is a `cluster` or none is: a cluster's metrics (adoption times, per-node cost) have no counterpart in a single node's".into(),
        ));
    }
    for (i, w) in workloads.iter().enumerate() {
        if !w.args.is_empty() {
            return Err((
                format!("workload[{i}].args"),
                "not for cluster subjects: set the node's arguments in the cluster file or `node_command`".into(),
            ));
        }
        if w.load.is_some() {
            return Err((
                format!("workload[{i}].load"),
                "not for cluster subjects: the cluster file's [workload] is run, at this workload's rate".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::ComparisonFile;

    /// A comparison of `subjects` (TOML bodies of `[[subject]]`) in a directory holding
    /// `c.toml`; the error text, or the parsed file.
    fn parse(subjects: &[&str], workload_extra: &str) -> Result<ComparisonFile, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.toml"), "[cluster]\nname = \"x\"\n").unwrap();
        let mut text = String::from("rounds = 2\n");
        for s in subjects {
            text.push_str(&format!("[[subject]]\n{s}\n"));
        }
        text.push_str(&format!(
            "[[workload]]\nname = \"w\"\nrate = 5\nmeasure_s = 3\n{workload_extra}\n"
        ));
        let path = dir.path().join("cmp.toml");
        ComparisonFile::parse(&text, &path).map_err(|e| e.to_string())
    }

    #[test]
    fn a_cluster_subject_resolves_its_file_next_to_the_comparison() {
        let cfg = parse(
            &[
                "name = \"a\"\ncluster = \"c.toml\"",
                "name = \"b\"\ncluster = \"c.toml\"\nnode_command = [\"sh\", \"{id}\"]",
            ],
            "",
        )
        .unwrap();
        let a = cfg.subjects[0].cluster.as_ref().unwrap();
        let b = cfg.subjects[1].cluster.as_ref().unwrap();
        assert!(a.file.ends_with("c.toml") && a.file.is_absolute(), "{a:?}");
        assert_eq!(a.file_digest, b.file_digest);
        assert_eq!(a.node_command, None);
        // The program is resolved on PATH; the placeholders are left for the cluster.
        let argv = b.node_command.as_ref().unwrap();
        assert!(argv[0].ends_with("/sh") && argv[1] == "{id}", "{argv:?}");
        assert!(cfg.subjects[0].command.is_empty());
    }

    #[test]
    fn cluster_subjects_refuse_what_only_a_process_takes() {
        let e = parse(
            &[
                "name = \"a\"\ncluster = \"c.toml\"",
                "name = \"b\"\ncluster = \"c.toml\"\nready = { tcp = \"127.0.0.1:1\" }",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.contains("key `subject[1].ready`: not for a `cluster` subject"),
            "{e}"
        );
        let e = parse(
            &[
                "name = \"a\"\ncluster = \"c.toml\"",
                "name = \"b\"\ncommand = [\"sh\"]",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.contains("key `subject[1]`: every subject is a `cluster` or none is"),
            "{e}"
        );
        let e = parse(
            &[
                "name = \"a\"\ncommand = [\"sh\"]\nnode_binary = \"sh\"",
                "name = \"b\"\ncommand = [\"sh\"]",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.contains("key `subject[0].node_binary`: only for a `cluster` subject"),
            "{e}"
        );
        let e = parse(
            &[
                "name = \"a\"\ncluster = \"missing.toml\"",
                "name = \"b\"\ncluster = \"c.toml\"",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.contains("key `subject[0].cluster`: ") && e.contains("missing.toml"),
            "{e}"
        );
        let both = [
            "name = \"a\"\ncluster = \"c.toml\"",
            "name = \"b\"\ncluster = \"c.toml\"",
        ];
        let e = parse(&both, "args = [\"--x\"]").unwrap_err();
        assert!(
            e.contains("key `workload[0].args`: not for cluster subjects"),
            "{e}"
        );
    }
}
