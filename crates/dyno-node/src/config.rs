//! The node config file (one per node; cluster tooling generates them), flat TOML:
//!
//! ```toml
//! id = "n1"                          # a validator id of the genesis
//! genesis = "genesis.toml"           # relative to this file
//! peer_listen = "127.0.0.1:7101"     # TCP, other nodes dial it
//! ingress_listen = "127.0.0.1:7201"  # QUIC, dyno load sends here (optional)
//! metrics_listen = "127.0.0.1:7301"  # HTTP /metrics and /ready (optional)
//! node_log = "n1.jsonl"              # event log, relative to this file (optional)
//! max_block_txs = 20000              # optional
//! mempool_capacity = 100000          # optional
//! lead_until_slot = 120              # optional: forge in no slot after this one
//!
//! [[peers]]
//! id = "n2"
//! addr = "127.0.0.1:7102"
//! latency_ms = 20        # one-way, this node -> n2 (optional, default 0)
//! bandwidth_mbit = 100   # this node -> n2 (optional, default unlimited)
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{from_toml, line_of, Error, Result};
use crate::genesis::Genesis;

/// One peer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerEntry {
    /// Its node id (a validator of the genesis).
    pub id: String,
    /// Its peer listen address.
    pub addr: SocketAddr,
    /// One-way latency of the link from this node, ms.
    #[serde(default)]
    pub latency_ms: f64,
    /// Bandwidth of the link from this node, Mbit/s (none: unlimited).
    #[serde(default)]
    pub bandwidth_mbit: Option<f64>,
}

/// A node config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Node id.
    pub id: String,
    /// Genesis file.
    pub genesis: PathBuf,
    /// Peer listener.
    pub peer_listen: SocketAddr,
    /// QUIC ingress listener.
    #[serde(default)]
    pub ingress_listen: Option<SocketAddr>,
    /// Metrics and readiness listener.
    #[serde(default)]
    pub metrics_listen: Option<SocketAddr>,
    /// Event log file.
    #[serde(default)]
    pub node_log: Option<PathBuf>,
    /// Most transactions per block.
    #[serde(default = "default_max_block_txs")]
    pub max_block_txs: usize,
    /// Mempool capacity.
    #[serde(default = "default_mempool")]
    pub mempool_capacity: usize,
    /// Lead no slot after this one (optional; see docs/node.md).
    #[serde(default)]
    pub lead_until_slot: Option<u64>,
    /// Peers.
    #[serde(default)]
    pub peers: Vec<PeerEntry>,
}

/// Longest one-way link latency a config may ask for (a minute).
pub const MAX_LATENCY_MS: f64 = 60_000.0;
/// Slowest link (1 kbit/s).
pub const MIN_BANDWIDTH_MBIT: f64 = 0.001;
/// Fastest link (1 Tbit/s).
pub const MAX_BANDWIDTH_MBIT: f64 = 1_000_000.0;

fn default_max_block_txs() -> usize {
    20_000
}

fn default_mempool() -> usize {
    100_000
}

/// A config with the text it came from (so checks against the genesis can name lines).
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The config, relative paths resolved against the file's directory.
    pub config: NodeConfig,
    /// The file.
    pub path: PathBuf,
    text: String,
}

impl NodeConfig {
    /// Reads a config file; relative `genesis` and `node_log` are resolved against its
    /// directory.
    pub fn from_file(path: &Path) -> Result<LoadedConfig> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config: NodeConfig =
            toml::from_str(&text).map_err(|e| from_toml(path, &text, &e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        config.genesis = dir.join(&config.genesis);
        config.node_log = config.node_log.map(|p| dir.join(p));
        Ok(LoadedConfig {
            config,
            path: path.to_path_buf(),
            text,
        })
    }
}

impl LoadedConfig {
    /// A config built from flags alone (errors name the flag as the key, line 0).
    pub fn from_flags(config: NodeConfig) -> LoadedConfig {
        LoadedConfig {
            config,
            path: PathBuf::from("(flags)"),
            text: String::new(),
        }
    }

    fn bad(&self, key: &str, value: Option<&str>, reason: String) -> Error {
        Error::Invalid {
            path: self.path.clone(),
            line: line_of(&self.text, key, value),
            key: key.to_string(),
            reason,
        }
    }

