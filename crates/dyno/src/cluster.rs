//! `dyno cluster`: write, check, analyse and export cluster files.
//!
//! The work lives in dyno-cluster; this module parses arguments, reads files and prints.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use dyno_cluster::launch::{Launch, Progress};
use dyno_cluster::render::{headline, html_report, tables, ClusterReport};
use dyno_cluster::session::{self, Overrides};
use dyno_cluster::stored::ReportLogs;
use dyno_cluster::{propagation, ClusterSpec, EXAMPLE};
use dyno_report::{write_atomic, Table, TableFormat};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `dyno cluster` subcommands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Write a commented example cluster file (3 regions, 9 nodes, dense torus).
    Init {
        /// Where to write it.
        #[arg(default_value = "cluster.toml")]
        file: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Validate a cluster file; show its topology and the propagation it predicts.
    Check(CheckArgs),
    /// Run the cluster on this machine (a process per node, `dyno load`), then report.
    Run(RunArgs),
    /// Propagation report from node event logs: adoption on 50% ... 100% of nodes,
    /// the forging loop and peer metrics.
    Report(ReportArgs),
    /// Render the cluster for an existing scheduler (Nomad or Kubernetes).
    Export(ExportArgs),
}

/// Output formats of check and report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Terminal tables.
    Table,
    /// Markdown tables.
    Markdown,
    /// JSON (report: schema dyno.cluster.report/1).
    Json,
}

/// Arguments of `dyno cluster check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The cluster file.
    file: PathBuf,
    /// Also check that every node's ports are free on 127.0.0.1.
    #[arg(long)]
    ports: bool,
    /// Predict again with this many milliseconds added to every cross-region link, and
    /// show the change (the injected-delay check's expectation).
    #[arg(long, value_name = "MS")]
    inject_cross_ms: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    #[command(flatten)]
    release: ReleaseArgs,
}

/// What `dyno compare` changes of a cluster file per release and workload when it runs a
/// cluster subject as a child `dyno cluster check|run` (hidden: compare's, not a user's).
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The node command replacing the file's `node.command`, as a JSON array.
    #[arg(long, value_name = "JSON", hide = true)]
    node_command: Option<String>,
    /// Refuse a cluster file with its own `node.command` (for compare's `node_binary`).
    #[arg(long, hide = true)]
    reference_only: bool,
}

impl ReleaseArgs {
    /// The release's overrides the flags give.
    fn overrides(&self) -> Result<Overrides> {
        let node_command = match &self.node_command {
            Some(json) => Some(
                serde_json::from_str(json)
                    .with_context(|| format!("--node-command {json}: not a JSON array"))?,
            ),
            None => None,
        };
        Ok(Overrides {
            node_command,
            reference_only: self.reference_only,
            ..Overrides::default()
        })
    }
}

/// The workload and the node build `dyno compare` runs a cluster subject with, and where
/// it reads the run's compared metrics (hidden: compare's, not a user's).
#[derive(Debug, Args)]
pub struct CompareRunArgs {
    /// Transactions per second, replacing the file's `workload.rate_tps`.
    #[arg(long, value_name = "TPS", hide = true)]
    rate_tps: Option<f64>,
    /// Warm-up seconds, replacing the file's `cluster.warmup_s`.
    #[arg(long, value_name = "S", hide = true)]
    warmup_s: Option<u64>,
    /// Measured seconds, replacing the file's `cluster.duration_s`.
    #[arg(long, value_name = "S", hide = true)]
    duration_s: Option<u64>,
    /// The dyno build whose `dyno node` and `dyno load` the cluster runs.
    #[arg(long, value_name = "PATH", hide = true)]
    node_dyno: Option<PathBuf>,
    /// Write the run's compared metrics (dyno.cluster.compared/1) here.
    #[arg(long, value_name = "FILE", hide = true)]
    compared: Option<PathBuf>,
}

