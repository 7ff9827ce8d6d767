//! One way to say what is wrong in a config, study or requirements file.
//!
//! Every dyno file error reads the same, whether toml refused the syntax or a validator
//! refused a value:
//!
//! ```text
//! study.toml:7:8: key `run.alpha`: 1.5 is not in (0, 1)
//!   |
//! 7 | alpha = 1.5
//!   |         ^^^
//! ```
//!
//! A location comes from a byte span (toml's own for a parse error, a `toml::Spanned` for a
//! value) or, when a validator only knows the key, from looking the key path up in the text.
//! This crate does not depend on toml: callers pass `error.message()` and `error.span()`,
//! which keeps the formatter the same across toml versions.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A located error in a TOML file: file, line, column, key, message and the offending line
/// with a caret under the span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDiagnostic {
    /// The file.
    pub path: PathBuf,
    /// 1-based line and column (in characters), when the error has a place in the text.
    pub position: Option<(usize, usize)>,
    /// The key path at fault (`subject[1].command`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
    /// toml-style snippet lines: gutter, the line, the underline. Empty without a position.
    pub snippet: Vec<String>,
}

impl ConfigDiagnostic {
    /// A diagnostic at `span` of `text` (or at `key`, looked up in `text`, or nowhere).
    ///
    /// A span that covers several lines (a whole `[[table]]`) is narrowed to the key's own
    /// line when the key is found inside it, so a validator holding only its table's span
    /// still points at the offending entry.
    pub fn new(
        path: &Path,
        text: &str,
        span: Option<Range<usize>>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        let located = key.and_then(|k| locate(text, k));
        let span = match (span, located) {
            (Some(s), Some((k, exact))) if covers_a_table(text, &s) => {
                // A table's span: its entry is where the fault is. toml's table spans do
                // not cover sub-tables (`[workload.load]` after `[[workload]]`), so an
                // entry written anywhere wins; an ancestor only if inside the span.
                let inside = s.start <= k.start && k.end <= s.end;
                Some(if exact || inside { k } else { s })
            }
            (Some(s), _) => Some(s),
            (None, k) => k.map(|(k, _)| k),
        };
        let (position, snippet) = match &span {
            Some(s) => {
                let (line, column) = line_col(text, s.start);
                (Some((line, column)), snippet(text, s))
            }
            None => (None, Vec::new()),
        };
        ConfigDiagnostic {
            path: path.to_path_buf(),
            position,
            key: key.map(str::to_string),
            message: message.into(),
            snippet,
        }
    }

    /// A diagnostic for a key the validator names, located by looking it up in `text`.
    pub fn at_key(path: &Path, text: &str, key: &str, message: impl Into<String>) -> Self {
        Self::new(path, text, None, Some(key), message)
    }

    /// A diagnostic for toml's own refusal: pass `error.message()` and `error.span()`.
    ///
    /// toml does not expose the key path it was in, so the key is read back from the text
    /// at the span: the entry or table header the span starts in.
    pub fn parse_error(path: &Path, text: &str, message: &str, span: Option<Range<usize>>) -> Self {
        if let Some(missing) = missing_at_top_level(text, message, span.as_ref()) {
            // toml's span is the whole document: line 1 has nothing to do with it.
            return Self::new(
                path,
                text,
                None,
                None,
                format!(
                    "no `{missing}`: this file needs a top-level `{missing}` (a key, or a \
                     `[{missing}]` / `[[{missing}]]` table)"
                ),
            );
        }
        let key = span.as_ref().and_then(|s| key_at(text, s.start));
        Self::new(path, text, span, key.as_deref(), message.trim_end())
    }

    /// Parses `text`, the contents of `path`, as TOML into `T`; toml's refusal becomes a
    /// diagnostic with the file, line, column and key ([`ConfigDiagnostic::parse_error`]).
    pub fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, Self> {
        toml::from_str(text).map_err(|e| Self::parse_error(path, text, e.message(), e.span()))
    }

    /// [`ConfigDiagnostic::parse_toml`], then `check` on the value, which names the key of
    /// a value it refuses and says why (`Err((key, message))`); that too becomes a
    /// diagnostic pointing at the key's line.
    pub fn parse_toml_checked<T: serde::de::DeserializeOwned>(
        path: &Path,
        text: &str,
        check: impl FnOnce(&T) -> Result<(), (String, String)>,
    ) -> Result<T, Self> {
        let value = Self::parse_toml(path, text)?;
        check(&value).map_err(|(key, message)| Self::at_key(path, text, &key, message))?;
        Ok(value)
    }

    /// 1-based line, when known.
    pub fn line(&self) -> Option<usize> {
        self.position.map(|(l, _)| l)
    }
}

impl fmt::Display for ConfigDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        write!(f, "{}", self.message)?;
        for line in &self.snippet {
            write!(f, "\n{line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigDiagnostic {}

/// The field toml says is missing, when its span is the document's (a key or table
/// the file's top level lacks) rather than one table.
fn missing_at_top_level<'m>(
    text: &str,
    message: &'m str,
    span: Option<&Range<usize>>,
) -> Option<&'m str> {
    let field = message
        .trim_end()
        .strip_prefix("missing field `")?
        .strip_suffix('`')?;
    // toml gives the document's field an empty span at 0 (or, in some versions, the
    // whole text); a table's own field gets that table's span.
    let whole = span.is_none_or(|s| s.start == 0 && (s.end == 0 || s.end >= text.trim_end().len()));
    whole.then_some(field)
}

