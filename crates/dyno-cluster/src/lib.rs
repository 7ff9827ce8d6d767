//! `dyno cluster`: many nodes over emulated regions, and how fast blocks reach them.
//!
//! The pieces, each usable alone:
//!
//! - [`ClusterSpec`]: the cluster file (TOML), validated before anything starts: nodes,
//!   producers and stake, regions with a one-way latency matrix, link bandwidth, a
//!   topology, slot length, workload. Errors name file, line and key.
//! - [`Topology`]: seeded generators (line, ring, torus, Cardano's dense torus) and graph
//!   facts (connectivity, degree, diameter, hop counts).
//! - [`shape`]: each directed link's latency and bandwidth, and the propagation the
//!   topology predicts (shortest paths, cross-region hops counted).
//! - [`events`] and [`propagation`]: node logs parsed into events, and Cardano's metric set
//!   (forging loop, peer metrics, adoption at 0.50 ... 1.00 of nodes) as distributions.
//! - [`extract`]: regex rules that read those events from any node's own log lines.
//! - [`render`]: terminal tables, JSON (`dyno.cluster.report/1`) and the HTML report.
//! - [`export`]: the same cluster as a Nomad job or Kubernetes manifests.
//! - [`launch`]: the local launcher, one guarded process per node (dyno-proc), started
//!   in parallel a bounded number at a time.
//! - [`capacity`]: whether a cluster fits this machine (threads, memory) before it starts.
//! - [`compared`]: a run as `dyno compare` judges it (its compared metrics), as the
//!   execution contract's `ComparedRun` (dyno-exec, below compare and cluster).
//! - [`session`]: `check` as a typed report; `run` with a release's overrides, measured
//!   and stored in the results store.
//! - [`stored`]: what `report` reads (node logs, a stored run's directory) and analyses,
//!   and a stored run's HTML report for `dyno serve`.
//!
//! Nothing here prints or exits; only [`launch`] starts processes.
//!
//! ```
//! use dyno_cluster::{ClusterSpec, EXAMPLE};
//! use std::path::Path;
//!
//! let spec = ClusterSpec::parse(Path::new("cluster.toml"), EXAMPLE).unwrap();
//! let from_n0 = dyno_cluster::shape::predict(&spec, 0, 0.0);
//! assert_eq!(spec.nodes.len(), 9);
//! assert!(from_n0.full_adoption_ms() > 0.0);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod byzantine_analysis;
pub mod capacity;
mod chain_events;
pub mod compared;
mod error;
pub mod events;
pub mod export;
pub mod extract;
pub mod fault_analysis;
pub mod faults;
mod file;
pub mod launch;
pub mod propagation;
pub mod render;
pub mod resources;
mod run_dir;
pub mod session;
pub mod shape;
pub mod stored;
mod topology;

pub use error::ClusterError;
pub use file::{
    line_col, placeholders, resolve_executable, ClusterSpec, NodeCommand, NodeCommandError,
    NodeSpec, Region, Role, Workload, WorkloadKind, LOAD_PLACEHOLDERS, PLACEHOLDERS,
    PORTS_PER_NODE,
};
pub use topology::{region_members, region_of, Topology, TopologyKind};

/// The commented example cluster file `dyno cluster init` writes.
pub const EXAMPLE: &str = include_str!("example.toml");
