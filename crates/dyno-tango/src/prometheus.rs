//! Prometheus text exposition (format 0.0.4) of a [`Snapshot`]: `# HELP` and `# TYPE`
//! once per family, counters named `*_total`, labels `tile="verify:0"`,
//! `link="quic->verify"`. The families are descriptors written by dyno-obs' one writer
//! (which escapes label values); serving the text is dyno-obs' endpoint's job.

use dyno_obs::{Desc, TextWriter};

use crate::metrics::Bucket;
use crate::snapshot::{ConsumerSnapshot, LinkSnapshot, Snapshot, TileSnapshot};

/// Nanoseconds as seconds: Prometheus wants base units. An f64 keeps every nanosecond
/// up to about 104 days of run-loop time and 0.2 us of an epoch timestamp today.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

type TileFamily = (Desc, fn(&TileSnapshot) -> dyno_obs::Value);

/// The tile families with one sample per tile, in the order they are written.
const TILE_FAMILIES: [TileFamily; 5] = [
    (
        Desc::gauge("dyno_tile_up", "1 while the tile is in its run loop.").labels(&["tile"]),
        |t| (t.state == "run").into(),
    ),
    (
        Desc::gauge(
            "dyno_tile_heartbeat_timestamp_seconds",
            "Wall-clock time of the tile's last housekeeping, seconds since the Unix epoch.",
        )
        .labels(&["tile"]),
        |t| seconds(t.heartbeat_ns).into(),
    ),
    (
        Desc::gauge(
            "dyno_tile_in_backpressure",
            "1 while the tile waits for credits.",
        )
        .labels(&["tile"]),
        |t| t.in_backpressure.into(),
    ),
    (
        Desc::counter(
            "dyno_tile_backpressure_total",
            "Times the tile entered backpressure.",
        )
        .labels(&["tile"]),
        |t| t.backpressure_count.into(),
    ),
    (
        Desc::counter("dyno_tile_loop_iterations_total", "Run-loop iterations.").labels(&["tile"]),
        |t| t.loops.into(),
    ),
];

const TILE_CONTEXT_SWITCHES: Desc = Desc::counter(
    "dyno_tile_context_switches_total",
    "Context switches of the tile thread.",
)
.labels(&["tile", "kind"]);

const TILE_TIME: Desc = Desc::counter(
    "dyno_tile_time_seconds_total",
    "Run-loop time in seconds by exclusive category (the categories sum to the loop time).",
)
.labels(&["tile", "bucket"]);

type LinkFamily = (Desc, fn(&LinkSnapshot) -> u64);

/// The link families, one sample per link.
const LINK_FAMILIES: [LinkFamily; 4] = [
    (
        Desc::counter("dyno_link_frags_total", "Frags published on the link.").labels(&["link"]),
        |l| l.counters.frags,
    ),
    (
        Desc::counter(
            "dyno_link_bytes_total",
            "Payload bytes published on the link.",
        )
        .labels(&["link"]),
        |l| l.counters.bytes,
    ),
    (
        Desc::gauge("dyno_link_tx_seq", "Producer's next sequence number.").labels(&["link"]),
        |l| l.tx_seq,
    ),
    (
        Desc::gauge("dyno_link_depth", "Frag records in the link's ring.").labels(&["link"]),
        |l| l.depth,
    ),
];

type ConsumerFamily = (Desc, fn(&ConsumerSnapshot) -> u64);

const CONSUMER: &[&str] = &["link", "tile"];

/// The consumer families before `dyno_consumer_filtered_total`, one sample per consumer.
const CONSUMER_FAMILIES_READ: [ConsumerFamily; 2] = [
    (
        Desc::counter("dyno_consumer_frags_total", "Frags read by the consumer.").labels(CONSUMER),
        |c| c.counters.frags,
    ),
    (
        Desc::counter(
            "dyno_consumer_bytes_total",
            "Payload bytes read by the consumer.",
        )
        .labels(CONSUMER),
        |c| c.counters.bytes,
    ),
];

const CONSUMER_FILTERED: Desc = Desc::counter(
    "dyno_consumer_filtered_total",
    "Frags the consumer filtered out.",
)
.labels(&["link", "tile", "stage"]);

