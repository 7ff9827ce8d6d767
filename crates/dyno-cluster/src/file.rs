//! The cluster file: TOML parsed into typed structs and validated before anything starts.
//!
//! Every error names the file, the line and column of the offending value, and its key.
//! The one check that touches the machine, free ports, is separate
//! ([`ClusterSpec::check_ports`]) because an export renders the file for other machines.

use crate::error::ClusterError;
use crate::topology::{region_members, Topology, TopologyKind};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Ports each node takes, from `base_port + 3 * id`: peer listener, transaction ingress,
/// metrics and `/ready`.
pub const PORTS_PER_NODE: u16 = 3;

/// Placeholders a node command may use; each is replaced per node.
pub const PLACEHOLDERS: [&str; 8] = [
    "id", "listen", "ingress", "metrics", "peers", "log", "config", "genesis",
];

/// How each node is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeCommand {
    /// `dyno node` with a generated per-node config.
    Reference,
    /// Any command; its arguments may hold [`PLACEHOLDERS`] in braces.
    Argv(Vec<String>),
}

/// What a node does in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Role {
    /// Forges blocks in proportion to its stake.
    Producer {
        /// Stake (relative weight in leader election).
        stake: u64,
    },
    /// Relays blocks only.
    Relay,
}

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodeSpec {
    /// Index in `0..count`.
    pub id: usize,
    /// Stable name used in logs and manifests (`n7`).
    pub name: String,
    /// Index into [`ClusterSpec::regions`].
    pub region: usize,
    /// Producer or relay.
    #[serde(flatten)]
    pub role: Role,
}

/// One emulated region.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Region {
    /// Name, e.g. `eu-central-1`.
    pub name: String,
    /// One-way latency in milliseconds from this region to each region, by region index.
    pub latency_ms: Vec<f64>,
}

/// The load `dyno load` puts on the cluster.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Workload {
    /// Transactions per second over the whole cluster.
    pub rate_tps: f64,
    /// The reference node's workload kind.
    pub kind: WorkloadKind,
    /// Node ids the load submits to.
    pub targets: Vec<usize>,
    /// A load generator of the node's own kind instead of `dyno load`: argv with
    /// [`LOAD_PLACEHOLDERS`], started once every node is ready.
    pub command: Option<Vec<String>>,
}

/// Placeholders a workload command may use: the first target's ingress address, every
/// target's (comma-separated), the rate and the window in seconds.
pub const LOAD_PLACEHOLDERS: [&str; 4] = ["target", "targets", "rate", "duration"];

/// Transaction mix, as `dyno pipeline bench` and `dyno load` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Plain transfers.
    Value,
    /// Transfers that run a script.
    Script,
}

