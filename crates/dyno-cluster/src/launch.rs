//! The local launcher: a cluster file run as one process per node on this machine.
//!
//! The launcher writes a run directory (the genesis, one node config per node, every
//! node's event log and output), starts every node through dyno-proc's guard (so no node
//! outlives dyno, even a SIGKILLed one), waits for each node's `/ready`, starts
//! `dyno load`, lets the cluster run for the warm-up plus the measured window, stops
//! everything and analyses the logs. A node that exits early marks the run incomplete;
//! the others are stopped cleanly and every log is kept.
//!
//! Latency and bandwidth are applied by the reference node's transport (each node config
//! lists its peers with the one-way latency and bandwidth of the link), because this
//! kernel has no netem.

use crate::error::ClusterError;
use crate::events::{read_log, Event};
use crate::extract::Extractors;
use crate::file::{ClusterSpec, NodeCommand, Role};
use crate::propagation::{analyse, analyse_extracted, Analysis};
use crate::resources::{AdoptionWatch, CostSampler, NodeResources};
use crate::run_dir::genesis_time_ns;
use dyno_proc::{GroupGuard, GuardedChild, SpawnOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the launcher reports while it works (the binary turns these into progress).
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The run directory is written.
    Prepared {
        /// The run directory.
        dir: PathBuf,
    },
    /// A node answered `/ready`.
    NodeReady {
        /// Nodes ready so far.
        ready: usize,
        /// Nodes in the cluster.
        of: usize,
    },
    /// The load generator started.
    LoadStarted,
    /// About once a second while the cluster runs.
    Running {
        /// Current slot.
        slot: u64,
        /// Seconds left.
        left_s: u64,
        /// Blocks every node has adopted so far (warm-up included).
        adopted_everywhere: usize,
    },
    /// A scheduled fault started or ended.
    Fault {
        /// What, e.g. `restart n3 at slot 10 for 4 slots starts`.
        line: String,
    },
    /// The measured window is known (the nodes are up and the genesis time fixed): what
    /// a report of the run needs to read its logs, stored at once so a run killed from
    /// here on can still be reported.
    Window {
        /// The slots analysed.
        slots: std::ops::Range<u64>,
        /// The window, Unix ns.
        window_ns: std::ops::Range<u64>,
    },
    /// Everything is being stopped.
    Stopping,
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run directory (configs, logs, outputs).
    pub dir: PathBuf,
    /// False when a node or the load exited early or the run was interrupted.
    pub complete: bool,
    /// What went wrong, one line each, with the last output lines of the process.
    pub problems: Vec<String>,
    /// Warnings from stopping (a node that needed SIGKILL).
    pub warnings: Vec<String>,
    /// Every node's event log.
    pub node_logs: Vec<PathBuf>,
    /// The analysis of the measured window (slots after the warm-up).
    pub analysis: Analysis,
    /// Unix ns of slot 0.
    pub genesis_time_ns: u64,
    /// The slots analysed: the measured window after the warm-up.
    pub slots: std::ops::Range<u64>,
    /// The measured window, Unix ns (what extracted events are cut to).
    pub window_ns: std::ops::Range<u64>,
    /// Every node's CPU and memory per slot of the window.
    pub resources: Vec<NodeResources>,
    /// What the run did of each scheduled fault, in file order.
    pub faults: Vec<crate::faults::FaultRecord>,
    /// What the faults did (recovery, forks, adoption during and outside them); `None`
    /// without a fault schedule.
    pub fault_report: Option<crate::fault_analysis::FaultReport>,
    /// How the nodes started.
    pub startup: Startup,
}

/// Where the launcher finds `dyno` and puts the run.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `dyno` executable (for `dyno node genesis`, `dyno node run`, `dyno load`).
    pub dyno: PathBuf,
    /// The run directory to create (must not exist).
    pub dir: PathBuf,
}

struct Node {
    id: usize,
    child: GuardedChild,
}

