//! Reading the Prometheus text exposition (0.0.4) and OpenMetrics sample lines:
//! `name{label="value",...} value [timestamp] [# exemplar]`, `#` comments.
//!
//! Label values are quoted with `\"`, `\\` and `\n` escapes and may hold anything
//! (spaces, braces, commas), so a label set is scanned, not split. Values are read as
//! the formats write them (`+Inf`, `-Inf`, `NaN`, Go's `1e+06`). What a family's samples
//! mean (counter, histogram bucket...) is the reader's business: [`type_line`] gives the
//! declared kind as written.

use crate::error::{Error, Result};

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Sample name, e.g. `dyno_link_frags_total` or `x_bucket`.
    pub name: String,
    /// Labels in the order written, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The longest line a reader takes (64 KiB): a sample line of a real exposition is a few
/// hundred bytes; one longer is refused ([`parse_exposition`]) or skipped by lenient
/// readers, never parsed.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The most of a refused line an error quotes.
const QUOTED_CHARS: usize = 120;

/// Every sample of an exposition, strictly: `Err` names the first line that is neither a
/// sample nor a comment, or is longer than [`MAX_LINE_BYTES`].
pub fn parse_exposition(text: &str) -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || (line.starts_with('#') && line.len() <= MAX_LINE_BYTES) {
            continue;
        }
        let refused = || Error::Line {
            line: i + 1,
            text: quoted(line),
        };
        if line.len() > MAX_LINE_BYTES {
            return Err(refused());
        }
        out.push(sample_line(line).ok_or_else(refused)?);
    }
    Ok(out)
}

/// `line` for a message: its first [`QUOTED_CHARS`] characters, the length of the rest said.
fn quoted(line: &str) -> String {
    match line.char_indices().nth(QUOTED_CHARS) {
        None => line.to_string(),
        Some((at, _)) => format!("{}... ({} bytes more)", &line[..at], line.len() - at),
    }
}

/// The family name and kind word of a `# TYPE name kind` line (kind as written:
/// `counter`, `gauge`, `histogram`, `summary`, `untyped`...); `None` for other lines.
pub fn type_line(line: &str) -> Option<(&str, &str)> {
    let mut it = line.trim().strip_prefix("# TYPE ")?.split_whitespace();
    Some((it.next()?, it.next()?))
}

/// Parses a number as the text formats write it (`+Inf`, `-Inf`, `NaN`, Go's `1e+06`).
pub fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        t => t.parse::<f64>().ok(),
    }
}

/// Splits one (trimmed, non-comment) sample line into name, labels and value; `None`
/// when it is not one. A timestamp or an OpenMetrics exemplar after the value is skipped.
pub fn sample_line(line: &str) -> Option<Sample> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let (labels, rest) = match line[name_end..].strip_prefix('{') {
        Some(inner) => label_set(inner)?,
        None => (Vec::new(), &line[name_end..]),
    };
    let value = rest.split_whitespace().next()?;
    Some(Sample {
        name: name.to_string(),
        labels,
        value: parse_value(value)?,
    })
}

type Labels = Vec<(String, String)>;

/// Parses `k="v",...}` (after the opening brace); the labels and what follows the
/// closing brace.
fn label_set(inner: &str) -> Option<(Labels, &str)> {
    let mut labels = Vec::new();
    let mut chars = inner.char_indices().peekable();
    loop {
        // Skip separators and find the next label name or the closing brace.
        while matches!(chars.peek(), Some((_, c)) if *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let (start, c) = chars.next()?;
        if c == '}' {
            return Some((labels, &inner[start + 1..]));
        }
        let eq = inner[start..].find('=')? + start;
        let key = inner[start..eq].trim().to_string();
        while chars.peek().is_some_and(|(i, _)| *i <= eq) {
            chars.next();
        }
        while matches!(chars.peek(), Some((_, c)) if c.is_whitespace()) {
            chars.next();
        }
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()?.1 {
                '"' => break,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                other => value.push(other),
            }
        }
        labels.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_cap_is_refused_and_quoted_short() {
        let long = format!("x{{a=\"{}\"}} 1", "v".repeat(MAX_LINE_BYTES));
        let err = parse_exposition(&format!("ok 1\n{long}\n")).unwrap_err();
        let Error::Line { line, text } = &err else {
            panic!("{err}")
        };
        assert_eq!(*line, 2);
        assert!(
            text.ends_with(&format!("... ({} bytes more)", long.len() - 120)),
            "{text}"
        );
        let comment = format!("# {}", "c".repeat(MAX_LINE_BYTES));
        assert!(parse_exposition(&comment).is_err());
    }

    #[test]
    fn samples_with_and_without_labels() {
        let text = "# HELP dyno_tile_up 1 while running.\n# TYPE dyno_tile_up gauge\n\
                    dyno_tile_up{tile=\"verify:0\"} 1\n\
                    dyno_node_height 42\n\
                    dyno_consumer_frags_total{link=\"a->b\",tile=\"we\\\"ird\\\\x\"} 7 1700000000\n\
                    dyno_x{a=\"1\",} +Inf\n";
        let s = parse_exposition(text).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!((s[0].label("tile"), s[0].value), (Some("verify:0"), 1.0));
        assert_eq!(
            (s[1].name.as_str(), s[1].labels.len(), s[1].value),
            ("dyno_node_height", 0, 42.0)
        );
        assert_eq!(s[2].label("tile"), Some("we\"ird\\x"));
        assert_eq!(s[2].value, 7.0);
        assert_eq!(s[3].value, f64::INFINITY);
    }

    #[test]
    fn a_broken_line_is_named() {
        let err = parse_exposition("ok 1\nbroken{a=\"1\" 2\n").unwrap_err();
        assert!(err.to_string().starts_with("line 2:"), "{err}");
        assert!(parse_exposition("x notanumber\n").is_err());
    }

    #[test]
    fn label_values_may_hold_spaces_braces_and_commas_and_exemplars_are_skipped() {
        let s = sample_line(
            "x_bucket{ le = \"0.5\" , path=\"/a b{c},d\"} 3 # {trace_id=\"1\"} 0.4 1.7e9",
        )
        .unwrap();
        assert_eq!(s.label("le"), Some("0.5"));
        assert_eq!(s.label("path"), Some("/a b{c},d"));
        assert_eq!(s.value, 3.0);
        assert_eq!(sample_line("go_x 1e+06").unwrap().value, 1e6);
        assert!(sample_line("x").is_none());
        assert_eq!(
            type_line("# TYPE x_total counter"),
            Some(("x_total", "counter"))
        );
        assert_eq!(type_line("# HELP x_total counter"), None);
    }
}
