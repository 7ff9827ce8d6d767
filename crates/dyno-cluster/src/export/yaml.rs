//! A small YAML writer for manifests built as JSON values: block style, every string
//! double-quoted with JSON escapes (valid YAML), multi-line strings as literal blocks.

use serde_json::Value;

/// One YAML document (without the `---` separator).
pub fn document(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(serde_json::to_string(s).unwrap_or_default()),
        Value::Array(a) if a.is_empty() => Some("[]".into()),
        Value::Object(o) if o.is_empty() => Some("{}".into()),
        _ => None,
    }
}

fn literal_block(s: &str) -> bool {
    s.ends_with('\n')
        && !s.starts_with([' ', '\n'])
        && !s.ends_with("\n\n")
        && s.lines().all(|l| !l.ends_with(' '))
        && !s.contains(['\t', '\r'])
}

fn write_value(out: &mut String, value: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let key = serde_json::to_string(k).unwrap_or_default();
                write_entry(out, &format!("{pad}{key}:"), v, indent);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                write_entry(out, &format!("{pad}-"), v, indent);
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

fn write_entry(out: &mut String, head: &str, v: &Value, indent: usize) {
    out.push_str(head);
    match (scalar(v), v) {
        (_, Value::String(s)) if literal_block(s) => {
            out.push_str(" |\n");
            for line in s.lines() {
                out.push_str(&" ".repeat(indent + 2));
                out.push_str(line);
                out.push('\n');
            }
        }
        (Some(s), _) => {
            out.push(' ');
            out.push_str(&s);
            out.push('\n');
        }
        (None, _) => {
            out.push('\n');
            write_value(out, v, indent + 2);
        }
    }
}
