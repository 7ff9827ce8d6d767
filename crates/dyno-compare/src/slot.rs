//! What differs between two copies of one node running at once: each execution's own
//! ports and directory, chosen once per slot where its command is prepared.
//!
//! ```toml
//! [[subject]]
//! name = "v1.0"
//! command = ["./run-node.sh", "v1.0", "--rpc", "{port:rpc}", "--home", "{dir}/home"]
//! ready = { http = "http://127.0.0.1:{port:rpc}/status" }
//! addresses = { rpc = "http://127.0.0.1:{port:rpc}" }     # `{rpc}` in the load command
//! metrics = { prometheus = "http://127.0.0.1:{port:prom}/metrics" }   # refused: see below
//! ```
//!
//! - `{port:NAME}` is a free loopback TCP port, one per name per slot (a subject's
//!   execution in one round): the same number everywhere the slot names it, different
//!   for every subject of a round, so two nodes with fixed default ports run side by
//!   side. A port is **defined** by the subject's `command` (or a `git` subject's `args`)
//!   or `env`, where the node is told it; `ready`, `addresses`, the metric URLs and the
//!   workload's load command may only use defined ports (`{port:prom}` above is refused,
//!   exit 2 naming the key: the node would never listen there).
//! - `{dir}` is a fresh empty directory of the slot (under `$TMPDIR`), for a node's home,
//!   data and log files (`metrics.jsonl = "{dir}/node.jsonl"`); it is removed when the
//!   execution ends.
//!
//! Ports are found by binding port 0 on 127.0.0.1 and closing the socket: every port of
//! one round is held open until all are chosen, so no two slots share one; another
//! program could still take one before the node binds it (the node then fails to start
//! and the execution fails, naming its output).

