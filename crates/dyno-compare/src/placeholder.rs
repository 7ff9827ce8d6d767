//! The placeholders of a comparison file that a slot fills (`{port:NAME}`, `{dir}`; see
//! [`slot`](crate::slot)): how they are written and found in a text, and stand-in
//! values for checking a URL before anything runs. Below the slot, the readiness probes
//! and the file's checks, which all read them.

/// The per-slot directory placeholder.
pub const DIR: &str = "{dir}";

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
