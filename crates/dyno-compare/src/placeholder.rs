//! The placeholders of a comparison file: the workload's (`{workload}`, `{rate}`, ...,
//! see [`spec::substitute`](crate::spec::substitute)) and those a slot fills
//! (`{port:NAME}`, `{dir}`; see [`slot`](crate::slot)): how they are written and found in
//! a text, which a key may use, and stand-in values for checking a URL before anything
//! runs. Below the slot, the readiness probes and the file's checks, which all read them.
//!
//! A placeholder is `{NAME}` with NAME of letters, digits and `_` (or `{port:NAME}`);
//! every other brace is literal (`{"a": 1}`, `{ x }`, `${1##*:}`), so JSON and most shell
//! text need no escape. A `{NAME}` that no placeholder defines is refused where the file
//! is read rather than passed on as written (a shell variable is `$NAME`, not `${NAME}`).

/// The per-slot directory placeholder.
pub const DIR: &str = "{dir}";

/// The workload's placeholders, replaced in a subject's command, arguments and
/// environment (and in a load's command, beside `{load_s}` and the addresses).
pub const WORKLOAD: [&str; 4] = ["workload", "rate", "warmup_s", "measure_s"];

/// The `{NAME}` placeholders of a subject's command, arguments and environment, and of a
/// workload's `args`: the workload's and the slot's directory.
pub const IN_COMMAND: [&str; 5] = [WORKLOAD[0], WORKLOAD[1], WORKLOAD[2], WORKLOAD[3], "dir"];

/// The `{NAME}` placeholders in `text`, in order (repeats kept; `{port:NAME}` apart: see
/// [`ports_in`]).
pub fn names_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if is_name(name) {
            out.push(name);
            rest = &after[close + 1..];
        } else {
            // `{{x}` or `{ {x}`: the next brace may still open one.
            rest = after;
        }
    }
    out
}

/// The first `{NAME}` in `text` that is not one of `known` (nor, where `ports`, a
/// `{port:NAME}`), with what the key may use instead: the message after the key.
pub fn check_known(text: &str, known: &[&str], ports: bool) -> Result<(), String> {
    let Some(bad) = names_in(text).into_iter().find(|n| !known.contains(n)) else {
        return Ok(());
    };
    let mut list: Vec<String> = known.iter().map(|k| format!("`{{{k}}}`")).collect();
    if ports {
        list.push("`{port:NAME}`".into());
    }
    let may = if list.is_empty() {
        "this key takes no placeholders".to_string()
    } else {
        format!("this key may use {}", list.join(", "))
    };
    Err(format!(
        "`{{{bad}}}` is no placeholder ({may}); a brace around anything but a name is literal, e.g. `{{ {bad} }}`"
    ))
}

/// The names of the `{port:NAME}` placeholders in `text`, in order (repeats kept).
pub fn ports_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{port:") {
        let after = &rest[open + "{port:".len()..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if is_name(name) {
            out.push(name);
        }
        rest = &after[close + 1..];
    }
    out
}

/// A `{port:...}` that is no placeholder (an empty name, a character other than a
/// letter, digit or `_`), if `text` holds one.
pub fn malformed_port(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(open) = rest.find("{port:") {
        let after = &rest[open + "{port:".len()..];
        let end = after.find('}').unwrap_or(after.len());
        if !is_name(&after[..end]) || end == after.len() {
            return Some(format!("{{port:{}", &after[..end.min(after.len())]));
        }
        rest = &after[end + 1..];
    }
    None
}

/// Whether `s` is a placeholder's name: letters, digits and `_`, at least one.
pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with a placeholder's stand-in values (port 1, directory `/tmp`), for checking
/// a URL or address written with placeholders before anything runs.
pub fn stand_in(text: &str) -> String {
    let mut out = text.to_string();
    for name in ports_in(text) {
        out = out.replace(&format!("{{port:{name}}}"), "1");
    }
    out.replace(DIR, "/tmp")
}
