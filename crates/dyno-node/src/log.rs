//! The node's event log: JSON lines, wall-clock nanoseconds (the contract in
//! docs/node.md, "The node log").
//!
//! Writes are buffered and flushed once a second by the node loop and on stop, so
//! logging an event costs a formatted line in memory, not a system call.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// Unix time in ns (CLOCK_REALTIME), the `ts_ns` of events.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// An event log (or none: events are dropped, for nodes run without `--node-log`).
#[derive(Debug)]
pub struct EventLog {
    node: String,
    out: Option<Mutex<(std::io::BufWriter<std::fs::File>, PathBuf)>>,
}

impl EventLog {
    /// A log appending to `path` (created if missing), or a silent one.
    pub fn open(node: &str, path: Option<&Path>) -> Result<EventLog> {
        let out = match path {
            None => None,
            Some(p) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|source| Error::Io {
                        path: p.to_path_buf(),
                        source,
                    })?;
                Some(Mutex::new((std::io::BufWriter::new(f), p.to_path_buf())))
            }
        };
        Ok(EventLog {
            node: node.to_string(),
            out,
        })
    }

    /// Writes an event line now: `kind`, `event`, `ts_ns`, `node` and `extra`.
    pub fn event(&self, event: &str, extra: Value) {
        self.event_at(event, now_ns(), extra);
    }

    /// Writes an event line with a given timestamp (an arrival time the transport took).
    pub fn event_at(&self, event: &str, ts_ns: u64, extra: Value) {
        if self.out.is_none() {
            return;
        }
        let mut m = Map::new();
        m.insert("kind".into(), json!("event"));
        m.insert("event".into(), json!(event));
        m.insert("ts_ns".into(), json!(ts_ns));
        m.insert("node".into(), json!(self.node));
        if let Value::Object(x) = extra {
            m.extend(x);
        }
        self.line(&Value::Object(m));
    }

    /// Writes any JSON line (the per-second and per-block lines).
    pub fn line(&self, v: &Value) {
        if let Some(o) = &self.out {
            let mut g = o.lock().unwrap_or_else(|p| p.into_inner());
            // A full disk loses log lines, not the node: the error is seen at flush.
            let _ = writeln!(g.0, "{v}");
        }
    }

    /// Flushes buffered lines.
    pub fn flush(&self) -> Result<()> {
        if let Some(o) = &self.out {
            let mut g = o.lock().unwrap_or_else(|p| p.into_inner());
            let (w, p) = &mut *g;
            w.flush().map_err(|source| Error::Io {
                path: p.clone(),
                source,
            })?;
        }
        Ok(())
    }
}
