//! JSON lines a node or its load command writes: each numeric field of each line is one
//! observation. Read by the executor (a node's `jsonl` file) and by a load's `output`.

use crate::execution::{guess_direction, Series, SeriesKind};
use dyno_model::{Metric, Unit};
use dyno_proc::lines::{BoundedLines, Dropped, MAX_BODY_BYTES};
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The current length of the file (0 when it does not exist yet).
pub fn offset(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// What a window of a JSON-lines file gave.
#[derive(Debug, Default)]
pub struct Window {
    /// One series per numeric field.
    pub series: Vec<Series>,
    /// What was not read, for the execution's warnings: lines over the line cap, a
    /// window over the body cap.
    pub notes: Vec<String>,
}

/// Observations written between offsets `start` and `end` (the measured window), one
/// series per numeric field. A field named `t` (seconds) gives the time of the line's
/// observations; otherwise the line index. A line cut by either offset does not parse
/// and is skipped. Read in bounds: lines over dyno-proc's line cap are skipped, and no
/// more than its body cap of the window is read; the notes say what was left out.
pub fn read_range(path: &Path, start: u64, end: u64) -> std::io::Result<Window> {
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(start))?;
    let length = end.saturating_sub(start);
    let mut reader = BoundedLines::new(BufReader::new(f.take(length.min(MAX_BODY_BYTES))));
    let mut series = SeriesByField::default();
    let mut line = Vec::new();
    let mut i = 0;
    let mut cut = 0;
    while reader.next_line(&mut line)? {
        // A cut line is no JSON: it is counted, not parsed.
        if reader.dropped().cut_lines == cut {
            series.add(i, &String::from_utf8_lossy(&line));
        }
        cut = reader.dropped().cut_lines;
        i += 1;
    }
    let mut notes = Vec::new();
    if let Some(d) = reader.dropped().describe() {
        notes.push(format!("{}: {d} (not read)", path.display()));
    }
    if length > MAX_BODY_BYTES {
        notes.push(format!(
            "{}: only the first {} of the window's {} were read",
            path.display(),
            dyno_proc::lines::bytes(MAX_BODY_BYTES),
            dyno_proc::lines::bytes(length)
        ));
    }
    Ok(Window {
        series: series.finish(),
        notes,
    })
}

/// One series per numeric field, in the order the fields first appear in the text
/// (the order the node wrote them, e.g. its stages in pipeline order). Lines with
/// `"kind":"event"` are skipped, and so are lines over dyno-proc's line cap.
pub fn parse(text: &str) -> Vec<Series> {
    parse_counted(text).0
}

/// [`parse`], with what the line cap left out.
pub fn parse_counted(text: &str) -> (Vec<Series>, Dropped) {
    let (lines, dropped) = dyno_proc::lines::short_lines(text);
    let mut series = SeriesByField::default();
    for (i, line) in lines {
        series.add(i, line);
    }
    (series.finish(), dropped)
}

/// Series by field name, each with where its field first appeared (line, column).
#[derive(Default)]
struct SeriesByField(BTreeMap<String, ((usize, usize), Series)>);

impl SeriesByField {
    /// Line `i`'s observations.
    fn add(&mut self, i: usize, line: &str) {
        let Ok(serde_json::Value::Object(obj)) = serde_json::from_str(line) else {
            return;
        };
        // Propagation events (`"kind":"event"`, see the node-log schema) carry ids,
        // slots and wall-clock nanoseconds, not observations of the node's speed.
        if obj.get("kind").and_then(|k| k.as_str()) == Some("event") {
            return;
        }
        let t = obj.get("t").and_then(|v| v.as_f64()).unwrap_or(i as f64);
        for (k, v) in obj.iter().filter(|(k, _)| k.as_str() != "t") {
            let Some(v) = v.as_f64() else { continue };
            let name = format!("jsonl:{k}");
            self.0
                .entry(name.clone())
                .or_insert_with(|| {
                    let at = line.find(&format!("\"{k}\"")).unwrap_or(usize::MAX);
                    let series = Series {
                        metric: Metric::new(name, unit_of(k), guess_direction(k)),
                        kind: SeriesKind::Observations,
                        points: Vec::new(),
                    };
                    ((i, at), series)
                })
                .1
                .points
                .push((t, v));
        }
    }

    fn finish(self) -> Vec<Series> {
        let mut series: Vec<((usize, usize), Series)> = self.0.into_values().collect();
        series.sort_by_key(|(at, _)| *at);
        series.into_iter().map(|(_, s)| s).collect()
    }
}