/// How every node is spawned: its output straight into `<dir>/<name>.out` (no threads
/// in dyno per node) and its process group under the run's one guard.
impl Launch {
    fn node_options(&self, name: &str, guard: &Option<Arc<GroupGuard>>) -> SpawnOptions {
        SpawnOptions {
            log_file: Some(self.dir.join(format!("{name}.out"))),
            output_to_log_only: true,
            guard: guard.clone(),
            ..SpawnOptions::default()
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError + '_ {
    move |source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn launch_error(what: impl Into<String>) -> ClusterError {
    ClusterError::Launch { what: what.into() }
}

/// Seconds from now until slot 0: long enough for every node to start and answer
/// `/ready` on this machine ([`start_in_s`]), so slot 0 is not missed.
fn start_in_for(spec: &ClusterSpec) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    start_in_s(spec.nodes.len(), cores)
}

impl Launch {
    /// Writes the genesis (through `dyno node genesis`, so its format is the node's own)
    /// and every node's config.
    fn prepare(&self, spec: &ClusterSpec) -> Result<PathBuf, ClusterError> {
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let genesis = self.dir.join("genesis.toml");
        let validators: Vec<String> = spec
            .nodes
            .iter()
            .map(|n| match n.role {
                Role::Producer { stake } => format!("{}={stake}", n.name),
                Role::Relay => format!("{}=0", n.name),
            })
            .collect();
        let out = Command::new(&self.dyno)
            .args(["node", "genesis", "--out"])
            .arg(&genesis)
            .arg("--validators")
            .arg(validators.join(","))
            .args(["--network", &spec.name])
            .args(["--slot-ms", &spec.slot_ms.to_string()])
            .args(["--start-in", &start_in_for(spec).to_string()])
            .output()
            .map_err(io(&self.dyno))?;
        if !out.status.success() {
            return Err(launch_error(format!(
                "`dyno node genesis` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        for n in &spec.nodes {
            let path = self.dir.join(format!("{}.toml", n.name));
            std::fs::write(&path, node_config(spec, n.id)).map_err(io(&path))?;
        }
        Ok(genesis)
    }

    /// `arg` with node `id`'s placeholders filled in.
    fn fill(&self, spec: &ClusterSpec, id: usize, arg: &str) -> String {
        let name = &spec.nodes[id].name;
        let (l, i, m) = spec.ports(id);
        let config = self.dir.join(format!("{name}.toml"));
        let log = self.dir.join(format!("{name}.jsonl"));
        let peers: Vec<String> = spec
            .topology
            .peers(id)
            .map(|p| format!("127.0.0.1:{}", spec.ports(p).0))
            .collect();
        arg.replace("{id}", name)
            .replace("{listen}", &format!("127.0.0.1:{l}"))
            .replace("{ingress}", &format!("127.0.0.1:{i}"))
            .replace("{metrics}", &format!("127.0.0.1:{m}"))
            .replace("{peers}", &peers.join(","))
            .replace("{log}", &log.display().to_string())
            .replace("{config}", &config.display().to_string())
            .replace(
                "{genesis}",
                &self.dir.join("genesis.toml").display().to_string(),
            )
    }

    fn command(&self, spec: &ClusterSpec, id: usize) -> Command {
        let name = &spec.nodes[id].name;
        let config = self.dir.join(format!("{name}.toml"));
        match &spec.command {
            NodeCommand::Reference => {
                let mut c = Command::new(&self.dyno);
                c.args(["node", "run", "--quiet", "--config"]).arg(config);
                c
            }
            NodeCommand::Argv(argv) => self.argv_command(spec, id, argv),
        }
    }

    /// Node `id` run by `argv` (a node command, or an upgrade's), placeholders filled.
    fn argv_command(&self, spec: &ClusterSpec, id: usize, argv: &[String]) -> Command {
        let program =
            crate::file::resolve_executable(&argv[0], spec.path.parent().unwrap_or(Path::new(".")))
                .unwrap_or_else(|| PathBuf::from(&argv[0]));
        let mut c = Command::new(program);
        c.args(argv[1..].iter().map(|a| self.fill(spec, id, a)));
        c
    }

    /// The load generator: the workload's own command, or `dyno load` at the targets'
    /// QUIC ingress.
    fn load_command(&self, spec: &ClusterSpec, genesis: &Path, window: Duration) -> Command {
        let w = &spec.workload;
        let ingress: Vec<String> = w
            .targets
            .iter()
            .map(|&t| format!("127.0.0.1:{}", spec.ports(t).1))
            .collect();
        let rate = format!("{}", w.rate_tps);
        let duration = window.as_secs().to_string();
        if let Some(argv) = &w.command {
            let fill = |a: &str| {
                a.replace("{targets}", &ingress.join(","))
                    .replace("{target}", ingress.first().map_or("", String::as_str))
                    .replace("{rate}", &rate)
                    .replace("{duration}", &duration)
            };
            let program = crate::file::resolve_executable(
                &argv[0],
                spec.path.parent().unwrap_or(Path::new(".")),
            )
            .unwrap_or_else(|| PathBuf::from(&argv[0]));
            let mut c = Command::new(program);
            c.args(argv[1..].iter().map(|a| fill(a)));
            return c;
        }
        let mut c = Command::new(&self.dyno);
        c.args(["load", "--genesis"]).arg(genesis);
        for t in &ingress {
            c.args(["--target", t]);
        }
        c.args(["--rate", &format!("{}", w.rate_tps.round().max(1.0))]);
        c.args(["--duration", &duration]);
        c
    }

    /// Runs the cluster: prepare, start, wait for readiness, load, run, stop, analyse.
    /// `stop` ends the run early (Ctrl-C); the run is then incomplete.
    pub fn run(
        &self,
        spec: &ClusterSpec,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RunOutcome, ClusterError> {
        if self.dir.exists() {
            return Err(launch_error(format!(
                "run directory {} exists",
                self.dir.display()
            )));
        }
        spec.check_ports()?;
        let genesis = self.prepare(spec)?;
        progress(Progress::Prepared {
            dir: self.dir.clone(),
        });
        let genesis_time_ns = genesis_time_ns(&genesis)?;
        // One guard for every node's group (and the restarts'), not a `sh` per node.
        let guard = GroupGuard::start();
        let started = self.start_nodes(spec, &guard, stop, progress)?;
        let (mut nodes, mut problems, mut startup) =
            (started.nodes, started.problems, started.startup);
        startup.slot0_after_ready_s = (genesis_time_ns as f64 - dyno_now_ns() as f64) / 1e9;
        let window = Duration::from_secs(spec.warmup_s + spec.duration_s);
        let mut load = None;
        if problems.is_empty() && spec.workload.rate_tps > 0.0 {
            load = Some(self.start_load(spec, &genesis, window)?);
            progress(Progress::LoadStarted);
        }
        // The window counts from slot 0 (or from now, if the nodes were slow to start). The
        // nodes run two slots (at least 2 s) past it, so the window's last blocks can reach
        // every node before the stop; only blocks of the window's slots are analysed.
        let start_ns = genesis_time_ns.max(dyno_now_ns());
        let tail = Duration::from_millis((2 * spec.slot_ms).max(2000));
        let end_ns = start_ns + (window + tail).as_nanos() as u64;
        let window_ns =
            (start_ns + spec.warmup_s * 1_000_000_000)..(start_ns + window.as_nanos() as u64);
        let slot_of = |ns: u64| ns.saturating_sub(genesis_time_ns) / (spec.slot_ms * 1_000_000);
        progress(Progress::Window {
            slots: slot_of(window_ns.start)..slot_of(window_ns.end),
            window_ns: window_ns.clone(),
        });
        let mut watching = self.watching(spec, &nodes, genesis_time_ns, &window_ns, &guard);
        let mut last_tick = Instant::now();
        while problems.is_empty() && dyno_now_ns() < end_ns {
            if stop.load(Ordering::SeqCst) {
                problems.push("interrupted".to_string());
                break;
            }
            let slot = dyno_now_ns().saturating_sub(genesis_time_ns) / (spec.slot_ms * 1_000_000);
            watching.cost.sample(dyno_now_ns(), slot);
            problems.extend(watching.step(self, spec, &mut nodes, load.as_mut(), progress)?);
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                progress(watching.running(spec, genesis_time_ns, end_ns));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        progress(Progress::Stopping);
        watching.faults.release(&nodes);
        let fault_records = watching.faults.records.clone();
        let mut warnings = stop_all(spec, load, nodes);
        let slots = slot_of(window_ns.start)..slot_of(window_ns.end);
        let (node_logs, analysis) = self.analyse_logs(
            spec,
            watching.tails,
            watching.extracted,
            (&slots, &window_ns),
            &mut warnings,
        )?;
        let fault_report = crate::fault_analysis::of_run(
            spec,
            &fault_records,
            &analysis,
            &node_logs,
            genesis_time_ns,
            slots.end,
        )?;
        self.keep_faults(&fault_records)?;
        Ok(RunOutcome {
            dir: self.dir.clone(),
            complete: problems.is_empty(),
            problems,
            warnings,
            node_logs,
            analysis,
            genesis_time_ns,
            slots,
            window_ns,
            resources: watching.cost.resources,
            faults: fault_records,
            fault_report,
            startup,
        })
    }

    /// The faults injected, kept with the logs (`faults.json`) so a report read back from
    /// them knows the windows; nothing when there were none.
    fn keep_faults(&self, records: &[crate::faults::FaultRecord]) -> Result<(), ClusterError> {
        if records.is_empty() {
            return Ok(());
        }
        let path = self.dir.join("faults.json");
        let json = serde_json::to_string_pretty(records).unwrap_or_default();
        std::fs::write(&path, json).map_err(io(&path))
    }

    /// Starts the load generator for `window` (and the nodes' tail after it).
    fn start_load(
        &self,
        spec: &ClusterSpec,
        genesis: &Path,
        window: Duration,
    ) -> Result<GuardedChild, ClusterError> {
        let c = self.load_command(spec, genesis, window);
        let opts = SpawnOptions {
            log_file: Some(self.dir.join("load.out")),
            ..SpawnOptions::default()
        };
        GuardedChild::spawn(c, &opts).map_err(|e| launch_error(format!("load: {e}")))
    }

    /// What watches the running nodes: their cost over the window, the fault schedule,
    /// their adoptions and their output.
    fn watching<'s>(
        &self,
        spec: &'s ClusterSpec,
        nodes: &[Node],
        genesis_time_ns: u64,
        window_ns: &std::ops::Range<u64>,
        guard: &Option<Arc<GroupGuard>>,
    ) -> Watching<'s> {
        let names: Vec<String> = spec.nodes.iter().map(|n| n.name.clone()).collect();
        Watching {
            cost: CostSampler::new(
                &nodes.iter().map(|n| n.child.pid()).collect::<Vec<_>>(),
                &names,
                window_ns.clone(),
            ),
            faults: FaultDriver::new(spec, genesis_time_ns, guard.clone()),
            watch: AdoptionWatch::new(
                names
                    .iter()
                    .map(|n| self.dir.join(format!("{n}.jsonl")))
                    .collect(),
            ),
            tails: spec
                .nodes
                .iter()
                .map(|n| OutputTail::new(self.dir.join(format!("{}.out", n.name)), &n.name))
                .collect(),
            extracted: Vec::new(),
        }
    }

    /// The propagation analysis of the window (its slots and nanoseconds): from the
    /// extract rules over the nodes' output, or from the reference node's event logs.
    /// What the line cap left out of the outputs goes to `warnings`.
    fn analyse_logs(
        &self,
        spec: &ClusterSpec,
        mut tails: Vec<OutputTail>,
        mut extracted: Vec<Event>,
        (slots, window_ns): (&std::ops::Range<u64>, &std::ops::Range<u64>),
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<PathBuf>, Analysis), ClusterError> {
        if let Some(rules) = &spec.extract {
            for tail in &mut tails {
                extracted.extend(tail.read(rules)?);
                extracted.extend(tail.finish(rules)?);
                warnings.extend(tail.dropped());
            }
            let events = in_window(extracted, window_ns);
            let logs = tails.into_iter().map(|t| t.path).collect();
            let analysis = analyse_extracted(&events, spec.nodes.len(), &rules.unavailable());
            return Ok((logs, analysis));
        }
        let node_logs: Vec<PathBuf> = spec
            .nodes
            .iter()
            .map(|n| self.dir.join(format!("{}.jsonl", n.name)))
            .filter(|p| p.exists())
            .collect();
        let mut events: Vec<Event> = Vec::new();
        for log in &node_logs {
            events.extend(read_log(log)?);
        }
        let events = in_slots(events, slots);
        Ok((node_logs, analyse(&events, spec.nodes.len())))
    }
}

/// What the launcher keeps an eye on while the cluster runs.
struct Watching<'a> {
    cost: CostSampler,
    faults: FaultDriver<'a>,
    watch: AdoptionWatch,
    tails: Vec<OutputTail>,
    extracted: Vec<Event>,
}

impl Watching<'_> {
    /// Where the run is, for the once-a-second progress line.
    fn running(&mut self, spec: &ClusterSpec, genesis_time_ns: u64, end_ns: u64) -> Progress {
        let now = dyno_now_ns();
        Progress::Running {
            slot: now.saturating_sub(genesis_time_ns) / (spec.slot_ms * 1_000_000),
            left_s: end_ns.saturating_sub(now) / 1_000_000_000,
            adopted_everywhere: match spec.extract {
                Some(_) => adopted_everywhere(&self.extracted, spec.nodes.len()),
                None => self.watch.blocks_adopted_everywhere(),
            },
        }
    }

    /// One turn of the run loop: the faults due, a load or node that exited early (a
    /// node a fault took down is no problem), and what the extract rules read.
    fn step(
        &mut self,
        launch: &Launch,
        spec: &ClusterSpec,
        nodes: &mut [Node],
        load: Option<&mut GuardedChild>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Vec<String>, ClusterError> {
        let mut problems = Vec::new();
        let (lines, respawned) = self.faults.apply_due(dyno_now_ns(), nodes, launch)?;
        for line in lines {
            progress(Progress::Fault { line });
        }
        if respawned {
            // A restarted node is a new process: its CPU counts start again.
            self.cost
                .follow(&nodes.iter().map(|n| n.child.pid()).collect::<Vec<_>>());
        }
        // A load that ends by itself at its duration is fine; one that fails is not.
        if let Some(l) = load {
            if let Some(status) = l.exited().filter(|s| s != "exit status: 0") {
                problems.push(format!(
                    "the load exited early ({status}); last output: {}",
                    l.last_lines().join(" | ")
                ));
            }
        }
        for node in nodes.iter_mut().filter(|n| !self.faults.is_down(n.id)) {
            if let Some(status) = node.child.exited() {
                problems.push(format!(
                    "{} exited early ({status}); last output: {}",
                    spec.nodes[node.id].name,
                    node.child.last_lines().join(" | ")
                ));
            }
        }
        if let Some(rules) = &spec.extract {
            for tail in &mut self.tails {
                self.extracted.extend(tail.read(rules)?);
            }
        }
        Ok(problems)
    }
}

/// Stops the load and every node (the stop signal, SIGKILL after 10 s); a warning for
/// each that had to be killed, or left processes outside its group that dyno killed. Every node is signalled first and then waited for, so a
/// thousand nodes stop in about the time one takes.
fn stop_all(spec: &ClusterSpec, load: Option<GuardedChild>, nodes: Vec<Node>) -> Vec<String> {
    let mut warnings = Vec::new();
    let grace = Duration::from_secs(10);
    if let Some(load) = load {
        for w in load.stop(grace).warnings() {
            warnings.push(format!("dyno load: {w}"));
        }
    }
    let mut nodes = nodes;
    for node in &mut nodes {
        node.child.begin_stop();
    }
    let deadline = Instant::now() + grace;
    for node in nodes {
        let left = deadline.saturating_duration_since(Instant::now());
        for w in node.child.stop(left).warnings() {
            warnings.push(format!("{}: {w}", spec.nodes[node.id].name));
        }
    }
    warnings
}

/// The events of `slots` (and every `started`): what a run analyses, so the warm-up and
/// the blocks forged after the window (which had no time to spread) are left out.
pub fn in_slots(events: Vec<Event>, slots: &std::ops::Range<u64>) -> Vec<Event> {
    events
        .into_iter()
        .filter(|e| e.what.slot().is_none_or(|s| slots.contains(&s)))
        .collect()
}

/// The events of the blocks first seen inside `window` (Unix ns): extracted events have
/// no slots, so a block belongs to the window its earliest event falls in.
pub fn in_window(events: Vec<Event>, window: &std::ops::Range<u64>) -> Vec<Event> {
    let mut first: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for e in &events {
        if let Some(b) = block_of(&e.what) {
            let t = first.entry(b.to_string()).or_insert(e.ts_ns);
            *t = (*t).min(e.ts_ns);
        }
    }
    events
        .into_iter()
        .filter(|e| block_of(&e.what).is_some_and(|b| window.contains(&first[b])))
        .collect()
}

fn block_of(what: &crate::events::EventKind) -> Option<&str> {
    use crate::events::EventKind as K;
    match what {
        K::Forged { block, .. }
        | K::Announced { block, .. }
        | K::HeaderReceived { block, .. }
        | K::FetchRequested { block, .. }
        | K::FetchCompleted { block, .. }
        | K::Adopted { block, .. } => Some(block),
        _ => None,
    }
}

/// Blocks adopted by all `nodes` in extracted events (the progress line).
fn adopted_everywhere(events: &[Event], nodes: usize) -> usize {
    let mut by: std::collections::HashMap<&str, std::collections::HashSet<&str>> =
        std::collections::HashMap::new();
    for e in events {
        if let crate::events::EventKind::Adopted { block, .. } = &e.what {
            by.entry(block).or_default().insert(&e.node);
        }
    }
    by.values().filter(|n| n.len() >= nodes).count()
}

/// A node's output file read as it grows: each complete line goes through the extract
/// rules, stamped with the time it was read (for rules without a `ts` group). Lines over
/// dyno-proc's line cap are skipped and counted ([`OutputTail::dropped`]).
struct OutputTail {
    path: PathBuf,
    node: String,
    offset: u64,
    lines: dyno_proc::lines::LineSplitter,
    line: usize,
}

impl OutputTail {
    fn new(path: PathBuf, node: &str) -> Self {
        OutputTail {
            path,
            node: node.to_string(),
            offset: 0,
            lines: Default::default(),
            line: 0,
        }
    }

    fn read(&mut self, rules: &Extractors) -> Result<Vec<Event>, ClusterError> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Ok(Vec::new());
        };
        f.seek(SeekFrom::Start(self.offset))
            .map_err(io(&self.path))?;
        let now = dyno_now_ns();
        let mut out = Vec::new();
        // In chunks: a node writing without newlines must not be read into memory whole.
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = f.read(&mut chunk).map_err(io(&self.path))?;
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            let mut lines = std::mem::take(&mut self.lines);
            let pushed = lines.push(&chunk[..n], |line| {
                out.extend(self.one(rules, line, now)?);
                Ok::<(), ClusterError>(())
            });
            self.lines = lines;
            pushed?;
        }
        Ok(out)
    }

    /// The last line, when the node stopped without a newline.
    fn finish(&mut self, rules: &Extractors) -> Result<Vec<Event>, ClusterError> {
        let mut lines = std::mem::take(&mut self.lines);
        let mut out = Vec::new();
        let finished = lines.finish(|line| {
            out.extend(self.one(rules, line, dyno_now_ns())?);
            Ok::<(), ClusterError>(())
        });
        self.lines = lines;
        finished.map(|()| out)
    }

    /// What the line cap left out, for a warning: "n3.out: 1 line over 64 KiB cut, ...".
    fn dropped(&self) -> Option<String> {
        let d = self.lines.dropped().describe()?;
        Some(format!(
            "{}: {d} (not read by the extract rules)",
            self.path.display()
        ))
    }

    fn one(
        &mut self,
        rules: &Extractors,
        line: &[u8],
        now: u64,
    ) -> Result<Option<Event>, ClusterError> {
        self.line += 1;
        let text = String::from_utf8_lossy(line);
        rules
            .line(&self.node, &text, Some(now))
            .map_err(|e| ClusterError::Log {
                path: self.path.clone(),
                line: self.line,
                message: e.to_string(),
            })
    }
}

fn dyno_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The reference node's config for node `id` (the format of dyno-node's config module):
/// its addresses, its log, and each peer with the latency and bandwidth of the link.
pub fn node_config(spec: &ClusterSpec, id: usize) -> String {
    let n = &spec.nodes[id];
    let (l, i, m) = spec.ports(id);
    let mut s = format!(
        "# Generated by dyno cluster run from {}.\nid = \"{}\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{l}\"\ningress_listen = \"127.0.0.1:{i}\"\nmetrics_listen = \"127.0.0.1:{m}\"\nnode_log = \"{}.jsonl\"\n",
        spec.path.display(),
        n.name,
        n.name
    );
    if let Some(forge) = &spec.forge {
        s.push_str(&format!("forge = \"{forge}\"\n"));
    }
    if let Some(n) = spec.verify_tiles {
        s.push_str(&format!("verify_tiles = {n}\n"));
    }
    // One unless the file asks: the node's own default follows the machine's cores.
    s.push_str(&format!(
        "replay_threads = {}\n",
        spec.replay_threads.unwrap_or(1)
    ));
    if spec.faults.iter().any(|f| f.kind.needs_control()) {
        s.push_str(&format!("control = \"{}.control.toml\"\n", n.name));
    }
    if let Some(at) = &spec.forge_at {
        s.push_str(&format!("forge_at = \"{at}\"\n"));
    }
    for p in spec.topology.peers(id) {
        let latency = spec.regions[n.region].latency_ms[spec.nodes[p].region];
        s.push_str(&format!(
            "\n[[peers]]\nid = \"{}\"\naddr = \"127.0.0.1:{}\"\nlatency_ms = {latency:?}\nbandwidth_mbit = {:?}\n",
            spec.nodes[p].name,
            spec.ports(p).0,
            spec.bandwidth_mbit
        ));
    }
    s
}