/// The consumer families after `dyno_consumer_filtered_total`.
const CONSUMER_FAMILIES_REST: [ConsumerFamily; 5] = [
    (
        Desc::counter(
            "dyno_consumer_overrun_polling_frags_total",
            "Frags lost because the consumer was overrun while polling.",
        )
        .labels(CONSUMER),
        |c| c.counters.ovrnp,
    ),
    (
        Desc::counter(
            "dyno_consumer_overrun_reading_frags_total",
            "Frags lost because they were overwritten while being read.",
        )
        .labels(CONSUMER),
        |c| c.counters.ovrnr,
    ),
    (
        Desc::counter(
            "dyno_consumer_slow_total",
            "Times the consumer was the slowest while its producer was backpressured.",
        )
        .labels(CONSUMER),
        |c| c.slow,
    ),
    (
        Desc::gauge(
            "dyno_consumer_reliable",
            "1 when the consumer backpressures its producer.",
        )
        .labels(CONSUMER),
        |c| c.reliable.into(),
    ),
    (
        Desc::gauge("dyno_consumer_rx_seq", "Consumer's next sequence number.").labels(CONSUMER),
        |c| c.rx_seq,
    ),
];

/// Renders `s` in the Prometheus text format.
pub fn prometheus_text(s: &Snapshot) -> String {
    let mut w = TextWriter::new();
    tile_families(&mut w, &s.tiles);
    for (desc, value) in &LINK_FAMILIES {
        let mut f = w.family(desc);
        for l in &s.links {
            f.sample(&[&l.name], value(l));
        }
    }
    consumer_families(&mut w, &s.consumers);
    w.finish()
}

fn tile_families(w: &mut TextWriter, tiles: &[TileSnapshot]) {
    for (desc, value) in &TILE_FAMILIES {
        let mut f = w.family(desc);
        for t in tiles {
            f.sample(&[&t.name], value(t));
        }
    }
    let mut f = w.family(&TILE_CONTEXT_SWITCHES);
    for t in tiles {
        f.sample(&[&t.name, "voluntary"], t.ctx_voluntary);
        f.sample(&[&t.name, "involuntary"], t.ctx_involuntary);
    }
    let mut f = w.family(&TILE_TIME);
    for t in tiles {
        for b in Bucket::ALL {
            f.sample(&[&t.name, b.name()], seconds(t.time_ns.get(b)));
        }
    }
}

fn consumer_families(w: &mut TextWriter, consumers: &[ConsumerSnapshot]) {
    let per_consumer = |w: &mut TextWriter, families: &[ConsumerFamily]| {
        for (desc, value) in families {
            let mut f = w.family(desc);
            for c in consumers {
                f.sample(&[&c.link, &c.tile], value(c));
            }
        }
    };
    per_consumer(w, &CONSUMER_FAMILIES_READ);
    let mut f = w.family(&CONSUMER_FILTERED);
    for c in consumers {
        f.sample(&[&c.link, &c.tile, "before_read"], c.counters.filt1);
        f.sample(&[&c.link, &c.tile, "after_read"], c.counters.filt2);
    }
    per_consumer(w, &CONSUMER_FAMILIES_REST);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{ConsumerCounters, ProducerCounters};
    use crate::snapshot::{ConsumerSnapshot, LinkSnapshot, TileSnapshot, TimeSplit};
    use std::collections::HashMap;

    fn sample_snapshot() -> Snapshot {
        Snapshot {
            workspace: "/dev/shm/dyno-t".into(),
            pid: 1,
            creator_alive: true,
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
                alive: true,
                in_backpressure: true,
                backpressure_count: 7,
                ctx_voluntary: 1,
                ctx_involuntary: 2,
                loops: 100,
                time_ns: TimeSplit::from_array([1, 2, 3, 4, 5, 6, 7, 8]),
            }],
            links: vec![LinkSnapshot {
                name: "quic->verify".into(),
                counters: ProducerCounters {
                    frags: 10,
                    bytes: 640,
                },
                tx_seq: 10,
                depth: 16,
                mtu: 64,
            }],
            consumers: vec![ConsumerSnapshot {
                link: "quic->verify".into(),
                tile: "we\"ird\\name".into(),
                reliable: false,
                counters: ConsumerCounters {
                    frags: 4,
                    bytes: 256,
                    filt1: 1,
                    filt2: 2,
                    ovrnp: 3,
                    ovrnr: 4,
                },
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
