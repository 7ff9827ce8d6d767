//! The Prometheus text exposition (format 0.0.4), written from metric descriptors.
//!
//! A family is declared once as a [`Desc`] (name, help, counter or gauge, label names),
//! usually a `const` next to the code that knows the figure; [`TextWriter::family`]
//! writes its `# HELP` and `# TYPE` lines, and each sample names only its label values,
//! in the descriptor's order. Label values are escaped (`\`, `"`, newline) and so is the
//! help text (`\`, newline), so a tile, peer or reason name can hold anything.

use std::fmt::{self, Write as _};

/// The type of a family, as its `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up (named `*_total`).
    Counter,
    /// A level.
    Gauge,
}

impl MetricKind {
    /// The word of the `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// A metric family's descriptor: everything about it but its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc {
    /// Family name, e.g. `dyno_link_frags_total`.
    pub name: &'static str,
    /// One line of help (escaped when written).
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// Label names, in the order every sample gives its values.
    pub labels: &'static [&'static str],
}

impl Desc {
    /// A counter without labels.
    pub const fn counter(name: &'static str, help: &'static str) -> Desc {
        Desc {
            name,
            help,
            kind: MetricKind::Counter,
            labels: &[],
        }
    }

    /// A gauge without labels.
    pub const fn gauge(name: &'static str, help: &'static str) -> Desc {
        Desc {
            name,
            help,
            kind: MetricKind::Gauge,
            labels: &[],
        }
    }

    /// The same family with these label names.
    pub const fn labels(self, labels: &'static [&'static str]) -> Desc {
        Desc { labels, ..self }
    }
}

/// A sample's value: integers are written exactly, floats as Rust writes them (with
/// `+Inf`, `-Inf` and `NaN` spelled as the format wants).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A count.
    Int(u64),
    /// Anything else (seconds, rates).
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(v as u64)
    }
}