mod faults_driver;
#[cfg(test)]
pub(crate) use faults_driver::control_file;
use faults_driver::FaultDriver;

mod start;
pub use start::{at_once, node_start_cpu_s, start_in_s, Startup, NODE_START_CPU_S};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_configs_carry_each_links_latency() {
        let spec = ClusterSpec::parse(Path::new("c.toml"), crate::EXAMPLE).unwrap();
        let text = node_config(&spec, 0);
        let v: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(v["id"].as_str(), Some("n0"));
        assert_eq!(v["peer_listen"].as_str(), Some("127.0.0.1:31000"));
        let peers = v["peers"].as_array().unwrap();
        assert_eq!(peers.len(), spec.topology.degree(0));
        let to_n2 = peers
            .iter()
            .find(|p| p["id"].as_str() == Some("n2"))
            .unwrap();
        assert_eq!(to_n2["latency_ms"].as_float(), Some(145.0));
        assert_eq!(to_n2["addr"].as_str(), Some("127.0.0.1:31006"));
        assert_eq!(to_n2["bandwidth_mbit"].as_float(), Some(100.0));
    }

    #[test]
    fn a_block_belongs_to_the_window_of_its_first_sighting() {
        use crate::events::EventKind;
        let ev = |node: &str, ts_ns, block: &str| Event {
            node: node.into(),
            ts_ns,
            what: EventKind::Adopted {
                slot: 0,
                block: block.into(),
            },
        };
        // "a" is first seen before the window, "b" inside it (its late adoption on n1
        // after the window's end still counts), "c" after it.
        let events = vec![
            ev("n0", 5, "a"),
            ev("n1", 15, "a"),
            ev("n0", 12, "b"),
            ev("n1", 25, "b"),
            ev("n0", 21, "c"),
        ];
        let kept = in_window(events, &(10..20));
        let kept: Vec<(&str, u64)> = kept.iter().map(|e| (e.node.as_str(), e.ts_ns)).collect();
        assert_eq!(kept, [("n0", 12), ("n1", 25)]);
        assert_eq!(
            adopted_everywhere(
                &in_window(vec![ev("n0", 12, "b"), ev("n1", 13, "b")], &(10..20)),
                2
            ),
            1
        );
    }
}