/// The unit of a field, from its name: `..._per_s` and `tps` are rates, `..._s` and
/// latencies seconds, `..._ns` nanoseconds, `..._bytes` bytes, the rest counts.
fn unit_of(field: &str) -> Unit {
    if field.ends_with("_per_s") || field == "tps" || field.ends_with("_tps") {
        Unit::PerSecond
    } else if field.ends_with("_s") || field.contains("latency") {
        Unit::Seconds
    } else if field.ends_with("_ns") {
        Unit::Nanoseconds
    } else if field.ends_with("_bytes") {
        Unit::Bytes
    } else {
        Unit::Count
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_window_without_newlines_is_read_in_bounds_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.jsonl");
        let mut text = String::from("{\"tps\": 5}\n");
        text.push_str(&"x".repeat(3 * dyno_proc::lines::MAX_LINE_BYTES));
        text.push_str("\n{\"tps\": 7}\n");
        std::fs::write(&path, &text).unwrap();
        let w = super::read_range(&path, 0, text.len() as u64).unwrap();
        assert_eq!(w.series.len(), 1);
        assert_eq!(w.series[0].points, vec![(0.0, 5.0), (2.0, 7.0)]);
        assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
        assert!(
            w.notes[0].ends_with("node.jsonl: 1 line over 64 KiB cut, 131.1 kB dropped (not read)"),
            "{:?}",
            w.notes
        );
    }

    #[test]
    fn numeric_fields_become_observations() {
        let s = super::parse(
            "{\"t\": 1.5, \"latency_s\": 0.2, \"block\": \"x\"}\nnot json\n{\"latency_s\": 0.4}\n",
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].metric.name, "jsonl:latency_s");
        assert_eq!(s[0].points, vec![(1.5, 0.2), (2.0, 0.4)]);
    }

    #[test]
    fn propagation_events_are_not_observations() {
        let s = super::parse(concat!(
            r#"{"kind":"second","t":1.0,"tps":2000.0}"#,
            "\n",
            r#"{"kind":"event","event":"forged","ts_ns":1700000000000000000,"node":"n1","slot":7,"block":"ab","height":7,"parent":"aa","txs":512,"bytes":9000}"#,
            "\n",
            r#"{"kind":"event","event":"adopted","ts_ns":1700000000000100000,"node":"n2","slot":7,"block":"ab","height":7,"state_hash":"cd"}"#,
            "\n",
        ));
        let names: Vec<&str> = s.iter().map(|s| s.metric.name.as_str()).collect();
        assert_eq!(names, ["jsonl:tps"]);
    }

    #[test]
    fn the_reference_node_log_is_read_in_the_order_it_was_written() {
        use dyno_model::{Direction, Unit};
        let log = concat!(
            r#"{"t": 3.21, "kind": "block", "slot": 7, "txs": 512, "cost_units": 123456, "stage_leader_check_s": 1.2e-5, "stage_ticking_s": 0.38, "stage_snapshot_s": 4.0e-5, "stage_forged_s": 0.39, "stage_adopted_s": 0.0021}"#,
            "\n",
            r#"{"t": 4.0, "kind": "second", "tps": 1998.0, "latency_p50_s": 0.0031, "latency_p90_s": 0.0052, "latency_p99_s": 0.0094}"#,
            "\n",
        );
        let s = super::parse(log);
        let names: Vec<&str> = s.iter().map(|s| s.metric.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "jsonl:slot",
                "jsonl:txs",
                "jsonl:cost_units",
                "jsonl:stage_leader_check_s",
                "jsonl:stage_ticking_s",
                "jsonl:stage_snapshot_s",
                "jsonl:stage_forged_s",
                "jsonl:stage_adopted_s",
                "jsonl:tps",
                "jsonl:latency_p50_s",
                "jsonl:latency_p90_s",
                "jsonl:latency_p99_s",
            ]
        );
        let get = |n: &str| s.iter().find(|s| s.metric.name == n).unwrap();
        assert_eq!(get("jsonl:tps").metric.unit, Unit::PerSecond);
        assert_eq!(get("jsonl:tps").metric.direction, Direction::HigherIsBetter);
        assert_eq!(get("jsonl:tps").points, vec![(4.0, 1998.0)]);
        let ticking = &get("jsonl:stage_ticking_s").metric;
        assert_eq!(
            (ticking.unit, ticking.direction),
            (Unit::Seconds, Direction::LowerIsBetter)
        );
        let p99 = &get("jsonl:latency_p99_s").metric;
        assert_eq!(
            (p99.unit, p99.direction),
            (Unit::Seconds, Direction::LowerIsBetter)
        );
        assert_eq!(get("jsonl:txs").metric.unit, Unit::Count);
        // `slot` is read here and dropped by the declarations step unless declared.
        let mut kept = s.clone();
        crate::declared::apply(&Default::default(), &mut kept);
        assert_eq!(kept.len(), s.len() - 1);
        assert!(kept.iter().all(|s| s.metric.name != "jsonl:slot"));
    }
}
