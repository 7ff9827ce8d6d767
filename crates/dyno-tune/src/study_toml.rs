//! The study file's TOML as its sections read it (study.rs, and training.rs for `[pgo]`):
//! durations, the default benchmark timeout, and the parse context whose errors name the
//! file, the line and the key.

use crate::error::TuneError;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub use dyno_model::line_col;

/// How long one benchmark run may take unless its `timeout` says otherwise: long enough for
/// Substrate's `benchmark machine`, short enough that a node started by mistake (a command
/// that never exits) costs ten minutes, not the night.
pub const DEFAULT_BENCHMARK_TIMEOUT_S: f64 = 600.0;

#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Budget {
    Seconds(u64),
    Text(String),
}

/// Seconds in a TOML duration: `90` or a string for [`parse_duration`].
pub(crate) fn duration_value(b: Budget) -> Option<f64> {
    match b {
        Budget::Seconds(n) => Some(n as f64),
        Budget::Text(t) => parse_duration(&t),
    }
}

/// Parses a duration: `"90"`, `"90s"`, `"30m"`, `"2h"`, `"1h30m"`.
pub fn parse_duration(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Ok(s) = text.parse::<f64>() {
        return (s >= 0.0 && s.is_finite()).then_some(s);
    }
    let mut total = 0.0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let n: f64 = number.parse().ok()?;
        number.clear();
        total += n * match c {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86_400.0,
            _ => return None,
        };
    }
    number.is_empty().then_some(total)
}

/// Messages name their key in prose (``run `alpha`: 0.7 is outside``); once the header
/// names the key (`key `run.alpha`: `), that prefix only repeats it.
fn without_named_key(message: String, key: &str) -> String {
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let section = key.split(['.', '[']).next().unwrap_or(key);
    let named = format!("{section} `{leaf}`");
    match message.strip_prefix(&named) {
        Some(rest) if rest.starts_with(": ") => rest[2..].to_string(),
        Some(rest) if rest.starts_with(' ') => rest[1..].to_string(),
        _ => message,
    }
}

/// The study file being parsed: an error at an offset of its text names the file, the
/// line and the key.
pub(crate) struct Ctx<'a> {
    path: &'a Path,
    pub(crate) text: &'a str,
}

impl<'a> Ctx<'a> {
    /// The context of the study file `path` whose text is `text`.
    pub(crate) fn new(path: &'a Path, text: &'a str) -> Ctx<'a> {
        Ctx { path, text }
    }

    /// An error at byte `offset`, naming the key written there (the entry or the table
    /// header the offset falls in).
    pub(crate) fn err(&self, offset: usize, message: impl Into<String>) -> TuneError {
        let key = dyno_model::key_at(self.text, offset);
        let mut message = message.into();
        // Underline from the offset to the end of its entry, as toml does for a value.
        let mut span = offset..offset;
        if let Some(k) = &key {
            if let Some(entry) = dyno_model::locate_key(self.text, k) {
                if entry.contains(&offset) {
                    span.end = entry.end;
                }
            }
            message = without_named_key(message, k);
        }
        TuneError::Study(dyno_model::ConfigDiagnostic::new(
            self.path,
            self.text,
            Some(span),
            key.as_deref(),
            message,
        ))
    }

    pub(crate) fn resolve(&self, relative: &str) -> PathBuf {
        let p = Path::new(relative);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let joined = dir.join(p);
        joined.canonicalize().unwrap_or(joined)
    }
}