/// Where byte `offset` of `text` is: 1-based line and 1-based column in characters.
///
/// Offsets past the end or inside a character are clamped to the nearest character start
/// before them, so the answer always names a place in the text (or just past its end).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_boundary(text, offset);
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A span of several lines, or one that starts at a `[table]` header: not one value.
fn covers_a_table(text: &str, span: &Range<usize>) -> bool {
    let start = floor_boundary(text, span.start);
    let end = floor_boundary(text, span.end.max(span.start));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    text[start..end].trim_end().contains('\n') || text[line_start..].trim_start().starts_with('[')
}

/// toml's snippet: an empty gutter, `N | the line`, and carets under the span's part of it.
fn snippet(text: &str, span: &Range<usize>) -> Vec<String> {
    let start = floor_boundary(text, span.start);
    let (line, column) = line_col(text, start);
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let content = text[line_start..]
        .split('\n')
        .next()
        .unwrap_or("")
        .trim_end_matches('\r');
    let end = floor_boundary(text, span.end.max(start)).min(line_start + content.len());
    let width = text[start.min(end)..end].chars().count().max(1);
    let gutter = " ".repeat(line.to_string().len());
    // A 100 KB line is shown by its head, and a control or bidi character in it as U+FFFD
    // (one character, so the carets stay under their place): the snippet goes to a
    // terminal as it is.
    let mut shown: String = content
        .chars()
        .take(SNIPPET_CHARS)
        .map(|c| if is_unprintable(c) { '\u{FFFD}' } else { c })
        .collect();
    if content.chars().count() > SNIPPET_CHARS {
        shown.push_str("...");
    }
    let indent = (column - 1).min(SNIPPET_CHARS);
    let width = width.min(SNIPPET_CHARS + 3 - indent).max(1);
    vec![
        format!("{gutter} |"),
        format!("{line} | {shown}"),
        format!("{gutter} | {}{}", " ".repeat(indent), "^".repeat(width)),
    ]
}

/// The most characters of a line a snippet shows.
const SNIPPET_CHARS: usize = 160;

/// A character a terminal would act on rather than show: a control character but tab, or
/// one that reorders the text around it (the bidirectional embeddings, overrides and
/// isolates U+202A..U+202E, U+2066..U+2069, and the marks), making a text read as another.
pub fn is_unprintable(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// One place a key path is written: a `key = value` entry or a `[table]` header.
#[derive(Debug)]
struct Entry {
    /// Full key path, array tables indexed from 0 (`subject[1].metrics.prometheus`).
    key: String,
    /// The written entry on its line: key through value, comments and blanks left out.
    span: Range<usize>,
    /// Byte range of the whole line, for keys inside an inline table.
    line: Range<usize>,
}

/// Finds where `key` (`a.b`, `subject[1].command`) is written in `text`.
///
/// An exact entry or header wins; a key inside an inline table (`ready = { url = ".." }`)
/// is found on its parent's line; otherwise the closest written ancestor (a missing
/// `command` of `subject[1]` points at that subject's header). `None` when not even the
/// first segment is written.
pub fn locate_key(text: &str, key: &str) -> Option<Range<usize>> {
    locate(text, key).map(|(span, _)| span)
}

/// [`locate_key`], and whether the key itself (not an ancestor) was found.
fn locate(text: &str, key: &str) -> Option<(Range<usize>, bool)> {
    let entries = entries(text);
    if let Some(e) = entries.iter().find(|e| e.key == key) {
        return Some((e.span.clone(), true));
    }
    // An array of tables is written as its elements: `subject` is its first `[[subject]]`.
    if let Some(e) = entries
        .iter()
        .find(|e| e.key.strip_prefix(key).is_some_and(|r| r.starts_with('[')))
    {
        return Some((e.span.clone(), true));
    }
    let ancestor = entries
        .iter()
        .filter(|e| key.starts_with(&e.key) && key[e.key.len()..].starts_with(['.', '[']))
        .max_by_key(|e| e.key.len())?;
    let rest = &key[ancestor.key.len() + 1..];
    let leaf = rest.rsplit('.').next().unwrap_or(rest);
    let line = &text[ancestor.line.clone()];
    let inline = line.find('{').and_then(|brace| {
        let mut from = brace;
        while let Some(i) = line[from..].find(leaf) {
            let at = from + i;
            let after = line[at + leaf.len()..].trim_start();
            let before = line[..at].trim_end();
            if after.starts_with('=') && (before.ends_with('{') || before.ends_with(',')) {
                return Some((
                    ancestor.line.start + at..ancestor.line.start + at + leaf.len(),
                    true,
                ));
            }
            from = at + leaf.len();
        }
        None
    });
    Some(inline.unwrap_or_else(|| (ancestor.span.clone(), false)))
}

/// The key path of the entry or table header that byte `offset` falls in, if any.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    entries(text)
        .into_iter()
        .rfind(|e| e.line.start <= offset && offset <= e.line.end)
        .map(|e| e.key)
}

