//! Whether a cluster fits this machine, before anything starts: what one node costs is
//! the reference node's own count of its threads and its measured memory, from the very
//! config the launcher writes for it (dyno-node); the arithmetic is dyno-cluster's.

use dyno_cluster::capacity::{self, Fit, NodeCost};
use dyno_cluster::{ClusterError, ClusterSpec, NodeCommand};

/// What one of `spec`'s nodes costs; `None` for a node command (not known).
fn node_cost(spec: &ClusterSpec) -> Option<NodeCost> {
    if spec.command != NodeCommand::Reference || spec.nodes.is_empty() {
        return None;
    }
    let text = dyno_cluster::launch::node_config(spec, 0);
    let cfg: dyno_node::config::NodeConfig = toml::from_str(&text).ok()?;
    Some(NodeCost {
        threads: cfg.threads(),
        rss_bytes: cfg.rss_estimate_bytes(),
    })
}

/// The cluster against this machine's limits.
pub(super) fn fit(spec: &ClusterSpec) -> Fit {
    let host = dyno_proc::limits::HostLimits::read();
    capacity::fit(spec, node_cost(spec), &host, super::cores())
}

/// The fit, or the refusal (exit 2) with the arithmetic of every limit exceeded.
pub(super) fn refuse_unless_it_fits(spec: &ClusterSpec) -> Result<Fit, ClusterError> {
    let f = fit(spec);
    if f.fits() {
        Ok(f)
    } else {
        Err(ClusterError::DoesNotFit(f.message(spec)))
    }
}