use crate::placeholder::{check_known, malformed_port, ports_in, DIR, IN_COMMAND};
use crate::readiness::{ProbeSpec, ReadySpec};
use crate::spec::{LoadSpec, MetricSources, SubjectSpec, WorkloadSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The ports a subject defines: those its command (a git subject's arguments) and its
/// environment name, where the node is told them.
pub fn defined_ports(subject: &SubjectSpec) -> BTreeSet<String> {
    subject
        .command
        .iter()
        .chain(subject.env.values())
        .flat_map(|t| ports_in(t))
        .map(str::to_string)
        .collect()
}

/// Every text of a subject where a port may be used, with its key under the subject
/// (`ready.http`, `addresses.rpc`, `metrics.prometheus`).
fn port_uses(subject: &SubjectSpec) -> Vec<(String, &str)> {
    let mut out: Vec<(String, &str)> = Vec::new();
    if let Some(r) = &subject.ready {
        let (key, text) = match &r.probe {
            ProbeSpec::Tcp(a) => ("tcp", a.as_str()),
            ProbeSpec::Http(u) => ("http", u.as_str()),
            ProbeSpec::Log(re) => ("log", re.as_str()),
        };
        out.push((format!("ready.{key}"), text));
    }
    for (k, v) in &subject.addresses {
        out.push((format!("addresses.{k}"), v));
    }
    if let Some(u) = &subject.metrics.prometheus {
        out.push(("metrics.prometheus".into(), u));
    }
    out
}

/// Checks a subject's placeholders: every `{NAME}` one the key is given, every
/// `{port:...}` well formed, and every port its readiness, addresses and metric URL use
/// defined by its command or environment. `Err` is `(key under the subject, message)`.
pub fn check_subject(subject: &SubjectSpec) -> Result<(), (String, String)> {
    let defined = defined_ports(subject);
    // A git subject's `command` is the `args` it was written with.
    let command = if subject.git.is_some() {
        "args"
    } else {
        "command"
    };
    let mut texts: Vec<(String, &str)> = subject
        .command
        .iter()
        .map(|t| (command.to_string(), t.as_str()))
        .chain(
            subject
                .env
                .iter()
                .map(|(k, v)| (format!("env.{k}"), v.as_str())),
        )
        .collect();
    let workload_named = texts.len();
    texts.extend(port_uses(subject));
    for (i, (key, text)) in texts.iter().enumerate() {
        // The workload's values reach the command and environment; a probe, address or
        // metric URL gets only the slot's (a log probe is a regex: its braces are its own).
        let known: &[&str] = if i < workload_named {
            &IN_COMMAND
        } else {
            &["dir"]
        };
        if key != "ready.log" {
            check_known(text, known, true).map_err(|why| (key.clone(), why))?;
        }
        if let Some(bad) = malformed_port(text) {
            return Err((
                key.clone(),
                format!("`{bad}` is not a port placeholder: write `{{port:NAME}}` (letters, digits, `_`)"),
            ));
        }
    }
    for (key, text) in port_uses(subject) {
        if let Some(name) = ports_in(text).into_iter().find(|n| !defined.contains(*n)) {
            return Err((
                key,
                format!(
                    "`{{port:{name}}}` is not given to the node: name it in the subject's `command` or `env` too (e.g. \"--port={{port:{name}}}\"), so the node listens where dyno looks"
                ),
            ));
        }
    }
    if let Some(path) = &subject.metrics.jsonl {
        check_known(&path.to_string_lossy(), &["dir"], false)
            .map_err(|why| ("metrics.jsonl".to_string(), why))?;
    }
    Ok(())
}

/// Checks a load's port placeholders against the subjects: `Err((subject, port))` names
/// the first subject that does not define a port the load uses.
pub fn check_load(load: &LoadSpec, subjects: &[SubjectSpec]) -> Result<(), (String, String)> {
    for text in load.command.iter().chain(load.env.values()) {
        for name in ports_in(text) {
            if let Some(s) = subjects
                .iter()
                .find(|s| s.cluster.is_none() && !defined_ports(s).contains(name))
            {
                return Err((s.name.clone(), name.to_string()));
            }
        }
    }
    Ok(())
}

/// The values of one slot's placeholders.
#[derive(Debug, Default)]
pub struct SlotValues {
    /// `{port:NAME}` by name.
    pub ports: BTreeMap<String, u16>,
    /// `{dir}`, removed when dropped.
    pub dir: Option<SlotDir>,
}

/// A slot's directory, removed with everything in it when dropped.
#[derive(Debug)]
pub struct SlotDir(PathBuf);

impl SlotDir {
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SlotDir {
    fn drop(&mut self) {
        // Best effort: a node that left a file it cannot delete leaves it in $TMPDIR.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl SlotValues {
    /// `text` with every `{port:NAME}` of this slot and `{dir}` filled in (a placeholder
    /// the slot has no value for is left as written).
    pub fn fill(&self, text: &str) -> String {
        let mut out = text.to_string();
        if out.contains("{port:") {
            for (name, port) in &self.ports {
                out = out.replace(&format!("{{port:{name}}}"), &port.to_string());
            }
        }
        if let Some(dir) = &self.dir {
            out = out.replace(DIR, &dir.path().display().to_string());
        }
        out
    }
}

/// Whether a subject or the workload's load uses `{dir}` anywhere.
fn uses_dir(subject: &SubjectSpec, workload: &WorkloadSpec) -> bool {
    let load = workload
        .load
        .iter()
        .flat_map(|l| l.command.iter().chain(l.env.values()));
    let jsonl = subject
        .metrics
        .jsonl
        .iter()
        .map(|p| p.to_string_lossy().into_owned());
    let uses = port_uses(subject);
    subject
        .command
        .iter()
        .chain(workload.args.iter())
        .chain(subject.env.values())
        .chain(load)
        .cloned()
        .chain(jsonl)
        .chain(uses.into_iter().map(|(_, t)| t.to_string()))
        .any(|t| t.contains(DIR))
}

/// How many slot directories this process made: part of each one's name.
static DIRS_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The placeholder values of one round's slots, one per subject in order: fresh ports
/// (all held open until every one is chosen, so none repeats) and, where used, a fresh
/// directory.
pub fn allocate(
    subjects: &[&SubjectSpec],
    workload: &WorkloadSpec,
) -> std::io::Result<Vec<SlotValues>> {
    let mut held = Vec::new();
    let mut out = Vec::new();
    for subject in subjects {
        let mut values = SlotValues::default();
        for name in defined_ports(subject) {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            values.ports.insert(name, listener.local_addr()?.port());
            held.push(listener);
        }
        if uses_dir(subject, workload) {
            let n = DIRS_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "dyno-slot-{}-{n}-{}",
                std::process::id(),
                crate::digest::digest(&subject.name)
            ));
            std::fs::create_dir_all(&path)?;
            values.dir = Some(SlotDir(path));
        }
        out.push(values);
    }
    drop(held);
    Ok(out)
}

/// A subject's command, environment, readiness, addresses and metric sources under one
/// workload, with every placeholder filled: what its execution runs.
#[derive(Debug)]
pub struct Prepared {
    /// The command line.
    pub command: Vec<String>,
    /// The extra environment (with `DYNO_WORKLOAD` and `DYNO_RATE`).
    pub env: BTreeMap<String, String>,
    /// Its readiness probe.
    pub ready: Option<ReadySpec>,
    /// Its named addresses.
    pub addresses: BTreeMap<String, String>,
    /// Its metric sources.
    pub metrics: MetricSources,
    /// The load's command line and environment against it.
    pub load: Option<(Vec<String>, BTreeMap<String, String>)>,
    /// The slot's values (its directory lives as long as this).
    pub values: SlotValues,
}

impl SubjectSpec {
    /// The subject under `workload` with the slot's placeholder `values`: done once per
    /// execution, where its command is prepared.
    pub fn prepare(&self, workload: &WorkloadSpec, values: SlotValues) -> Prepared {
        let fill = |t: &str| values.fill(t);
        let command: Vec<String> = self.command_for(workload).iter().map(|a| fill(a)).collect();
        let env = self
            .env_for(workload)
            .into_iter()
            .map(|(k, v)| (k, fill(&v)))
            .collect();
        let ready = self.ready.as_ref().map(|r| ReadySpec {
            probe: match &r.probe {
                ProbeSpec::Tcp(a) => ProbeSpec::Tcp(fill(a)),
                ProbeSpec::Http(u) => ProbeSpec::Http(fill(u)),
                ProbeSpec::Log(re) => ProbeSpec::Log(re.clone()),
            },
            timeout_s: r.timeout_s,
        });
        let addresses: BTreeMap<String, String> = self
            .addresses
            .iter()
            .map(|(k, v)| (k.clone(), fill(v)))
            .collect();
        let mut metrics = self.metrics.clone();
        metrics.prometheus = metrics.prometheus.as_deref().map(fill);
        metrics.jsonl = metrics
            .jsonl
            .as_ref()
            .map(|p| PathBuf::from(fill(&p.to_string_lossy())));
        let load = workload.load.as_ref().map(|l| {
            let command = l
                .command_with(&addresses, workload)
                .iter()
                .map(|a| fill(a))
                .collect();
            let env = l
                .env_with(&addresses, workload)
                .into_iter()
                .map(|(k, v)| (k, fill(&v)))
                .collect();
            (command, env)
        });
        Prepared {
            command,
            env,
            ready,
            addresses,
            metrics,
            load,
            values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placeholder::stand_in;
    use crate::spec::ComparisonFile;

    #[test]
    fn port_placeholders_are_found_and_filled() {
        assert_eq!(
            ports_in("tcp://127.0.0.1:{port:rpc},{port:p2p} {port:rpc}"),
            ["rpc", "p2p", "rpc"]
        );
        assert!(ports_in("{rpc} {port:} {port:a b}").is_empty());
        assert_eq!(malformed_port("x {port:} y").as_deref(), Some("{port:"));
        assert_eq!(malformed_port("{port:a-b}").as_deref(), Some("{port:a-b"));
        assert_eq!(malformed_port("{port:rpc} {rate}"), None);
        let v = SlotValues {
            ports: [("rpc".to_string(), 4242)].into(),
            dir: None,
        };
        assert_eq!(
            v.fill("http://127.0.0.1:{port:rpc}/{port:other}"),
            "http://127.0.0.1:4242/{port:other}"
        );
        assert_eq!(
            stand_in("http://127.0.0.1:{port:rpc}/x"),
            "http://127.0.0.1:1/x"
        );
    }

    fn file(subject_extra: &str) -> Result<ComparisonFile, String> {
        let text = format!(
            r#"[[subject]]
name = "a"
command = ["sh", "-c", "node --rpc {{port:rpc}} --home {{dir}}/home"]
{subject_extra}
[[subject]]
name = "b"
command = ["sh", "-c", "node --rpc {{port:rpc}}"]
env = {{ P2P = "{{port:p2p}}" }}
[[workload]]
name = "w"
rate = 1
measure_s = 2
"#
        );
        ComparisonFile::parse(&text, Path::new("t.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn every_slot_of_a_round_gets_its_own_ports_and_directory() {
        let cfg = file("addresses = { rpc = \"http://127.0.0.1:{port:rpc}\" }").unwrap();
        let subjects: Vec<&SubjectSpec> = cfg.subjects.iter().collect();
        let values = allocate(&subjects, &cfg.workloads[0]).unwrap();
        let (a, b) = (&values[0], &values[1]);
        assert_eq!(a.ports.keys().collect::<Vec<_>>(), ["rpc"]);
        assert_eq!(b.ports.keys().collect::<Vec<_>>(), ["p2p", "rpc"]);
        assert_ne!(a.ports["rpc"], b.ports["rpc"]);
        assert_ne!(b.ports["rpc"], b.ports["p2p"]);
        let dir = a.dir.as_ref().expect("a uses {dir}").path().to_path_buf();
        assert!(dir.is_dir());
        assert!(b.dir.is_none(), "b names no {{dir}}");
        let port = a.ports["rpc"];
        let mut values = values.into_iter();
        let prepared = cfg.subjects[0].prepare(&cfg.workloads[0], values.next().unwrap());
        assert_eq!(
            prepared.command[2],
            format!("node --rpc {port} --home {}/home", dir.display())
        );
        assert_eq!(
            prepared.addresses["rpc"],
            format!("http://127.0.0.1:{port}")
        );
        drop(prepared);
        assert!(
            !dir.exists(),
            "the slot's directory goes with its execution"
        );
    }

    #[test]
    fn a_port_the_node_is_never_told_is_refused_naming_the_key() {
        let e = file("metrics = { prometheus = \"http://127.0.0.1:{port:prom}/metrics\" }")
            .unwrap_err();
        assert!(e.contains("key `subject[0].metrics.prometheus`"), "{e}");
        assert!(e.contains("`{port:prom}` is not given to the node"), "{e}");
        let e = file("ready = { http = \"http://127.0.0.1:{port:p2p}/status\" }").unwrap_err();
        assert!(e.contains("key `subject[0].ready.http`"), "{e}");
        let e = file("env = { X = \"{port:}\" }").unwrap_err();
        assert!(e.contains("key `subject[0].env.X`"), "{e}");
        assert!(file("ready = { tcp = \"127.0.0.1:{port:rpc}\" }").is_ok());
    }

    #[test]
    fn a_name_no_placeholder_defines_is_refused_naming_the_key_and_what_exists() {
        let e = file("env = { X = \"{prot:rpc} {nodes}\" }").unwrap_err();
        assert!(e.contains("key `subject[0].env.X`"), "{e}");
        assert!(e.contains("`{nodes}` is no placeholder"), "{e}");
        assert!(e.contains("`{workload}`, `{rate}`"), "{e}");
        assert!(e.contains("`{dir}`, `{port:NAME}`"), "{e}");
        let e = file("addresses = { rpc = \"http://127.0.0.1:{port:rpc}/{rate}\" }").unwrap_err();
        assert!(e.contains("key `subject[0].addresses.rpc`"), "{e}");
        assert!(e.contains("this key may use `{dir}`, `{port:NAME}`"), "{e}");
        let e = file("metrics = { jsonl = \"{home}/n.jsonl\" }").unwrap_err();
        assert!(e.contains("key `subject[0].metrics.jsonl`"), "{e}");
        let e = file("cwd = \"{dir}\"").unwrap_err();
        assert!(e.contains("key `subject[0].cwd`"), "{e}");
        assert!(e.contains("this key takes no placeholders"), "{e}");
    }

    #[test]
    fn a_brace_around_anything_but_a_name_is_literal() {
        let cfg = file(
            "env = { J = '{\"a\": 1} { x } ${1##*:} {}', W = \"{workload}/{rate}/{dir}\" }\nready = { log = 'up \\d{3}' }",
        )
        .unwrap();
        let w = &cfg.workloads[0];
        let values = allocate(&[&cfg.subjects[0]], w).unwrap();
        let prepared = cfg.subjects[0].prepare(w, values.into_iter().next().unwrap());
        assert_eq!(prepared.env["J"], "{\"a\": 1} { x } ${1##*:} {}");
        assert!(
            prepared.env["W"].starts_with("w/1/"),
            "{}",
            prepared.env["W"]
        );
    }
}