/// Scans `text` line by line for headers and entries, skipping the insides of multi-line
/// arrays, inline tables and strings. Not a TOML parser: it only has to find where keys
/// of a file toml already accepted (or refused at a known place) are written.
fn entries(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut table: String = String::new();
    let mut arrays: std::collections::HashMap<String, usize> = Default::default();
    let mut scan = Scan::default();
    let mut start = 0;
    for raw in text.split_inclusive('\n') {
        let line_range = start..start + raw.trim_end_matches(['\n', '\r']).len();
        let line = &text[line_range.clone()];
        start += raw.len();
        if scan.depth > 0 || scan.multiline.is_some() {
            scan.feed(line);
            continue;
        }
        let code = scan.code(line);
        let trimmed = code.trim();
        let indent = code.len() - code.trim_start().len();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix("[[")
            .and_then(|t| t.strip_suffix("]]"))
        {
            let plain = normalise(name);
            let n = *arrays
                .entry(plain.clone())
                .and_modify(|n| *n += 1)
                .or_insert(1);
            table = format!("{}[{}]", resolve(&plain, &arrays, true), n - 1);
        } else if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            table = resolve(&normalise(name), &arrays, false);
        } else if let Some(eq) = find_eq(code) {
            let key = normalise(&code[..eq]);
            let full = if table.is_empty() {
                key
            } else {
                format!("{table}.{key}")
            };
            out.push(Entry {
                key: full,
                span: line_range.start + indent..line_range.start + indent + trimmed.len(),
                line: line_range.clone(),
            });
            scan.feed(&code[eq + 1..]);
            continue;
        } else {
            continue;
        }
        out.push(Entry {
            key: table.clone(),
            span: line_range.start + indent..line_range.start + indent + trimmed.len(),
            line: line_range,
        });
    }
    out
}

/// `a . "b" .c` -> `a.b.c`.
fn normalise(key: &str) -> String {
    key.split('.')
        .map(|s| s.trim().trim_matches('"').trim_matches('\''))
        .collect::<Vec<_>>()
        .join(".")
}

/// Adds the current index of every array table among the prefixes of `plain`; with
/// `defining`, the last segment is the array being appended to and gets its index after.
fn resolve(
    plain: &str,
    arrays: &std::collections::HashMap<String, usize>,
    defining: bool,
) -> String {
    let segs: Vec<&str> = plain.split('.').collect();
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(seg);
        let prefix = segs[..=i].join(".");
        let last = i + 1 == segs.len();
        if let Some(n) = arrays.get(&prefix).filter(|_| !(last && defining)) {
            out.push_str(&format!("[{}]", n.saturating_sub(1)));
        }
    }
    out
}

/// The `=` that ends a key: the first one outside quotes.
fn find_eq(code: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in code.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => return Some(i),
            (None, '[' | '{' | ']' | '}') => return None,
            _ => {}
        }
    }
    None
}

/// Bracket depth and open multi-line string carried from one line to the next.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    multiline: Option<&'static str>,
}

impl Scan {
    /// `line` without its comment (a `#` outside strings).
    fn code<'a>(&self, line: &'a str) -> &'a str {
        let mut quote: Option<char> = None;
        let mut escaped = false;
        for (i, c) in line.char_indices() {
            match (quote, c) {
                (Some('"'), '\\') if !escaped => {
                    escaped = true;
                    continue;
                }
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q && !escaped => quote = None,
                (None, '#') => return &line[..i],
                _ => {}
            }
            escaped = false;
        }
        line
    }

    /// Follows brackets and multi-line strings through a value's text.
    fn feed(&mut self, s: &str) {
        let mut rest = s;
        while !rest.is_empty() {
            if let Some(close) = self.multiline {
                match rest.find(close) {
                    Some(i) => {
                        rest = &rest[i + close.len()..];
                        self.multiline = None;
                    }
                    None => return,
                }
                continue;
            }
            if let Some(r) = rest.strip_prefix("\"\"\"") {
                self.multiline = Some("\"\"\"");
                rest = r;
                continue;
            }
            if let Some(r) = rest.strip_prefix("'''") {
                self.multiline = Some("'''");
                rest = r;
                continue;
            }
            let c = rest.chars().next().unwrap_or(' ');
            match c {
                '#' => return,
                '"' | '\'' => {
                    let body = &rest[1..];
                    let mut end = None;
                    let mut escaped = false;
                    for (i, ch) in body.char_indices() {
                        if ch == c && !escaped {
                            end = Some(i);
                            break;
                        }
                        escaped = c == '"' && ch == '\\' && !escaped;
                    }
                    match end {
                        Some(i) => rest = &body[i + 1..],
                        None => return,
                    }
                    continue;
                }
                '[' | '{' => self.depth += 1,
                ']' | '}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
        }
    }
}

#[cfg(test)]
mod tests;
