//! `dyno cluster`: write, check, analyse and export cluster files.
//!
//! The work lives in dyno-cluster; this module parses arguments, reads files and prints.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use dyno_cluster::launch::{Launch, Progress};
use dyno_cluster::render::{headline, html_report, tables, ClusterReport};
use dyno_cluster::shape::predict;
use dyno_cluster::{events, propagation, ClusterSpec, Role, EXAMPLE};
use dyno_report::{write_atomic, Align, Table, TableFormat};
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
}

/// Arguments of `dyno cluster report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A stored run's id (its node logs are read from its run directory), or node logs:
    /// files, or directories whose *.log and *.jsonl files are read.
    #[arg(required = true, value_name = "RUN|LOGS")]
    logs: Vec<PathBuf>,
    /// Results store to read a run from (default: DYNO_DB, else the user's data directory).
    #[arg(long, value_name = "PATH|URL", env = "DYNO_DB")]
    db: Option<PathBuf>,
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
    eprintln!(
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

fn check(a: &CheckArgs) -> Result<ExitCode> {
    let spec = ClusterSpec::load(&a.file)?;
    if a.ports {
        spec.check_ports()
            .with_context(|| format!("{}: ports", a.file.display()))?;
    }
    let extra = a.inject_cross_ms.unwrap_or(0.0);
    if !(extra.is_finite() && extra >= 0.0) {
        bail!("--inject-cross-ms {extra}: must be a non-negative number of milliseconds");
    }
    let degrees: Vec<usize> = (0..spec.nodes.len())
        .map(|i| spec.topology.degree(i))
        .collect();
    let (min, max) = (
        degrees.iter().min().copied().unwrap_or(0),
        degrees.iter().max().copied().unwrap_or(0),
    );
    let predictions: Vec<_> = spec
        .producers()
        .map(|p| (p, predict(&spec, p, 0.0), predict(&spec, p, extra)))
        .collect();
    if a.format == Format::Json {
        let json = serde_json::json!({
            "schema": "dyno.cluster.check/1",
            "cluster": spec.name,
            "nodes": spec.nodes,
            "regions": spec.regions,
            "links": spec.topology.edges(),
            "diameter_hops": spec.topology.diameter(),
            "warnings": spec.warnings(cores()),
            "inject_cross_ms": extra,
            "predicted": predictions.iter().map(|(p, base, delayed)| serde_json::json!({
                "producer": spec.nodes[*p].name,
                "full_adoption_s": base.full_adoption_ms() / 1e3,
                "full_adoption_delayed_s": delayed.full_adoption_ms() / 1e3,
                "hops": base.hops,
                "cross_region_hops": base.cross_region_hops,
            })).collect::<Vec<_>>(),
            "faults": spec.faults,
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    let producers = spec.producers().count();
    println!(
        "{}: {} nodes ({producers} producers, {} relays) over {} regions; {} topology: {} links, \
         {min}..{max} peers per node, diameter {} hops; slots of {} ms",
        a.file.display(),
        spec.nodes.len(),
        spec.nodes.len() - producers,
        spec.regions.len(),
        spec.topology_kind.name(),
        spec.topology.edges().len(),
        spec.topology.diameter().unwrap_or(0),
        spec.slot_ms,
    );
    for w in spec.warnings(cores()) {
        eprintln!("warning: {w}");
    }
    let mut t = Table::new(format!(
        "Predicted propagation from each producer (a hop: header, request and body, 3 one-way latencies, + {} ms)",
        spec.hop_processing_ms
    ))
    .column("producer", Align::Left)
    .column("region", Align::Left)
    .column("stake", Align::Right)
    .column("50% after", Align::Right)
    .column("80% after", Align::Right)
    .column("100% after", Align::Right)
    .column("hops", Align::Right)
    .column("cross-region", Align::Right);
    if a.inject_cross_ms.is_some() {
        t = t
            .column(format!("100% +{extra} ms/crossing"), Align::Right)
            .column("change", Align::Right);
    }
    for (p, base, delayed) in &predictions {
        let node = &spec.nodes[*p];
        let stake = match node.role {
            Role::Producer { stake } => stake.to_string(),
            Role::Relay => "-".to_string(),
        };
        let mut row = vec![
            node.name.clone(),
            spec.regions[node.region].name.clone(),
            stake,
            format!("{:.1} ms", base.adoption_ms(0.5)),
            format!("{:.1} ms", base.adoption_ms(0.8)),
            format!("{:.1} ms", base.full_adoption_ms()),
            base.hops.to_string(),
            base.cross_region_hops.to_string(),
        ];
        if a.inject_cross_ms.is_some() {
            row.push(format!("{:.1} ms", delayed.full_adoption_ms()));
            row.push(format!(
                "+{:.1} ms",
                delayed.full_adoption_ms() - base.full_adoption_ms()
            ));
        }
        t.push_row(row);
    }
    print!("{}", render(&t, a.format));
    for f in &spec.faults {
        println!("fault[{}]: {}", f.index, f.describe(&spec));
    }
    Ok(ExitCode::SUCCESS)
}

/// The log files named on the command line, directories expanded (sorted, so output
/// does not depend on directory order).
fn log_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "log" || x == "jsonl"))
                .collect();
            if found.is_empty() {
                bail!(
                    "{}: no *.log or *.jsonl node logs in this directory",
                    p.display()
                );
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// A stored `cluster run`: its run directory and cluster file, from the run's settings.
/// What a stored run's report needs: its run directory, cluster file, slots, and (for
/// extracted logs) its window in Unix ns.
struct StoredRun {
    dir: PathBuf,
    file: PathBuf,
    slots: std::ops::Range<u64>,
    window_ns: Option<std::ops::Range<u64>>,
}

fn stored_run(a: &ReportArgs, id: dyno_store::RunId) -> Result<StoredRun> {
    let path = crate::db::path(&a.db);
    let store = dyno_store::Store::open_read_only(&path)
        .map_err(crate::db::classify)
        .with_context(|| format!("results store {}", path.display()))?;
    let run = store
        .run(id)
        .map_err(crate::db::classify)
        .with_context(|| format!("run {id} in {}", path.display()))?;
    stored_run_of(&run)
}

/// Where a stored `cluster run` left its node logs, and which slots and window it analysed.
fn stored_run_of(run: &dyno_store::StoredRun) -> Result<StoredRun> {
    let id = run.id;
    if run.info.command != "cluster run" {
        bail!(
            "run {id} is a `{}` run, not a `cluster run`",
            run.info.command
        );
    }
    let text = |key: &str| {
        run.info.settings[key]
            .as_str()
            .map(PathBuf::from)
            .with_context(|| format!("run {id}: no `{key}` in its settings"))
    };
    let dir = text("run_dir")?;
    if !dir.is_dir() {
        bail!(
            "run {id}: its node logs were in {}, which is gone; its samples remain: `dyno results show {id}`",
            dir.display()
        );
    }
    let slot = |i: usize| run.info.settings["slots"][i].as_u64();
    let (Some(first), Some(end)) = (slot(0), slot(1)) else {
        bail!("run {id}: no `slots` in its settings");
    };
    let window = |i: usize| run.info.settings["window_ns"][i].as_u64();
    let window_ns = window(0).zip(window(1)).map(|(a, b)| a..b);
    Ok(StoredRun {
        dir,
        file: text("cluster_file")?,
        slots: first..end,
        window_ns,
    })
}

/// Events read from the nodes' own output by the cluster file's `[extract]` rules: for
/// a directory, each node's `<name>.out`; a file is the node its stem names.
fn extracted_events(
    spec: &ClusterSpec,
    rules: &dyno_cluster::extract::Extractors,
    paths: &[PathBuf],
) -> Result<Vec<dyno_cluster::events::Event>> {
    if !rules.timed_in_line() {
        bail!(
            "{}: an [extract] rule has no (?P<ts>...) group, so its times were taken as the \
             lines were read; only `dyno cluster run` reports on such a cluster",
            spec.path.display()
        );
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
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading node output {}", file.display()))?;
        all.extend(rules.parse_log(&file, &node, &text)?);
    }
    Ok(all)
}

/// The HTML report `dyno cluster report RUN --html` writes for a stored `cluster run`, for
/// `dyno serve`: rebuilt from the node logs its run directory still holds.
pub fn stored_html(run: &dyno_store::StoredRun) -> Result<String> {
    let stored = stored_run_of(run)?;
    let spec = ClusterSpec::load(&stored.file)
        .with_context(|| format!("run {}'s cluster file", run.id))?;
    let expected = spec.nodes.len();
    let analysis = match spec.extract.as_ref() {
        Some(rules) => {
            let mut all = extracted_events(&spec, rules, std::slice::from_ref(&stored.dir))?;
            if let Some(window) = &stored.window_ns {
                all = dyno_cluster::launch::in_window(all, window);
            }
            propagation::analyse_extracted(&all, expected, &rules.unavailable())
        }
        None => {
            let mut all = Vec::new();
            for file in log_files(std::slice::from_ref(&stored.dir))? {
                all.extend(events::read_log(&file)?);
            }
            propagation::analyse(
                &dyno_cluster::launch::in_slots(all, &stored.slots),
                expected,
            )
        }
    };
    let report = ClusterReport::new(&analysis, Some(&spec));
    Ok(html_report(&report, Some(&spec)))
}

fn report(a: &ReportArgs) -> Result<ExitCode> {
    let mut spec = a.cluster.as_deref().map(ClusterSpec::load).transpose()?;
    let mut logs = a.logs.clone();
    let mut slots = None;
    let mut window_ns = None;
    if let [only] = a.logs.as_slice() {
        let id = only
            .to_str()
            .and_then(|t| t.parse::<dyno_store::RunId>().ok());
        if let (Some(id), false) = (id, only.exists()) {
            let run = stored_run(a, id)?;
            slots = Some(run.slots);
            window_ns = run.window_ns;
            if spec.is_none() {
                spec = Some(
                    ClusterSpec::load(&run.file)
                        .with_context(|| format!("run {id}'s cluster file"))?,
                );
            }
            logs = vec![run.dir];
        }
    }
    let expected = spec
        .as_ref()
        .map(|s| s.nodes.len())
        .or(a.nodes)
        .unwrap_or(0);
    if let Some((spec, rules)) = spec.as_ref().and_then(|s| Some((s, s.extract.as_ref()?))) {
        let mut all = extracted_events(spec, rules, &logs)?;
        if let Some(window) = &window_ns {
            all = dyno_cluster::launch::in_window(all, window);
        }
        if all.is_empty() {
            bail!("no line of the node outputs given matches an [extract] rule");
        }
        let analysis = propagation::analyse_extracted(&all, expected, &rules.unavailable());
        return print_report(
            &analysis,
            Some(spec),
            &[],
            None,
            a.format,
            a.html.as_deref(),
        );
    }
    let mut all = Vec::new();
    for file in log_files(&logs)? {
        all.extend(events::read_log(&file)?);
    }
    if let Some(slots) = &slots {
        all = dyno_cluster::launch::in_slots(all, slots);
    }
    if all.is_empty() {
        bail!("no propagation events (\"kind\":\"event\" lines) in the logs given");
    }
    let analysis = propagation::analyse(&all, expected);
    // A stored run's directory keeps its fault records: the report shows them again.
    let faults = match (&spec, &slots, logs.as_slice()) {
        (Some(spec), Some(slots), [dir]) if dir.is_dir() => {
            dyno_cluster::fault_analysis::of_run_dir(spec, dir, &analysis, slots.end)?
        }
        _ => None,
    };
    print_report(
        &analysis,
        spec.as_ref(),
        &[],
        faults,
        a.format,
        a.html.as_deref(),
    )
}

fn print_report(
    analysis: &propagation::Analysis,
    spec: Option<&ClusterSpec>,
    resources: &[dyno_cluster::resources::NodeResources],
    faults: Option<dyno_cluster::fault_analysis::FaultReport>,
    format: Format,
    html: Option<&Path>,
) -> Result<ExitCode> {
    let report = ClusterReport::new(analysis, spec)
        .with_resources(resources)
        .with_faults(faults);
    if let Some(path) = html {
        write_atomic(path, html_report(&report, spec).as_bytes())
            .with_context(|| format!("--html {}", path.display()))?;
        eprintln!("HTML report: {}", path.display());
    }
    if format == Format::Json {
        println!("{}", report.to_json());
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} blocks over {} nodes{}",
        report.blocks,
        report.node_count,
        match report.blocks_without_slot_start {
            0 => String::new(),
            n => format!(" ({n} forged blocks left out: no slot start or genesis in any log)"),
        }
    );
    for line in headline(&report) {
        println!("{line}");
    }
    for t in tables(&report) {
        print!("{}", render(&t, format));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_cluster(a: &RunArgs) -> Result<ExitCode> {
    let debug_build = crate::build_info::guard()?;
    let spec = ClusterSpec::load(&a.file)?;
    for w in spec.warnings(cores()) {
        eprintln!("warning: {w}");
    }
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            PathBuf::from("cluster-runs").join(format!("{}-{now}", spec.name))
        }
    };
    let launch = Launch {
        dyno: std::env::current_exe().context("locating the dyno executable")?,
        dir,
    };
    let terminal = std::io::stderr().is_terminal();
    let mut progress = |p: Progress| match p {
        Progress::Prepared { dir } => eprintln!("run directory {}", dir.display()),
        Progress::NodeReady { ready, of } if terminal || ready == of => {
            eprintln!("nodes ready: {ready}/{of}")
        }
        Progress::LoadStarted => eprintln!("load started"),
        Progress::Running {
            slot,
            left_s,
            adopted_everywhere,
        } if terminal => {
            eprint!("\rslot {slot}, {adopted_everywhere} blocks adopted by every node, {left_s} s left   ")
        }
        Progress::Fault { line } if terminal => eprintln!("\rfault: {line}{:30}", ""),
        Progress::Fault { line } => eprintln!("fault: {line}"),
        Progress::Stopping => eprintln!("\nstopping"),
        _ => {}
    };
    let mut store = crate::db::open_for_writing(&a.store)?;
    if let Some(listen) = a.serve {
        let watch = (0..spec.nodes.len())
            .map(|id| {
                let port = spec.ports(id).2;
                format!("{}=http://127.0.0.1:{port}/metrics", spec.nodes[id].name)
            })
            .collect();
        crate::serve::start_beside(listen, &a.store.db, watch)?;
    }
    // dyno's own cost (launching, the /proc sampler over every node, reading logs and
    // analysing): what the cluster's figures pay for being measured on the same cores.
    let (cpu_before, wall) = (
        dyno_proc::procfs::own_cpu_seconds(),
        std::time::Instant::now(),
    );
    let outcome = launch
        .run(&spec, crate::interrupt::stop_flag(), &mut progress)
        .with_context(|| format!("cluster {}", a.file.display()))?;
    let own = OwnCost {
        cpu_s: cpu_before
            .zip(dyno_proc::procfs::own_cpu_seconds())
            .map(|(a, b)| b - a),
        wall_s: wall.elapsed().as_secs_f64(),
    };
    if let Some(cpu) = own.cpu_s {
        eprintln!(
            "dyno itself (launcher, sampler, analysis): {cpu:.2} s of CPU in {:.0} s = {:.2}% of one core",
            own.wall_s,
            100.0 * cpu / own.wall_s.max(1e-9)
        );
    }
    if let Some(store) = store.as_mut() {
        let id = save(store, a, &spec, &outcome, &own, debug_build)?;
        eprintln!("stored as run {id}: `dyno cluster report {id}`");
    }
    let saturation = dyno_cluster::resources::saturation_warning(&outcome.resources, cores());
    for w in outcome.warnings.iter().chain(&saturation) {
        eprintln!("warning: {w}");
    }
    let code = print_report(
        &outcome.analysis,
        Some(&spec),
        &outcome.resources,
        outcome.fault_report.clone(),
        a.format,
        a.html.as_deref(),
    )?;
    eprintln!("node logs and outputs kept in {}", outcome.dir.display());
    if !outcome.complete {
        for p in &outcome.problems {
            eprintln!("error: {p}");
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
        Some(path) => {
            write_atomic(path, text.as_bytes())
                .with_context(|| format!("--output {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
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

/// Stores the run: one metric per propagation figure (seconds, lower is better), one
/// sample per block (or block and peer), and in the settings what `report RUN` needs.
/// CPU seconds the dyno process itself used during a run, and the run's wall time.
struct OwnCost {
    cpu_s: Option<f64>,
    wall_s: f64,
}

fn save(
    store: &mut dyno_store::Store,
    a: &RunArgs,
    spec: &ClusterSpec,
    outcome: &dyno_cluster::launch::RunOutcome,
    own: &OwnCost,
    debug_build: bool,
) -> Result<dyno_store::RunId> {
    use dyno_model::{Direction, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
    let report = ClusterReport::new(&outcome.analysis, Some(spec));
    let command = match &spec.command {
        dyno_cluster::NodeCommand::Reference => "dyno node run".to_string(),
        dyno_cluster::NodeCommand::Argv(argv) => argv.join(" "),
    };
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let info = RunInfo {
        command: "cluster run".into(),
        subject: Subject::new(SubjectKind::Release, spec.name.clone())
            .with("node_command", command)
            .with("nodes", spec.nodes.len().to_string())
            .with("topology", spec.topology_kind.name().to_string()),
        host: dyno_proc::host::probe(&outcome.dir),
        started_at: dyno_model::now_unix(),
        command_line: std::env::args().collect(),
        tool_version: crate::build_info::describe(),
        settings: serde_json::json!({
            "cluster_file": absolute(&a.file).display().to_string(),
            "run_dir": absolute(&outcome.dir).display().to_string(),
            "slot_ms": spec.slot_ms,
            "duration_s": spec.duration_s,
            "warmup_s": spec.warmup_s,
            "rate_tps": spec.workload.rate_tps,
            "blocks": report.blocks,
            "slots": [outcome.slots.start, outcome.slots.end],
            "window_ns": [outcome.window_ns.start, outcome.window_ns.end],
            "missing": report.metrics.iter().map(|m| (m.key.clone(), m.missing)).collect::<std::collections::BTreeMap<_, _>>(),
            "problems": outcome.problems,
            "debug_build": debug_build,
            "build": crate::build_info::json(),
            "dyno_cpu_s": own.cpu_s,
            "dyno_wall_s": own.wall_s,
        }),
    };
    let mut metrics: Vec<Metric> = report
        .metrics
        .iter()
        .map(|m| Metric::new(m.key.clone(), Unit::Seconds, Direction::LowerIsBetter))
        .collect();
    metrics.push(Metric::new(
        "node.cpu_percent",
        Unit::Percent,
        Direction::LowerIsBetter,
    ));
    metrics.push(Metric::new(
        "node.rss_bytes",
        Unit::Bytes,
        Direction::LowerIsBetter,
    ));
    let id = store
        .begin_run(&info, &metrics)
        .context("recording the run in the results store")?;
    let samples: Vec<Sample> = report
        .metrics
        .iter()
        .flat_map(|m| {
            m.values_s.iter().enumerate().map(|(i, v)| Sample {
                metric: m.key.clone(),
                repetition: i as u32,
                value: *v,
            })
        })
        .collect();
    store
        .add_samples(id, &samples)
        .context("storing the samples")?;
    // Per node and slot; the node is a label, the repetition is the slot of the window.
    let mut cost = Vec::new();
    for r in &outcome.resources {
        let label = serde_json::json!({ "node": r.node });
        for (i, (cpu, rss)) in r.cpu_percent.iter().zip(&r.rss_bytes).enumerate() {
            for (metric, value) in [("node.cpu_percent", *cpu), ("node.rss_bytes", *rss)] {
                let sample = Sample {
                    metric: metric.to_string(),
                    repetition: i as u32,
                    value,
                };
                cost.push((sample, label.clone()));
            }
        }
    }
    store
        .add_labeled_samples(id, &cost)
        .context("storing the nodes' CPU and memory")?;
    let status = if outcome.complete {
        RunStatus::Complete
    } else {
        RunStatus::Incomplete
    };
    store.finish_run(id, status).context("finishing the run")?;
    Ok(id)
}
