//! Reading the Prometheus text exposition format (0.0.4) that dyno's endpoints write:
//! `name{label="value",...} value [timestamp]` lines, `#` comments skipped.

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromSample {
    /// Metric name.
    pub name: String,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value (`NaN`, `+Inf` and `-Inf` are read as such).
    pub value: f64,
}

impl PromSample {
    /// The value of label `key`, if the sample has it.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an exposition; `Err` names the first line that is not a sample or a comment.
pub(crate) fn parse_exposition(text: &str) -> Result<Vec<PromSample>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(parse_line(line).ok_or_else(|| format!("line {}: `{line}`", i + 1))?);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Option<PromSample> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let (labels, rest) = if line[name_end..].starts_with('{') {
        parse_labels(&line[name_end + 1..])?
    } else {
        (Vec::new(), &line[name_end..])
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(PromSample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parses `k="v",...}` and returns the labels and what follows the closing brace.
fn parse_labels(mut rest: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.push((key.trim().to_string(), value));
        rest = &after[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(parse_exposition("x notanumber\n").is_err());
    }
}
