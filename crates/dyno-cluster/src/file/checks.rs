//! The cluster file's checks of what a node other than the reference node needs: its
//! readiness URL, its log extractors, and the workload (with its own load command).

use super::{placeholders, resolve_executable, Cx, RawExtract, RawNode, RawWorkload};
use super::{ClusterSpec, NodeCommand, NodeSpec, Role, Workload, WorkloadKind};
use super::{LOAD_PLACEHOLDERS, PLACEHOLDERS};
use crate::error::ClusterError;
use std::path::Path;

pub(super) fn ready_url(cx: &Cx, raw: Option<&RawNode>) -> Result<Option<String>, ClusterError> {
    let Some(url) = raw.and_then(|n| n.ready_url.as_ref()) else {
        return Ok(None);
    };
    let text = url.get_ref();
    let unknown = placeholders(text)
        .into_iter()
        .find(|p| !PLACEHOLDERS.contains(p));
    if !text.starts_with("http://") || unknown.is_some() {
        return Err(cx.err(
            url.span().start,
            "node.ready_url",
            format!(
                "{text:?} must be an http:// URL whose placeholders are among {}",
                PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
            ),
        ));
    }
    Ok(Some(text.clone()))
}

pub(super) fn extract(
    cx: &Cx,
    raw: Option<&RawExtract>,
) -> Result<Option<crate::extract::Extractors>, ClusterError> {
    use crate::extract::{Extractors, RuleEvent};
    let Some(raw) = raw else { return Ok(None) };
    let fields = [
        (RuleEvent::Forged, &raw.forged),
        (RuleEvent::Received, &raw.received),
        (RuleEvent::Fetched, &raw.fetched),
        (RuleEvent::Adopted, &raw.adopted),
    ];
    let rules: Vec<(RuleEvent, &str)> = fields
        .iter()
        .filter_map(|(e, r)| r.as_ref().map(|r| (*e, r.get_ref().as_str())))
        .collect();
    let format = raw.time_format.as_ref().map(|f| f.get_ref().as_str());
    Extractors::new(&rules, format)
        .map(Some)
        .map_err(|(key, message)| {
            let at = match key.strip_prefix("extract.") {
                Some("time_format") => raw.time_format.as_ref().map(|f| f.span().start),
                Some(event) => fields
                    .iter()
                    .find(|(e, _)| e.key() == event)
                    .and_then(|(_, r)| r.as_ref().map(|r| r.span().start)),
                None => None,
            };
            // A rule that is missing altogether is placed at the table's first value.
            let at = at.or_else(|| {
                fields
                    .iter()
                    .find_map(|(_, r)| r.as_ref().map(|r| r.span().start))
            });
            cx.err(at.unwrap_or(0), key, message)
        })
}

pub(super) fn workload(
    cx: &Cx,
    raw: Option<&RawWorkload>,
    nodes: &[NodeSpec],
) -> Result<Workload, ClusterError> {
    let producers: Vec<usize> = nodes
        .iter()
        .filter(|n| matches!(n.role, Role::Producer { .. }))
        .map(|n| n.id)
        .collect();
    let Some(w) = raw else {
        return Ok(Workload {
            rate_tps: 0.0,
            kind: WorkloadKind::Value,
            targets: producers,
            command: None,
        });
    };
    let rate = *w.rate_tps.get_ref();
    if !(rate.is_finite() && rate >= 0.0) {
        return Err(cx.err(
            w.rate_tps.span().start,
            "workload.rate_tps",
            "must be a non-negative number",
        ));
    }
    let targets = match &w.targets {
        None => producers,
        Some(ts) => {
            let mut out = Vec::new();
            for t in ts {
                if *t.get_ref() >= nodes.len() {
                    return Err(cx.err(
                        t.span().start,
                        "workload.targets",
                        format!(
                            "node {} does not exist (nodes.count = {})",
                            t.get_ref(),
                            nodes.len()
                        ),
                    ));
                }
                out.push(*t.get_ref());
            }
            out
        }
    };
    let command = match &w.command {
        None => None,
        Some(argv) => {
            let at = argv.span().start;
            let Some(program) = argv.get_ref().first() else {
                return Err(cx.err(
                    at,
                    "workload.command",
                    "is empty: give the program and its arguments, or leave it out for `dyno load`",
                ));
            };
            for arg in argv.get_ref() {
                if let Some(p) = placeholders(arg)
                    .into_iter()
                    .find(|p| !LOAD_PLACEHOLDERS.contains(p))
                {
                    return Err(cx.err(
                        at,
                        "workload.command",
                        format!(
                            "unknown placeholder {{{p}}} in {arg:?} (known: {})",
                            LOAD_PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
                        ),
                    ));
                }
            }
            if resolve_executable(program, cx.path.parent().unwrap_or(Path::new("."))).is_none() {
                return Err(cx.err(at, "workload.command", format!("{program:?} is not an executable file (relative paths start at the cluster file's directory; bare names are looked up on PATH)")));
            }
            Some(argv.get_ref().clone())
        }
    };
    Ok(Workload {
        rate_tps: rate,
        kind: w.kind,
        targets,
        command,
    })
}

impl ClusterSpec {
    /// The same cluster run with another release's node: `argv` replaces `node.command`
    /// (its program already resolved by the caller; its placeholders must be the cluster
    /// file's). Errors say what is wrong with `argv`, for the caller to place.
    pub fn with_node_command(mut self, argv: Vec<String>) -> Result<ClusterSpec, NodeCommandError> {
        if argv.is_empty() {
            return Err(NodeCommandError::Empty);
        }
        for arg in &argv {
            if let Some(name) = placeholders(arg)
                .into_iter()
                .find(|p| !PLACEHOLDERS.contains(p))
            {
                return Err(NodeCommandError::UnknownPlaceholder {
                    name: name.to_string(),
                    arg: arg.clone(),
                });
            }
        }
        self.command = NodeCommand::Argv(argv);
        Ok(self)
    }
}

/// Why a release's node command cannot replace a cluster file's `node.command`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeCommandError {
    /// No program given.
    #[error("is empty")]
    Empty,
    /// A `{name}` the cluster file does not fill.
    #[error(
        "unknown placeholder {{{name}}} in {arg:?} (known: {})",
        known_placeholders()
    )]
    UnknownPlaceholder {
        /// The placeholder's name.
        name: String,
        /// The argument holding it.
        arg: String,
    },
}

fn known_placeholders() -> String {
    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
}