impl From<u8> for Value {
    fn from(v: u8) -> Value {
        Value::Int(v.into())
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Value::Float(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Value::Float(v) if v.is_nan() => f.write_str("NaN"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

/// Escapes a label value: backslash, double quote and newline.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes help text: backslash and newline (quotes stay as they are).
pub fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// `{k="v",...}` with the values escaped, or nothing without labels.
pub fn render_labels<K: AsRef<str>, V: AsRef<str>>(labels: &[(K, V)]) -> String {
    let mut out = String::new();
    write_labels(
        &mut out,
        labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
    );
    out
}

fn write_labels<'a>(out: &mut String, labels: impl Iterator<Item = (&'a str, &'a str)>) {
    let mut first = true;
    for (k, v) in labels {
        out.push(if first { '{' } else { ',' });
        first = false;
        let _ = write!(out, "{k}=\"{}\"", escape_label_value(v));
    }
    if !first {
        out.push('}');
    }
}

/// An exposition being written, family by family.
#[derive(Debug, Default)]
pub struct TextWriter {
    out: String,
}

impl TextWriter {
    /// An empty exposition.
    pub fn new() -> TextWriter {
        TextWriter::default()
    }

    /// Writes the `# HELP` and `# TYPE` lines of `desc`; its samples follow through the
    /// returned family (none is fine: the family is declared and empty).
    pub fn family<'w>(&'w mut self, desc: &'w Desc) -> Family<'w> {
        let _ = writeln!(self.out, "# HELP {} {}", desc.name, escape_help(desc.help));
        let _ = writeln!(self.out, "# TYPE {} {}", desc.name, desc.kind.as_str());
        Family {
            out: &mut self.out,
            desc,
        }
    }

    /// A family of one sample without labels.
    pub fn single(&mut self, desc: &Desc, value: impl Into<Value>) {
        self.family(desc).sample(&[], value);
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// The samples of one family (see [`TextWriter::family`]).
#[derive(Debug)]
pub struct Family<'w> {
    out: &'w mut String,
    desc: &'w Desc,
}

impl Family<'_> {
    /// One sample; `label_values` in the order of the descriptor's label names.
    pub fn sample(&mut self, label_values: &[&str], value: impl Into<Value>) -> &mut Self {
        debug_assert_eq!(
            label_values.len(),
            self.desc.labels.len(),
            "label values of {}",
            self.desc.name
        );
        let labels = self
            .desc
            .labels
            .iter()
            .copied()
            .zip(label_values.iter().copied());
        self.line(labels, value.into())
    }

    /// One sample whose label names are its own, for a family whose labels are chosen
    /// by the caller (`dyno_build_info`); the descriptor then lists none.
    pub fn sample_labelled(
        &mut self,
        labels: &[(&str, &str)],
        value: impl Into<Value>,
    ) -> &mut Self {
        self.line(labels.iter().copied(), value.into())
    }

    fn line<'a>(
        &mut self,
        labels: impl Iterator<Item = (&'a str, &'a str)>,
        v: Value,
    ) -> &mut Self {
        self.out.push_str(self.desc.name);
        write_labels(self.out, labels);
        let _ = writeln!(self.out, " {v}");
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::parse_exposition;

    const PEER: Desc = Desc::counter(
        "dyno_test_refused_total",
        "Refused \\ by \"reason\"\nsecond line.",
    )
    .labels(&["peer", "reason"]);

    #[test]
    fn a_label_value_with_quote_backslash_and_newline_is_escaped_and_read_back() {
        let nasty = "we\"ird\\na\nme";
        let mut w = TextWriter::new();
        w.family(&PEER).sample(&[nasty, "plain"], 7u64);
        let text = w.finish();
        assert_eq!(
            text,
            "# HELP dyno_test_refused_total Refused \\\\ by \"reason\"\\nsecond line.\n\
             # TYPE dyno_test_refused_total counter\n\
             dyno_test_refused_total{peer=\"we\\\"ird\\\\na\\nme\",reason=\"plain\"} 7\n"
        );
        // Every line stays one line, and the reader gives back the value as it was.
        assert_eq!(text.lines().count(), 3);
        let s = parse_exposition(&text).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "dyno_test_refused_total");
        assert_eq!(s[0].label("peer"), Some(nasty));
        assert_eq!(s[0].label("reason"), Some("plain"));
        assert_eq!(s[0].value, 7.0);
        assert_eq!(
            render_labels(&s[0].labels),
            "{peer=\"we\\\"ird\\\\na\\nme\",reason=\"plain\"}"
        );
    }

    #[test]
    fn values_are_written_exactly_and_the_special_floats_as_the_format_spells_them() {
        let text = |v: Value| v.to_string();
        assert_eq!(text(u64::MAX.into()), "18446744073709551615");
        assert_eq!(text(true.into()), "1");
        assert_eq!(text(0.000_000_008.into()), "0.000000008");
        assert_eq!(text(1999.5.into()), "1999.5");
        assert_eq!(text(3.0.into()), "3");
        assert_eq!(text(f64::INFINITY.into()), "+Inf");
        assert_eq!(text(f64::NEG_INFINITY.into()), "-Inf");
        assert_eq!(text(f64::NAN.into()), "NaN");
        for v in ["+Inf", "-Inf", "3", "0.000000008"] {
            let line = format!("x {v}");
            let read = parse_exposition(&line).unwrap()[0].value;
            assert_eq!(Value::Float(read).to_string(), v);
        }
    }

    #[test]
    fn a_family_without_samples_is_declared_and_caller_labels_are_kept_in_order() {
        const EMPTY: Desc = Desc::gauge("dyno_test_empty", "Nothing yet.");
        const INFO: Desc = Desc::gauge("dyno_test_info", "Always 1.");
        let mut w = TextWriter::new();
        w.family(&EMPTY);
        w.family(&INFO)
            .sample_labelled(&[("version", "0.1.0"), ("profile", "release")], 1u8);
        w.single(&EMPTY, 2.5);
        assert_eq!(
            w.finish(),
            "# HELP dyno_test_empty Nothing yet.\n# TYPE dyno_test_empty gauge\n\
             # HELP dyno_test_info Always 1.\n# TYPE dyno_test_info gauge\n\
             dyno_test_info{version=\"0.1.0\",profile=\"release\"} 1\n\
             # HELP dyno_test_empty Nothing yet.\n# TYPE dyno_test_empty gauge\n\
             dyno_test_empty 2.5\n"
        );
    }
}