/// Arguments of `dyno cluster run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The cluster file.
    file: PathBuf,
    /// Run directory (configs, node logs and outputs); must not exist. Default:
    /// cluster-runs/<name>-<unix seconds>.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Output format of the report.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also write the HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also serve the results store and a live view of every node (TPS, height, blocks
    /// adopted) on ADDR while the cluster runs, as `dyno serve --watch` would.
    #[arg(long, value_name = "ADDR", value_parser = crate::serve::parse_listen)]
    serve: Option<std::net::SocketAddr>,
    #[command(flatten)]
    store: crate::db::StoreArgs,
    #[command(flatten)]
    release: ReleaseArgs,
    #[command(flatten)]
    compare: CompareRunArgs,
}

/// Arguments of `dyno cluster report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A stored run's id (its node logs are read from its run directory), or node logs:
    /// files, or directories whose *.log and *.jsonl files are read.
    #[arg(required = true, value_name = "RUN|LOGS")]
    logs: Vec<PathBuf>,
    #[command(flatten)]
    db: crate::db::DbArg,
    /// The cluster file: its node count, names and topology (for the prediction and the
    /// drawing).
    #[arg(long, value_name = "FILE")]
    cluster: Option<PathBuf>,
    /// Nodes in the cluster, when no cluster file is given (default: every node seen in
    /// the logs). A node that logged nothing still counts against the fractions.
    #[arg(long, value_name = "N")]
    nodes: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also write the HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// Arguments of `dyno cluster export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A Nomad job (HCL): one group per region.
    #[arg(
        long,
        conflicts_with_all = ["kubernetes", "chaos_mesh"],
        required_unless_present_any = ["kubernetes", "chaos_mesh"]
    )]
    nomad: bool,
    /// Kubernetes manifests (YAML): a StatefulSet per region, a headless Service, the
    /// topology in a ConfigMap.
    #[arg(long, conflicts_with = "chaos_mesh")]
    kubernetes: bool,
    /// The cluster file's fault schedule as a Chaos Mesh Workflow (YAML) for the pods of
    /// `--kubernetes`.
    #[arg(long)]
    chaos_mesh: bool,
    /// The cluster file.
    file: PathBuf,
    /// Container image holding the node command.
    #[arg(long, value_name = "IMAGE", required_unless_present = "chaos_mesh")]
    image: Option<String>,
    /// Write here instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The reference node only: slot 0 of the exported genesis starts this many seconds
    /// after the export (nodes started later join at the slot then current).
    #[arg(long, value_name = "SECONDS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    start_in: u64,
}

/// Runs a `dyno cluster` subcommand.
pub fn run(cmd: ClusterCommand) -> Result<ExitCode> {
    match cmd {
        ClusterCommand::Init { file, force } => init(&file, force),
        ClusterCommand::Check(a) => check(&a),
        ClusterCommand::Run(a) => run_cluster(&a),
        ClusterCommand::Report(a) => report(&a),
        ClusterCommand::Export(a) => export(&a),
    }
}