    /// Checks the config against the genesis: the node and every peer are validators,
    /// no peer twice or the node itself, latencies and bandwidths sane.
    pub fn check(&self, g: &Genesis) -> Result<()> {
        let c = &self.config;
        if g.validator(&c.id).is_none() {
            return Err(self.bad(
                "id",
                None,
                format!("`{}` is not a validator of {}", c.id, g.file.network),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for p in &c.peers {
            let q = format!("\"{}\"", p.id);
            if g.validator(&p.id).is_none() {
                return Err(self.bad(
                    "id",
                    Some(&q),
                    format!("peer `{}` is not a validator of the genesis", p.id),
                ));
            }
            if p.id == c.id || !seen.insert(p.id.as_str()) {
                return Err(self.bad(
                    "id",
                    Some(&q),
                    format!("peer `{}` is this node or listed twice", p.id),
                ));
            }
            // Bounded so the link shaping's Duration and bits-per-second arithmetic
            // cannot overflow or panic.
            if !(p.latency_ms.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&p.latency_ms)) {
                return Err(self.bad(
                    "latency_ms",
                    None,
                    format!("peer `{}`: must be 0 to {MAX_LATENCY_MS} ms", p.id),
                ));
            }
            if p.bandwidth_mbit
                .is_some_and(|b| !(MIN_BANDWIDTH_MBIT..=MAX_BANDWIDTH_MBIT).contains(&b))
            {
                return Err(self.bad(
                    "bandwidth_mbit",
                    None,
                    format!(
                        "peer `{}`: must be {MIN_BANDWIDTH_MBIT} to {MAX_BANDWIDTH_MBIT} Mbit/s",
                        p.id
                    ),
                ));
            }
        }
        if c.max_block_txs == 0 || c.mempool_capacity == 0 {
            return Err(self.bad("max_block_txs", None, "limits must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genesis::{GenesisFile, Validator};

    fn genesis() -> Genesis {
        GenesisFile {
            network: "t".into(),
            seed: 1,
            accounts: 4,
            balance: 10,
            slot_ms: 100,
            genesis_time_ms: 0,
            validators: ["a", "b"]
                .iter()
                .map(|id| Validator {
                    id: id.to_string(),
                    stake: 1,
                })
                .collect(),
        }
        .load()
    }

    #[test]
    fn an_unknown_peer_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        std::fs::write(
            &p,
            "id = \"a\"\ngenesis = \"g.toml\"\npeer_listen = \"127.0.0.1:0\"\n\n[[peers]]\nid = \"b\"\naddr = \"127.0.0.1:1\"\n\n[[peers]]\nid = \"zz\"\naddr = \"127.0.0.1:2\"\n",
        )
        .unwrap();
        let c = NodeConfig::from_file(&p).unwrap();
        assert_eq!(c.config.genesis, dir.path().join("g.toml"));
        let e = c.check(&genesis()).unwrap_err().to_string();
        assert!(
            e.contains("a.toml:10:") && e.contains("`id`") && e.contains("zz"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_address_names_its_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        std::fs::write(
            &p,
            "id = \"a\"\ngenesis = \"g\"\npeer_listen = \"nowhere\"\n",
        )
        .unwrap();
        let e = NodeConfig::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("a.toml:3:"), "{e}");
        std::fs::write(
            &p,
            "id = \"a\"\ngenesis = \"g\"\npeer_listen = \"127.0.0.1:1\"\ncolour = 1\n",
        )
        .unwrap();
        let e = NodeConfig::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("a.toml:4:") && e.contains("colour"), "{e}");
    }

    #[test]
    fn link_shapes_that_would_overflow_are_refused_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        let base = "id = \"a\"\ngenesis = \"g\"\npeer_listen = \"127.0.0.1:1\"\n\n[[peers]]\nid = \"b\"\naddr = \"127.0.0.1:2\"\n";
        for (extra, key) in [
            ("latency_ms = 1e300\n", "a.toml:8: `latency_ms`"),
            ("bandwidth_mbit = 1e-300\n", "a.toml:8: `bandwidth_mbit`"),
        ] {
            std::fs::write(&p, format!("{base}{extra}")).unwrap();
            let c = NodeConfig::from_file(&p).unwrap();
            let e = c.check(&genesis()).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
