//! Prometheus text exposition (format 0.0.4) of a [`Snapshot`]: `# HELP` and `# TYPE`
//! once per family, counters named `*_total`, labels `tile="verify:0"`,
//! `link="quic->verify"`. Returns the text; serving it is the binary's job.

use std::fmt::Write;

use crate::metrics::Bucket;
use crate::snapshot::Snapshot;

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
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

struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

/// Nanoseconds as seconds: Prometheus wants base units. An f64 keeps every nanosecond
/// up to about 104 days of run-loop time and 0.2 us of an epoch timestamp today.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The `dyno_build_info` gauge (always 1) whose labels say which build serves the
/// metrics, e.g. `[("version", "0.1.0"), ("profile", "release")]`, as Prometheus
/// exporters conventionally do, so a scrape can be joined with the build that made it.
pub fn build_info_text(labels: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut f = Family { out: &mut out };
    f.head(
        "dyno_build_info",
        "gauge",
        "Always 1; the labels name the dyno build serving these metrics.",
    );
    f.sample("dyno_build_info", labels, 1);
    out
}

/// Renders `s` in the Prometheus text format.
pub fn prometheus_text(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut f = Family { out: &mut out };

    macro_rules! family {
        ($name:expr, $kind:expr, $help:expr, $items:expr, |$it:ident| $labels:expr, $value:expr) => {
            f.head($name, $kind, $help);
            for $it in $items {
                f.sample($name, &$labels, $value);
            }
        };
    }

    family!(
        "dyno_tile_up",
        "gauge",
        "1 while the tile is in its run loop.",
        &s.tiles,
        |t| [("tile", t.name.as_str())],
        u8::from(t.state == "run")
    );
    family!(
        "dyno_tile_heartbeat_timestamp_seconds",
        "gauge",
        "Wall-clock time of the tile's last housekeeping, seconds since the Unix epoch.",
        &s.tiles,
        |t| [("tile", t.name.as_str())],
        seconds(t.heartbeat_ns)
    );
    family!(
        "dyno_tile_in_backpressure",
        "gauge",
        "1 while the tile waits for credits.",
        &s.tiles,
        |t| [("tile", t.name.as_str())],
        u8::from(t.in_backpressure)
    );
    family!(
        "dyno_tile_backpressure_total",
        "counter",
        "Times the tile entered backpressure.",
        &s.tiles,
        |t| [("tile", t.name.as_str())],
        t.backpressure_count
    );
    family!(
        "dyno_tile_loop_iterations_total",
        "counter",
        "Run-loop iterations.",
        &s.tiles,
        |t| [("tile", t.name.as_str())],
        t.loops
    );
    f.head(
        "dyno_tile_context_switches_total",
        "counter",
        "Context switches of the tile thread.",
    );
    for t in &s.tiles {
        let name = "dyno_tile_context_switches_total";
        f.sample(
            name,
            &[("tile", &t.name), ("kind", "voluntary")],
            t.ctx_voluntary,
        );
        f.sample(
            name,
            &[("tile", &t.name), ("kind", "involuntary")],
            t.ctx_involuntary,
        );
    }
    f.head(
        "dyno_tile_time_seconds_total",
        "counter",
        "Run-loop time in seconds by exclusive category (the categories sum to the loop time).",
    );
    for t in &s.tiles {
        for b in Bucket::ALL {
            f.sample(
                "dyno_tile_time_seconds_total",
                &[("tile", &t.name), ("bucket", b.name())],
                seconds(t.time_ns.get(b)),
            );
        }
    }

    family!(
        "dyno_link_frags_total",
        "counter",
        "Frags published on the link.",
        &s.links,
        |l| [("link", l.name.as_str())],
        l.frags
    );
    family!(
        "dyno_link_bytes_total",
        "counter",
        "Payload bytes published on the link.",
        &s.links,
        |l| [("link", l.name.as_str())],
        l.bytes
    );
    family!(
        "dyno_link_tx_seq",
        "gauge",
        "Producer's next sequence number.",
        &s.links,
        |l| [("link", l.name.as_str())],
        l.tx_seq
    );
    family!(
        "dyno_link_depth",
        "gauge",
        "Frag records in the link's ring.",
        &s.links,
        |l| [("link", l.name.as_str())],
        l.depth
    );

    macro_rules! consumer_family {
        ($name:expr, $kind:expr, $help:expr, |$c:ident| $value:expr) => {
            f.head($name, $kind, $help);
            for $c in &s.consumers {
                f.sample(
                    $name,
                    &[("link", $c.link.as_str()), ("tile", $c.tile.as_str())],
                    $value,
                );
            }
        };
    }
    consumer_family!(
        "dyno_consumer_frags_total",
        "counter",
        "Frags read by the consumer.",
        |c| c.frags
    );
    consumer_family!(
        "dyno_consumer_bytes_total",
        "counter",
        "Payload bytes read by the consumer.",
        |c| c.bytes
    );
    f.head(
        "dyno_consumer_filtered_total",
        "counter",
        "Frags the consumer filtered out.",
    );
    for c in &s.consumers {
        let name = "dyno_consumer_filtered_total";
        let base = [("link", c.link.as_str()), ("tile", c.tile.as_str())];
        f.sample(name, &[base[0], base[1], ("stage", "before_read")], c.filt1);
        f.sample(name, &[base[0], base[1], ("stage", "after_read")], c.filt2);
    }
    consumer_family!(
        "dyno_consumer_overrun_polling_frags_total",
        "counter",
        "Frags lost because the consumer was overrun while polling.",
        |c| c.ovrnp
    );
    consumer_family!(
        "dyno_consumer_overrun_reading_frags_total",
        "counter",
        "Frags lost because they were overwritten while being read.",
        |c| c.ovrnr
    );
    consumer_family!(
        "dyno_consumer_slow_total",
        "counter",
        "Times the consumer was the slowest while its producer was backpressured.",
        |c| c.slow
    );
    consumer_family!(
        "dyno_consumer_reliable",
        "gauge",
        "1 when the consumer backpressures its producer.",
        |c| u8::from(c.reliable)
    );
    consumer_family!(
        "dyno_consumer_rx_seq",
        "gauge",
        "Consumer's next sequence number.",
        |c| c.rx_seq
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{ConsumerSnapshot, LinkSnapshot, TileSnapshot, TimeSplit};
    use std::collections::HashMap;

    fn sample_snapshot() -> Snapshot {
        Snapshot {
            workspace: "/dev/shm/dyno-t".into(),
            pid: 1,
            generation: 2,
            taken_ns: 3,
            since_ns: None,
            tiles: vec![TileSnapshot {
                name: "verify:0".into(),
                pid: 1,
                tid: 2,
                cpu: Some(1),
                heartbeat_ns: 5,
                state: "run".into(),
                in_backpressure: true,
                backpressure_count: 7,
                ctx_voluntary: 1,
                ctx_involuntary: 2,
                loops: 100,
                time_ns: TimeSplit::from_array([1, 2, 3, 4, 5, 6, 7, 8]),
            }],
            links: vec![LinkSnapshot {
                name: "quic->verify".into(),
                frags: 10,
                bytes: 640,
                tx_seq: 10,
                depth: 16,
                mtu: 64,
            }],
            consumers: vec![ConsumerSnapshot {
                link: "quic->verify".into(),
                tile: "we\"ird\\name".into(),
                reliable: false,
                frags: 4,
                bytes: 256,
                filt1: 1,
                filt2: 2,
                ovrnp: 3,
                ovrnr: 4,
                slow: 0,
                rx_seq: 9,
            }],
        }
    }

    fn valid_name(n: &str) -> bool {
        let mut chars = n.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// Parses `k="v",...`; returns the decoded pairs or None when malformed.
    fn parse_labels(s: &str) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let (k, after) = rest.split_once("=\"")?;
            if !valid_name(k) {
                return None;
            }
            let mut v = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next()? {
                    (_, '\\') => match chars.next()?.1 {
                        '\\' => v.push('\\'),
                        '"' => v.push('"'),
                        'n' => v.push('\n'),
                        _ => return None,
                    },
                    (i, '"') => break i,
                    (_, c) => v.push(c),
                }
            };
            out.push((k.to_string(), v));
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        Some(out)
    }

    #[test]
    fn build_info_is_a_gauge_of_one_with_the_build_in_its_labels() {
        let text = build_info_text(&[("version", "0.1.0"), ("profile", "release")]);
        assert_eq!(
            text,
            "# HELP dyno_build_info Always 1; the labels name the dyno build serving these metrics.\n\
             # TYPE dyno_build_info gauge\n\
             dyno_build_info{version=\"0.1.0\",profile=\"release\"} 1\n"
        );
    }

    #[test]
    fn exposition_is_valid_line_by_line() {
        let text = prometheus_text(&sample_snapshot());
        let mut types: HashMap<String, String> = HashMap::new();
        let mut helps = 0;
        let mut samples = 0;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP has text");
                assert!(valid_name(name) && !help.is_empty(), "{line}");
                assert!(!types.contains_key(name), "HELP before TYPE: {line}");
                helps += 1;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE has a kind");
                assert!(kind == "counter" || kind == "gauge", "{line}");
                assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
                assert!(
                    types.insert(name.into(), kind.into()).is_none(),
                    "one TYPE per family"
                );
            } else {
                let (series, value) = line.rsplit_once(' ').expect("sample has a value");
                value
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("numeric value: {line}"));
                let (name, labels) = match series.split_once('{') {
                    Some((n, l)) => (n, l.strip_suffix('}').expect("closing brace")),
                    None => (series, ""),
                };
                assert!(valid_name(name), "{line}");
                assert!(types.contains_key(name), "TYPE precedes samples: {line}");
                let labels = parse_labels(labels).unwrap_or_else(|| panic!("labels: {line}"));
                assert!(!labels.is_empty());
                samples += 1;
            }
        }
        assert_eq!(helps, types.len());
        assert!(text.contains(
            "dyno_tile_time_seconds_total{tile=\"verify:0\",bucket=\"finish\"} 0.000000008\n"
        ));
        assert!(
            text.contains("dyno_tile_heartbeat_timestamp_seconds{tile=\"verify:0\"} 0.000000005\n")
        );
        assert!(text.contains("dyno_link_frags_total{link=\"quic->verify\"} 10\n"));
        assert!(text.contains(
            "dyno_consumer_filtered_total{link=\"quic->verify\",tile=\"we\\\"ird\\\\name\",stage=\"after_read\"} 2\n"
        ));
        // 5 one-sample tile families + 2 ctx + 8 buckets + 4 link + 7 consumer + 2 filtered.
        assert_eq!(samples, 5 + 2 + 8 + 4 + 7 + 2);
    }
}