/// A validated cluster file.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// Where it was read from.
    pub path: PathBuf,
    /// Cluster name (run names, manifest names).
    pub name: String,
    /// Slot length in milliseconds.
    pub slot_ms: u64,
    /// Measured window in seconds, after the warm-up.
    pub duration_s: u64,
    /// Warm-up in seconds, not analysed.
    pub warmup_s: u64,
    /// First port; node `i` takes `base_port + 3 i ..= base_port + 3 i + 2`.
    pub base_port: u16,
    /// The node command.
    pub command: NodeCommand,
    /// Threads each node keeps busy, as `node.threads` declares them (for the cores
    /// warning); `None` when the file does not say. A reference node's threads sleep
    /// between slots, so their number says nothing about load: the run measures it.
    pub threads_per_node: Option<u32>,
    /// How the reference node forges (`"tiles"` or `"sequential"`, written into each
    /// node's config): `"sequential"` unless the file says `"tiles"`, so a cluster's
    /// node is lean (its leader forges on the node's own thread); `None` for a node
    /// command.
    pub forge: Option<String>,
    /// The reference node's verify threads (`node.verify_tiles`, written into each
    /// node's config); `None`: the node's default, one.
    pub verify_tiles: Option<usize>,
    /// The reference node's replay threads (`node.replay_threads`, written into each
    /// node's config); `None`: one, not the node's own default of one per core, so a
    /// cluster's node stays lean whatever the machine.
    pub replay_threads: Option<usize>,
    /// When the reference node's leaders cut their blocks (`"whole_slot"` or
    /// `"slot_start"`, written into each node's config); `None`: the node's default (the
    /// whole slot).
    pub forge_at: Option<String>,
    /// How long the launcher waits for a node's `/ready`, seconds.
    pub ready_timeout_s: u64,
    /// Every node, by id.
    pub nodes: Vec<NodeSpec>,
    /// Every region, in file order.
    pub regions: Vec<Region>,
    /// Bandwidth of every link in megabits per second.
    pub bandwidth_mbit: f64,
    /// Which generator built [`ClusterSpec::topology`].
    pub topology_kind: TopologyKind,
    /// The seed of the generator, if any.
    pub seed: Option<u64>,
    /// The peer graph.
    pub topology: Topology,
    /// Per-hop processing time in milliseconds the prediction adds to each link.
    pub hop_processing_ms: f64,
    /// The load.
    pub workload: Workload,
    /// Readiness URL of each node (placeholders filled per node); `None`: the reference
    /// node's `/ready` on its metrics port.
    pub ready_url: Option<String>,
    /// Rules that read propagation events from the nodes' own output, for a node that
    /// does not write dyno's event log.
    pub extract: Option<crate::extract::Extractors>,
    /// The fault schedule (`[[fault]]`), in file order.
    pub faults: Vec<crate::faults::Fault>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    cluster: RawCluster,
    #[serde(default)]
    node: Option<RawNode>,
    nodes: RawNodes,
    #[serde(default)]
    region: Vec<Spanned<RawRegion>>,
    links: RawLinks,
    topology: Spanned<RawTopology>,
    workload: Option<RawWorkload>,
    #[serde(default)]
    analysis: Option<RawAnalysis>,
    #[serde(default)]
    extract: Option<RawExtract>,
    #[serde(default)]
    fault: Vec<Spanned<faults_check::RawFault>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExtract {
    time_format: Option<Spanned<String>>,
    forged: Option<Spanned<String>>,
    received: Option<Spanned<String>>,
    fetched: Option<Spanned<String>>,
    adopted: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Spanned<String>,
    slot_ms: Spanned<u64>,
    duration_s: Spanned<u64>,
    #[serde(default)]
    warmup_s: u64,
    base_port: Spanned<u16>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    command: Option<Spanned<Vec<String>>>,
    threads: Option<Spanned<u32>>,
    forge: Option<Spanned<String>>,
    forge_at: Option<Spanned<String>>,
    verify_tiles: Option<Spanned<usize>>,
    replay_threads: Option<Spanned<usize>>,
    ready_timeout_s: Option<Spanned<u64>>,
    ready_url: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodes {
    count: Spanned<usize>,
    producers: Spanned<usize>,
    stake: Option<Spanned<Vec<u64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegion {
    name: Spanned<String>,
    latency_ms: Spanned<BTreeMap<String, Spanned<f64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinks {
    bandwidth_mbit: Spanned<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    kind: Spanned<TopologyKind>,
    seed: Option<u64>,
    edges: Option<Vec<Spanned<[usize; 2]>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    rate_tps: Spanned<f64>,
    #[serde(default = "value_kind")]
    kind: WorkloadKind,
    command: Option<Spanned<Vec<String>>>,
    targets: Option<Vec<Spanned<usize>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnalysis {
    hop_processing_ms: Spanned<f64>,
}

fn value_kind() -> WorkloadKind {
    WorkloadKind::Value
}

/// Where a byte offset of `text` is: 1-based line and column (in characters).
pub use dyno_model::line_col;

/// The value written at `offset`: up to the `,` or closing bracket that ends it inside an
/// inline table or array, or to the end of its line (a trailing comment left out), so the
/// snippet underlines the whole value as toml does for its own errors.
fn value_span(text: &str, offset: usize) -> std::ops::Range<usize> {
    let start = offset.min(text.len());
    let line = text[start..].split('\n').next().unwrap_or("");
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut end = line.len();
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') if depth > 0 => depth -= 1,
            (None, ',' | ']' | '}' | '#') if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    start..start + line[..end].trim_end().len().max(1).min(line.len().max(1))
}

struct Cx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Cx<'_> {
    /// A setting of the reference node that takes one of `allowed`: refused with another
    /// node command, or with another value.
    fn reference_choice(
        &self,
        reference: bool,
        value: Option<&Spanned<String>>,
        key: &str,
        allowed: &[&str],
    ) -> Result<Option<String>, ClusterError> {
        let Some(v) = value else { return Ok(None) };
        if !reference {
            return Err(self.err(
                v.span().start,
                key,
                "is a setting of the reference node: leave it out with node.command",
            ));
        }
        if !allowed.contains(&v.get_ref().as_str()) {
            let one_of: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
            return Err(self.err(
                v.span().start,
                key,
                format!("{:?} is not one of {}", v.get_ref(), one_of.join(", ")),
            ));
        }
        Ok(Some(v.get_ref().clone()))
    }

    /// An error at the value written at byte `offset`; offset 0 with nothing written
    /// there (a table the file lacks) is placed at the key, if written, or nowhere.
    fn err(
        &self,
        offset: usize,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> ClusterError {
        let key = key.into();
        let span = (offset > 0).then(|| value_span(self.text, offset));
        ClusterError::File(Box::new(dyno_model::ConfigDiagnostic::new(
            self.path,
            self.text,
            span,
            Some(&key),
            message,
        )))
    }
}

impl ClusterSpec {
    /// Reads and validates a cluster file.
    pub fn load(path: &Path) -> Result<ClusterSpec, ClusterError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        ClusterSpec::parse(path, &text)
    }

    /// Parses and validates cluster text; `path` names the file in errors and anchors
    /// relative command paths.
    pub fn parse(path: &Path, text: &str) -> Result<ClusterSpec, ClusterError> {
        let cx = Cx { path, text };
        let raw: RawFile = dyno_model::ConfigDiagnostic::parse_toml(path, text)
            .map_err(|d| ClusterError::File(Box::new(d)))?;
        let c = &raw.cluster;
        check_cluster_table(&cx, c)?;
        let regions = regions(&cx, &raw.region)?;
        let nodes = nodes(&cx, &raw.nodes, regions.len())?;
        let count = nodes.len();
        let base = base_port(&cx, c, count)?;
        let (command, threads_per_node) = node_command(&cx, raw.node.as_ref())?;
        let tuning = reference_tuning(&cx, raw.node.as_ref(), &command)?;
        let ready_timeout_s = ready_timeout_s(&cx, raw.node.as_ref())?;
        let bandwidth_mbit = bandwidth_mbit(&cx, &raw.links)?;
        let t = raw.topology.get_ref();
        let kind = *t.kind.get_ref();
        let topology = topology(&cx, &raw.topology, count, regions.len())?;
        let hop_processing_ms = hop_processing_ms(&cx, raw.analysis.as_ref())?;
        let workload = workload(&cx, raw.workload.as_ref(), &nodes)?;
        let ready_url = ready_url(&cx, raw.node.as_ref())?;
        let extract = extract(&cx, raw.extract.as_ref())?;
        if extract.is_some() && command == NodeCommand::Reference {
            return Err(extract_for_reference(&cx, raw.extract.as_ref()));
        }
        let faults = faults(&cx, &raw, &nodes, &regions, &command)?;
        Ok(ClusterSpec {
            path: path.to_path_buf(),
            name: c.name.get_ref().clone(),
            slot_ms: *c.slot_ms.get_ref(),
            duration_s: *c.duration_s.get_ref(),
            warmup_s: c.warmup_s,
            base_port: base,
            command,
            threads_per_node,
            forge: tuning.forge,
            verify_tiles: tuning.verify_tiles,
            replay_threads: tuning.replay_threads,
            forge_at: tuning.forge_at,
            ready_timeout_s,
            nodes,
            regions,
            bandwidth_mbit,
            topology_kind: kind,
            seed: t.seed,
            topology,
            hop_processing_ms,
            workload,
            ready_url,
            extract,
            faults,
        })
    }

    /// The three ports of node `id`: (peer listener, ingress, metrics).
    pub fn ports(&self, id: usize) -> (u16, u16, u16) {
        let p = self.base_port + PORTS_PER_NODE * id as u16;
        (p, p + 1, p + 2)
    }

    /// The run's slots: warm-up plus measured window (a fault must end within them).
    pub fn run_slots(&self) -> u64 {
        (self.warmup_s + self.duration_s) * 1000 / self.slot_ms
    }

    /// Ids of the producers.
    pub fn producers(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .filter(|n| matches!(n.role, Role::Producer { .. }))
            .map(|n| n.id)
    }

    /// Checks that every port of every node can be bound on 127.0.0.1 right now.
    pub fn check_ports(&self) -> Result<(), ClusterError> {
        for node in &self.nodes {
            let (listen, ingress, metrics) = self.ports(node.id);
            for (port, role) in [
                (listen, "peer listener"),
                (ingress, "ingress"),
                (metrics, "metrics"),
            ] {
                std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|source| {
                    ClusterError::PortTaken {
                        port,
                        node: node.id,
                        role,
                        source,
                    }
                })?;
                // The ingress is QUIC: its UDP port must be free too.
                if role == "ingress" {
                    std::net::UdpSocket::bind(("127.0.0.1", port)).map_err(|source| {
                        ClusterError::PortTaken {
                            port,
                            node: node.id,
                            role,
                            source,
                        }
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Warnings that do not stop a run but make its numbers suspect: here, busy threads
    /// declared by `node.threads` outnumbering the cores. What the nodes really used is
    /// measured by the run ([`crate::resources::saturation_warning`]).
    pub fn warnings(&self, cores: usize) -> Vec<String> {
        let mut warnings = Vec::new();
        let Some(per_node) = self.threads_per_node else {
            return warnings;
        };
        let threads = self.nodes.len() * per_node as usize;
        if threads > cores {
            warnings.push(format!(
                "{} nodes x {per_node} threads = {threads} busy threads on {cores} cores: nodes \
                 will wait for a core, which shows up as slot-start lateness and slower adoption",
                self.nodes.len(),
            ));
        }
        warnings
    }
}

/// `links.bandwidth_mbit`: a positive number.
fn bandwidth_mbit(cx: &Cx, links: &RawLinks) -> Result<f64, ClusterError> {
    let bw = &links.bandwidth_mbit;
    if !(bw.get_ref().is_finite() && *bw.get_ref() > 0.0) {
        return Err(cx.err(
            bw.span().start,
            "links.bandwidth_mbit",
            "must be a positive number",
        ));
    }
    Ok(*bw.get_ref())
}

/// The `[[fault]]` schedule, checked against the run's slots, nodes and regions.
fn faults(
    cx: &Cx,
    raw: &RawFile,
    nodes: &[NodeSpec],
    regions: &[Region],
    command: &NodeCommand,
) -> Result<Vec<crate::faults::Fault>, ClusterError> {
    let c = &raw.cluster;
    let run_slots = (c.warmup_s + c.duration_s.get_ref()) * 1000 / c.slot_ms.get_ref();
    faults_check::faults(
        cx,
        &raw.fault,
        &faults_check::Context {
            nodes,
            regions,
            command,
            run_slots,
            run_said: format!(
                "slots 0..{run_slots} ({} s warm-up + {} s window at {} ms a slot)",
                c.warmup_s,
                c.duration_s.get_ref(),
                c.slot_ms.get_ref()
            ),
        },
    )
}

fn regions(cx: &Cx, raw: &[Spanned<RawRegion>]) -> Result<Vec<Region>, ClusterError> {
    if raw.is_empty() {
        return Err(cx.err(0, "region", "the file names no [[region]]"));
    }
    let names: Vec<&str> = raw
        .iter()
        .map(|r| r.get_ref().name.get_ref().as_str())
        .collect();
    let mut out = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let r = r.get_ref();
        let name = r.name.get_ref();
        if name.is_empty() || names[..i].contains(&name.as_str()) {
            return Err(cx.err(
                r.name.span().start,
                format!("region[{i}].name"),
                format!("{name:?} is empty or names an earlier region"),
            ));
        }
        let row = r.latency_ms.get_ref();
        for (to, v) in row {
            if !names.contains(&to.as_str()) {
                return Err(cx.err(
                    v.span().start,
                    format!("region[{i}].latency_ms.{to}"),
                    format!("no region is named {to:?} (regions: {})", names.join(", ")),
                ));
            }
            if !(v.get_ref().is_finite() && *v.get_ref() >= 0.0) {
                return Err(cx.err(
                    v.span().start,
                    format!("region[{i}].latency_ms.{to}"),
                    format!("latency {} ms must be a non-negative number", v.get_ref()),
                ));
            }
        }
        let mut latency_ms = Vec::new();
        for to in &names {
            let Some(v) = row.get(*to) else {
                return Err(cx.err(
                    r.latency_ms.span().start,
                    format!("region[{i}].latency_ms"),
                    format!("the latency matrix misses {name} -> {to}: every region needs a one-way latency to every region, itself included"),
                ));
            };
            latency_ms.push(*v.get_ref());
        }
        out.push(Region {
            name: name.clone(),
            latency_ms,
        });
    }
    Ok(out)
}

fn nodes(cx: &Cx, raw: &RawNodes, regions: usize) -> Result<Vec<NodeSpec>, ClusterError> {
    let count = *raw.count.get_ref();
    if count < regions {
        return Err(cx.err(
            raw.count.span().start,
            "nodes.count",
            format!("{count} nodes leave a region empty: nodes go round robin over {regions} regions, so at least {regions} are needed"),
        ));
    }
    let producers = *raw.producers.get_ref();
    if producers == 0 || producers > count {
        return Err(cx.err(
            raw.producers.span().start,
            "nodes.producers",
            format!("must be between 1 and nodes.count ({count}), not {producers}"),
        ));
    }
    let stake = match &raw.stake {
        None => vec![1; producers],
        Some(s) => {
            if s.get_ref().len() != producers {
                return Err(cx.err(
                    s.span().start,
                    "nodes.stake",
                    format!(
                        "{} entries for {producers} producers: give one stake per producer",
                        s.get_ref().len()
                    ),
                ));
            }
            if s.get_ref().contains(&0) {
                return Err(cx.err(
                    s.span().start,
                    "nodes.stake",
                    "a producer's stake must be at least 1",
                ));
            }
            s.get_ref().clone()
        }
    };
    debug_assert_eq!(region_members(count, regions).len(), regions);
    Ok((0..count)
        .map(|id| NodeSpec {
            id,
            name: format!("n{id}"),
            region: crate::topology::region_of(id, regions),
            role: match stake.get(id) {
                Some(&stake) => Role::Producer { stake },
                None => Role::Relay,
            },
        })
        .collect())
}

/// The `{name}` placeholders in `arg`.
pub fn placeholders(arg: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

/// Where `program` is: a path (relative to `dir`) or a bare name on PATH; `None` unless
/// it is a file with an execute bit.
pub fn resolve_executable(program: &str, dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = dir.join(program);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

fn topology(
    cx: &Cx,
    raw: &Spanned<RawTopology>,
    count: usize,
    regions: usize,
) -> Result<Topology, ClusterError> {
    let t = raw.get_ref();
    let kind = *t.kind.get_ref();
    let topology = match (&t.edges, kind) {
        (Some(_), k) if k != TopologyKind::Explicit => {
            return Err(cx.err(
                t.kind.span().start,
                "topology.edges",
                format!(
                    "edges are only read with kind = \"explicit\", not {:?}",
                    k.name()
                ),
            ))
        }
        (None, TopologyKind::Explicit) => {
            return Err(cx.err(
                t.kind.span().start,
                "topology.edges",
                "kind = \"explicit\" needs an `edges` list of [a, b] node pairs",
            ))
        }
        (Some(edges), _) => {
            let mut pairs = Vec::new();
            for e in edges {
                let [a, b] = *e.get_ref();
                if a >= count || b >= count || a == b {
                    return Err(cx.err(
                        e.span().start,
                        "topology.edges",
                        format!("edge [{a}, {b}] must join two different nodes below nodes.count ({count})"),
                    ));
                }
                pairs.push((a, b));
            }
            Topology::from_edges(count, pairs)
        }
        (None, kind) => Topology::generate(kind, count, regions, t.seed),
    };
    let unreachable = topology.unreachable();
    if !unreachable.is_empty() {
        let shown: Vec<String> = unreachable
            .iter()
            .take(10)
            .map(|n| format!("n{n}"))
            .collect();
        return Err(cx.err(
            raw.span().start,
            "topology",
            format!(
                "the topology is not connected: {} node(s) cannot reach n0 ({}{})",
                unreachable.len(),
                shown.join(", "),
                if unreachable.len() > 10 { ", ..." } else { "" }
            ),
        ));
    }
    Ok(topology)
}

/// The `[cluster]` table's name, slot length and duration.
fn check_cluster_table(cx: &Cx, c: &RawCluster) -> Result<(), ClusterError> {
    if c.name.get_ref().trim().is_empty() {
        return Err(cx.err(c.name.span().start, "cluster.name", "must not be empty"));
    }
    if *c.slot_ms.get_ref() == 0 {
        return Err(cx.err(
            c.slot_ms.span().start,
            "cluster.slot_ms",
            "must be at least 1",
        ));
    }
    if *c.duration_s.get_ref() == 0 {
        return Err(cx.err(
            c.duration_s.span().start,
            "cluster.duration_s",
            "must be at least 1",
        ));
    }
    Ok(())
}

/// The first port, with room for every node's ports below 65536.
fn base_port(cx: &Cx, c: &RawCluster, count: usize) -> Result<u16, ClusterError> {
    let base = *c.base_port.get_ref();
    if base == 0 || usize::from(base) + count * usize::from(PORTS_PER_NODE) > 65_536 {
        return Err(cx.err(
            c.base_port.span().start,
            "cluster.base_port",
            format!(
                "{count} nodes need {} ports from {base}, past 65535 (or 0)",
                count * 3
            ),
        ));
    }
    Ok(base)
}

/// `analysis.hop_processing_ms`, 0 when not given.
fn hop_processing_ms(cx: &Cx, analysis: Option<&RawAnalysis>) -> Result<f64, ClusterError> {
    let Some(a) = analysis else {
        return Ok(0.0);
    };
    let v = *a.hop_processing_ms.get_ref();
    if !(v.is_finite() && v >= 0.0) {
        return Err(cx.err(
            a.hop_processing_ms.span().start,
            "analysis.hop_processing_ms",
            "must be a non-negative number",
        ));
    }
    Ok(v)
}

/// The refusal of `[extract]` rules for the reference node, at the first rule.
fn extract_for_reference(cx: &Cx, x: Option<&RawExtract>) -> ClusterError {
    let at = x
        .and_then(|x| {
            [
                &x.time_format,
                &x.forged,
                &x.received,
                &x.fetched,
                &x.adopted,
            ]
            .into_iter()
            .flatten()
            .map(|v| v.span().start)
            .min()
        })
        .unwrap_or(0);
    cx.err(
        at,
        "extract",
        "the reference node writes dyno's event log; [extract] is for a node.command that does not",
    )
}

mod checks;
mod faults_check;
mod node;
pub use checks::NodeCommandError;
use checks::{extract, ready_url, workload};
use node::{node_command, ready_timeout_s, reference_tuning};

#[cfg(test)]
mod faults_tests;
#[cfg(test)]
mod tests;
