//! The cluster file's `[node]` table: which node runs (the reference node or
//! `node.command`), its threads, how long it has to become ready, and how the reference
//! node is tuned (settings only the reference node takes).

use super::{placeholders, resolve_executable, Cx, NodeCommand, RawNode, PLACEHOLDERS};
use crate::error::ClusterError;
use std::path::Path;
use toml::Spanned;

/// `node.command` (the reference node when not given) and `node.threads`.
pub(super) fn node_command(
    cx: &Cx,
    raw: Option<&RawNode>,
) -> Result<(NodeCommand, Option<u32>), ClusterError> {
    let threads = match raw.and_then(|n| n.threads.as_ref()) {
        Some(t) if *t.get_ref() == 0 => {
            return Err(cx.err(t.span().start, "node.threads", "must be at least 1"))
        }
        Some(t) => Some(*t.get_ref()),
        None => None,
    };
    let Some(argv) = raw.and_then(|n| n.command.as_ref()) else {
        return Ok((NodeCommand::Reference, threads));
    };
    let at = argv.span().start;
    let Some(program) = argv.get_ref().first() else {
        return Err(cx.err(
            at,
            "node.command",
            "is empty: give the program and its arguments, or leave it out for the reference node",
        ));
    };
    for arg in argv.get_ref() {
        for name in placeholders(arg) {
            if !PLACEHOLDERS.contains(&name) {
                return Err(cx.err(
                    at,
                    "node.command",
                    format!(
                        "unknown placeholder {{{name}}} in {arg:?} (known: {})",
                        PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
                    ),
                ));
            }
        }
    }
    let dir = cx.path.parent().unwrap_or(Path::new("."));
    if resolve_executable(program, dir).is_none() {
        return Err(cx.err(
            at,
            "node.command",
            format!("{program:?} is not an executable file (relative paths start at the cluster file's directory; bare names are looked up on PATH)"),
        ));
    }
    Ok((NodeCommand::Argv(argv.get_ref().clone()), threads))
}

/// Most verify threads `node.verify_tiles` (or replay threads, `node.replay_threads`)
/// may ask for (the reference node's own limit).
const MAX_VERIFY_TILES: usize = 256;

/// How the reference node is tuned (`node.forge`, `verify_tiles`, `replay_threads`,
/// `forge_at`); none of it for another node command.
pub(super) struct ReferenceTuning {
    pub forge: Option<String>,
    pub verify_tiles: Option<usize>,
    pub replay_threads: Option<usize>,
    pub forge_at: Option<String>,
}

pub(super) fn reference_tuning(
    cx: &Cx,
    node: Option<&RawNode>,
    command: &NodeCommand,
) -> Result<ReferenceTuning, ClusterError> {
    let reference = *command == NodeCommand::Reference;
    let forge = cx.reference_choice(
        reference,
        node.and_then(|n| n.forge.as_ref()),
        "node.forge",
        &["tiles", "sequential"],
    )?;
    // A cluster's reference node is lean unless the file asks: the sequential forge.
    let forge = forge.or_else(|| reference.then(|| "sequential".to_string()));
    let verify_tiles = node_threads(
        cx,
        reference,
        node.and_then(|n| n.verify_tiles.as_ref()),
        "node.verify_tiles",
    )?;
    let replay_threads = node_threads(
        cx,
        reference,
        node.and_then(|n| n.replay_threads.as_ref()),
        "node.replay_threads",
    )?;
    let forge_at = cx.reference_choice(
        reference,
        node.and_then(|n| n.forge_at.as_ref()),
        "node.forge_at",
        &["whole_slot", "slot_start"],
    )?;
    Ok(ReferenceTuning {
        forge,
        verify_tiles,
        replay_threads,
        forge_at,
    })
}

/// `node.ready_timeout_s`: at least 1, 60 when not given.
pub(super) fn ready_timeout_s(cx: &Cx, node: Option<&RawNode>) -> Result<u64, ClusterError> {
    match node.and_then(|n| n.ready_timeout_s.as_ref()) {
        Some(t) if *t.get_ref() == 0 => {
            Err(cx.err(t.span().start, "node.ready_timeout_s", "must be at least 1"))
        }
        Some(t) => Ok(*t.get_ref()),
        None => Ok(60),
    }
}

/// A thread count of the reference node (`node.verify_tiles`, `node.replay_threads`):
/// only with the reference node, 1 to [`MAX_VERIFY_TILES`].
fn node_threads(
    cx: &Cx,
    reference: bool,
    v: Option<&Spanned<usize>>,
    key: &str,
) -> Result<Option<usize>, ClusterError> {
    let Some(v) = v else {
        return Ok(None);
    };
    let at = v.span().start;
    if !reference {
        return Err(cx.err(
            at,
            key,
            "is a setting of the reference node: leave it out with node.command",
        ));
    }
    if !(1..=MAX_VERIFY_TILES).contains(v.get_ref()) {
        return Err(cx.err(at, key, format!("must be 1 to {MAX_VERIFY_TILES}")));
    }
    Ok(Some(*v.get_ref()))
}