fn init(file: &Path, force: bool) -> Result<ExitCode> {
    if file.exists() && !force {
        bail!("{} exists; pass --force to replace it", file.display());
    }
    write_atomic(file, EXAMPLE.as_bytes())
        .with_context(|| format!("writing {}", file.display()))?;
    errln!(
        "wrote {}: edit it, then `dyno cluster check {}`",
        file.display(),
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn color() -> bool {
    crate::term::color_stdout()
}

fn render(t: &Table, format: Format) -> String {
    match format {
        Format::Markdown => TableFormat::Markdown.render(t),
        _ => TableFormat::Terminal { color: color() }.render(t),
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The cluster against this machine's limits (exit 2 with the arithmetic when it does not
/// fit), a node costing what the reference node's own config says of it.
fn fits(spec: &ClusterSpec) -> Result<dyno_cluster::capacity::Fit> {
    let node = (spec.command == dyno_cluster::NodeCommand::Reference && !spec.nodes.is_empty())
        .then(|| toml::from_str(&dyno_cluster::launch::node_config(spec, 0)).ok())
        .flatten()
        .map(
            |c: dyno_node::config::NodeConfig| dyno_cluster::capacity::NodeCost {
                threads: c.threads(),
                rss_bytes: c.rss_estimate_bytes(),
            },
        );
    Ok(dyno_cluster::capacity::refuse_unless_it_fits(spec, node)?)
}

fn check(a: &CheckArgs) -> Result<ExitCode> {
    let spec = ClusterSpec::load(&a.file)?;
    let spec = a.release.overrides()?.apply(spec)?;
    // Before the topology's figures, which take long for thousands of nodes.
    let fit = fits(&spec).with_context(|| a.file.display().to_string())?;
    if a.ports {
        spec.check_ports()
            .with_context(|| format!("{}: ports", a.file.display()))?;
    }
    let extra = a.inject_cross_ms.unwrap_or(0.0);
    if !(extra.is_finite() && extra >= 0.0) {
        bail!("--inject-cross-ms {extra}: must be a non-negative number of milliseconds");
    }
    let mut checked = session::check(&spec, extra, cores());
    checked.fit = Some(fit);
    if a.format == Format::Json {
        // Through a JSON value, whose maps are sorted: the key order dyno always wrote.
        let json = serde_json::to_value(&checked)?;
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", checked.headline(&spec, &a.file))?;
    if let Some(fit) = &checked.fit {
        outln!("fits this machine: {}", fit.checked.join("; "))?;
    }
    for w in &checked.warnings {
        errln!("warning: {w}");
    }
    let t = checked.prediction_table(&spec, a.inject_cross_ms.map(|_| extra));
    out!("{}", render(&t, a.format))?;
    for f in &spec.faults {
        outln!("fault[{}]: {}", f.index, f.describe(&spec))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn report(a: &ReportArgs) -> Result<ExitCode> {
    let spec = a.cluster.as_deref().map(ClusterSpec::load).transpose()?;
    let stored = match a.logs.as_slice() {
        [only] if !only.exists() => only
            .to_str()
            .and_then(|t| t.parse::<dyno_store::RunId>().ok()),
        _ => None,
    };
    let logs = match stored {
        Some(id) => ReportLogs::of_stored(&stored_run(a, id)?, spec)?,
        None => ReportLogs {
            spec,
            paths: a.logs.clone(),
            slots: None,
            window_ns: None,
        },
    };
    let analysed = logs.analyse(a.nodes)?;
    print_report(
        &analysed.analysis,
        logs.spec.as_ref(),
        &[],
        analysed.faults,
        None,
        a.format,
        a.html.as_deref(),
    )
}

/// A stored run, from the results store `--db` names.
fn stored_run(a: &ReportArgs, id: dyno_store::RunId) -> Result<dyno_store::StoredRun> {
    let path = a.db.path();
    let store = dyno_store::Store::open_read_only(&path)
        .map_err(crate::db::classify)
        .with_context(|| format!("results store {}", path.display()))?;
    store
        .run(id)
        .map_err(crate::db::classify)
        .with_context(|| format!("run {id} in {}", path.display()))
}

fn print_report(
    analysis: &propagation::Analysis,
    spec: Option<&ClusterSpec>,
    resources: &[dyno_cluster::resources::NodeResources],
    faults: Option<dyno_cluster::fault_analysis::FaultReport>,
    startup: Option<&dyno_cluster::launch::Startup>,
    format: Format,
    html: Option<&Path>,
) -> Result<ExitCode> {
    let report = ClusterReport::new(analysis, spec)
        .with_resources(resources)
        .with_faults(faults)
        .with_startup(startup);
    if let Some(path) = html {
        write_atomic(path, html_report(&report, spec).as_bytes())
            .with_context(|| format!("--html {}", path.display()))?;
        errln!("HTML report: {}", path.display());
    }
    if format == Format::Json {
        outln!("{}", report.to_json())?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} blocks over {} nodes{}",
        report.blocks,
        report.node_count,
        match report.blocks_without_slot_start {
            0 => String::new(),
            n => format!(" ({n} forged blocks left out: no slot start or genesis in any log)"),
        }
    )?;
    for line in headline(&report) {
        outln!("{line}")?;
    }
    for t in tables(&report) {
        out!("{}", render(&t, format))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's progress on stderr: every line on a terminal, else the milestones only.
fn progress_lines(terminal: bool) -> impl FnMut(Progress) {
    move |p: Progress| match p {
        Progress::Prepared { dir } => errln!("run directory {}", dir.display()),
        Progress::NodeReady { ready, of } if terminal || ready == of => {
            errln!("nodes ready: {ready}/{of}")
        }
        Progress::LoadStarted => errln!("load started"),
        Progress::Running {
            slot,
            left_s,
            adopted_everywhere,
        } if terminal => {
            errout!("\rslot {slot}, {adopted_everywhere} blocks adopted by every node, {left_s} s left   ")
        }
        Progress::Fault { line } if terminal => errln!("\rfault: {line}{:30}", ""),
        Progress::Fault { line } => errln!("fault: {line}"),
        Progress::Stopping => errln!("\nstopping"),
        _ => {}
    }
}

fn run_cluster(a: &RunArgs) -> Result<ExitCode> {
    let debug_build = crate::build_info::guard()?;
    crate::term::check_output("--html", a.html.as_deref())?;
    crate::term::check_output("--compared", a.compare.compared.as_deref())?;
    let spec = checked_spec(a)?;
    let dyno = match &a.compare.node_dyno {
        Some(d) => d.clone(),
        None => std::env::current_exe().context("locating the dyno executable")?,
    };
    let launch = Launch {
        dyno,
        dir: session::run_dir(&spec, a.dir.as_deref()),
    };
    let mut shown = progress_lines(std::io::stderr().is_terminal());
    let mut store = crate::db::open_for_writing(&a.store)?;
    if let Some(listen) = a.serve {
        crate::serve::start_beside(listen, &a.store.db, session::watch_urls(&spec))?;
    }
    let who = session::Provenance {
        cluster_file: a.file.clone(),
        command_line: std::env::args().collect(),
        tool_version: crate::build_info::describe(),
        build: crate::build_info::json(),
        debug_build,
    };
    // Stored as it goes: begun now (a run killed outright reads as incomplete), its
    // window as soon as it is known, its figures at the end.
    let stored = match store.as_mut() {
        Some(s) => Some(session::begin(s, &spec, &launch.dir, &who)?),
        None => None,
    };
    let ran = {
        let mut progress = |p: Progress| {
            if let (Progress::Window { slots, window_ns }, Some(s), Some(id)) =
                (&p, store.as_mut(), stored)
            {
                let window = (slots, window_ns);
                if let Err(e) = session::checkpoint_window(s, id, &spec, &launch.dir, &who, window)
                {
                    errln!("warning: {:#}", anyhow::Error::new(e));
                }
            }
            shown(p);
        };
        session::run(&spec, &launch, crate::interrupt::stop_flag(), &mut progress)
    };
    let measured = match ran {
        Ok(m) => m,
        Err(e) => {
            if let (Some(s), Some(id)) = (store.as_mut(), stored) {
                let _ = session::fail(s, id);
            }
            return Err(e).with_context(|| format!("cluster {}", a.file.display()));
        }
    };
    if let Some(cpu) = measured.own_cpu_s {
        errln!(
            "dyno itself (launcher, sampler, analysis): {cpu:.2} s of CPU in {:.0} s = {:.2}% of one core",
            measured.wall_s,
            100.0 * cpu / measured.wall_s.max(1e-9)
        );
    }
    if let (Some(store), Some(id)) = (store.as_mut(), stored) {
        session::finish(store, id, &spec, &measured, &who)?;
        errln!("stored as run {id}: `dyno cluster report {id}`");
    }
    report_run(a, &spec, &measured, &launch)
}

/// The cluster file of `a` with the command line's overrides, refused before anything
/// starts (no run directory, no node) when it cannot fit the machine, its warnings said.
fn checked_spec(a: &RunArgs) -> Result<ClusterSpec> {
    let spec = ClusterSpec::load(&a.file)?;
    let c = &a.compare;
    let overrides = Overrides {
        rate_tps: c.rate_tps,
        warmup_s: c.warmup_s,
        duration_s: c.duration_s,
        ..a.release.overrides()?
    };
    let spec = overrides.apply(spec)?;
    fits(&spec).with_context(|| a.file.display().to_string())?;
    for w in spec.warnings(cores()) {
        errln!("warning: {w}");
    }
    Ok(spec)
}

/// What a finished cluster run leaves: the compared file, its warnings, the report and
/// the exit code (an incomplete run is an error naming its problems).
fn report_run(
    a: &RunArgs,
    spec: &ClusterSpec,
    measured: &session::MeasuredRun,
    launch: &Launch,
) -> Result<ExitCode> {
    let outcome = &measured.outcome;
    if let Some(path) = &a.compare.compared {
        let compared = dyno_cluster::compared::of(spec, outcome, &launch.dyno);
        write_atomic(path, compared.to_json().as_bytes())
            .with_context(|| format!("--compared {}", path.display()))?;
    }
    for w in measured.warnings(cores()) {
        errln!("warning: {w}");
    }
    let code = print_report(
        &outcome.analysis,
        Some(spec),
        &outcome.resources,
        outcome.fault_report.clone(),
        Some(&outcome.startup),
        a.format,
        a.html.as_deref(),
    )?;
    errln!("node logs and outputs kept in {}", outcome.dir.display());
    if !outcome.complete {
        for p in &outcome.problems {
            errln!("error: {p}");
        }
        if crate::interrupt::stop_flag().load(std::sync::atomic::Ordering::SeqCst) {
            return Err(crate::cli_error::CliError::Interrupted(format!(
                "cluster run; what was measured is stored and its logs are in {}",
                outcome.dir.display()
            ))
            .into());
        }
        bail!("run incomplete: {}", outcome.problems.join("; "));
    }
    Ok(code)
}

fn export(a: &ExportArgs) -> Result<ExitCode> {
    let spec = ClusterSpec::load(&a.file)?;
    let image = a.image.as_deref().unwrap_or_default();
    let text = if a.chaos_mesh {
        match dyno_cluster::export::chaos_mesh(&spec) {
            Some(text) => text,
            None => bail!(
                "{}: no fault of the schedule can be rendered for Chaos Mesh (it has none, or only pause, resume and upgrade)",
                a.file.display()
            ),
        }
    } else {
        manifests(&spec, a, image)?
    };
    match &a.output {
        Some(path) => crate::term::write_file("--output", path, &text)?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The Nomad job or the Kubernetes manifests.
fn manifests(spec: &ClusterSpec, a: &ExportArgs, image: &str) -> Result<String> {
    let genesis = match spec.command {
        dyno_cluster::NodeCommand::Reference => Some(export_genesis(spec, a.start_in)?),
        dyno_cluster::NodeCommand::Argv(_) => None,
    };
    let genesis = genesis
        .as_deref()
        .map(dyno_cluster::export::ReferenceGenesis);
    Ok(if a.nomad {
        dyno_cluster::export::nomad(spec, image, genesis)?
    } else {
        dyno_cluster::export::kubernetes(spec, image, genesis)?
    })
}

/// The reference node's genesis for an export, written as `dyno node genesis` writes it
/// (`cluster run` runs that command): network named after the cluster, the cluster's slot
/// length, producers with their stake and relays with none, slot 0 `start_in` seconds
/// from now. Checked by parsing it back, as the nodes will.
fn export_genesis(spec: &ClusterSpec, start_in: u64) -> Result<String> {
    use dyno_node::genesis::{GenesisFile, Validator};
    let validators = spec
        .nodes
        .iter()
        .map(|n| Validator {
            id: n.name.clone(),
            stake: match n.role {
                dyno_cluster::Role::Producer { stake } => stake,
                dyno_cluster::Role::Relay => 0,
            },
        })
        .collect();
    let now_ms = dyno_node::log::now_ns() / 1_000_000;
    let g = GenesisFile {
        network: spec.name.clone(),
        seed: 1,
        accounts: 1024,
        balance: 1_000_000_000_000,
        slot_ms: spec.slot_ms,
        genesis_time_ms: now_ms + start_in * 1000,
        max_block_txs: dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
        validators,
    };
    let text = g.to_toml();
    GenesisFile::parse(&spec.path, &text)
        .with_context(|| format!("{}: the exported genesis", spec.path.display()))?;
    Ok(text)
}
