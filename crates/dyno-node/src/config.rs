//! The node config file (one per node; cluster tooling generates them), flat TOML:
//!
//! ```toml
//! id = "n1"                          # a validator id of the genesis
//! genesis = "genesis.toml"           # relative to this file
//! peer_listen = "127.0.0.1:7101"     # TCP, other nodes dial it
//! ingress_listen = "127.0.0.1:7201"  # QUIC, dyno load sends here (optional)
//! metrics_listen = "127.0.0.1:7301"  # HTTP /metrics and /ready (optional)
//! node_log = "n1.jsonl"              # event log, relative to this file (optional)
//! max_block_txs = 5000               # optional: forge smaller blocks than the genesis allows
//! mempool_capacity = 100000          # optional
//! lead_until_slot = 120              # optional: forge in no slot after this one
//! forge = "tiles"                    # optional: "tiles" (default) or "sequential"
//! control = "n1.control.toml"        # optional: the fault control file it watches
//! verify_tiles = 4                   # optional: signature-checking threads (default 1:
//!                                    # a node's threads do not grow with the cores)
//! verify_batch = 64                  # optional: signatures checked as one batch (1: one
//!                                    # by one; the verdicts are the same, ZIP 215)
//! forge_at = "slot_start"            # optional: "whole_slot" (default) or "slot_start"
//! replay_threads = 4                 # optional: threads a block's transactions are
//!                                    # replayed on (default: one per core)
//! bank_tiles = 2                     # optional: the leader's bank tiles (default 1, at
//!                                    # most the cores)
//! ingress_tps_per_connection = 20000 # optional: most transactions a second one QUIC
//!                                    # client connection hands the node (default: none)
//!
//! [[peers]]
//! id = "n2"
//! addr = "127.0.0.1:7102"  # host:port; a host name (node-2.dyno:7102) is resolved on each dial
//! latency_ms = 20        # one-way, this node -> n2 (optional, default 0)
//! bandwidth_mbit = 100   # this node -> n2 (optional, default unlimited)
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{invalid, parse_toml, Error, Result};
use crate::genesis::Genesis;

/// One peer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerEntry {
    /// Its node id (a validator of the genesis).
    pub id: String,
    /// Its peer listen address, `host:port` (an IP address or a host name, resolved
    /// each time the node dials it).
    pub addr: String,
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
    /// Most transactions per block this node forges: at most the genesis's
    /// `max_block_txs` (the network's limit, which followers enforce); none: that limit.
    #[serde(default)]
    pub max_block_txs: Option<usize>,
    /// Mempool capacity.
    #[serde(default = "default_mempool")]
    pub mempool_capacity: usize,
    /// Lead no slot after this one (optional; see docs/node.md).
    #[serde(default)]
    pub lead_until_slot: Option<u64>,
    /// How this node forges its blocks (the pipeline's tiles unless it says otherwise).
    #[serde(default)]
    pub forge: crate::node::ForgeMode,
    /// The fault control file the node watches (see [`crate::control`]), relative to
    /// this file; none: the node takes no faults.
    #[serde(default)]
    pub control: Option<PathBuf>,
    /// Threads that check signatures: of transactions from the QUIC ingress, and of the
    /// blocks this node validates (none: [`crate::verify::DEFAULT_VERIFY_TILES`]).
    #[serde(default)]
    pub verify_tiles: Option<usize>,
    /// Most signatures a verify thread checks as one batch (none:
    /// [`crate::verify::DEFAULT_VERIFY_BATCH`]; 1: one by one). Single and batch checks
    /// follow one rule (ZIP 215), so this changes speed, never a verdict.
    #[serde(default)]
    pub verify_batch: Option<usize>,
    /// When a leader cuts its block: `"whole_slot"` (default) or `"slot_start"`.
    #[serde(default)]
    pub forge_at: crate::node::ForgeAt,
    /// Threads a validated block's transactions are decoded and executed on (none:
    /// [`dyno_txn::replay::default_replay_threads`]); the verdicts are one thread's.
    #[serde(default)]
    pub replay_threads: Option<usize>,
    /// Bank tiles of the leader's forge (none: 1); at most the cores.
    #[serde(default)]
    pub bank_tiles: Option<usize>,
    /// Most transactions a second one QUIC client connection may hand this node (none:
    /// no limit; see [`dyno_net::IngressConfig::max_tps_per_connection`]).
    #[serde(default)]
    pub ingress_tps_per_connection: Option<u32>,
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

fn default_mempool() -> usize {
    100_000
}

/// `host:port` with a port number and a host that could be a name or an address (not
/// resolved here: a scheduler's name may not resolve until its node is placed).
fn check_host_port(addr: &str) -> std::result::Result<(), String> {
    let bad = || format!("`{addr}` is not host:port (e.g. 127.0.0.1:7102 or node-2.dyno:7102)");
    if addr.parse::<SocketAddr>().is_ok() {
        return Ok(());
    }
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    port.parse::<u16>().map_err(|_| bad())?;
    let name_ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if name_ok {
        Ok(())
    } else {
        Err(bad())
    }
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
        NodeConfig::parse(path, text)
    }

    /// Parses a config's `text` (read from `path`, which errors name and relative paths
    /// resolve against): the file's syntax, keys and peer addresses; what needs the
    /// genesis is [`LoadedConfig::check`]'s.
    pub fn parse(path: &Path, text: String) -> Result<LoadedConfig> {
        let mut config: NodeConfig = parse_toml(path, &text)?;
        for (i, p) in config.peers.iter().enumerate() {
            if let Err(why) = check_host_port(&p.addr) {
                return Err(invalid(path, &text, &format!("peers[{i}].addr"), why));
            }
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        config.genesis = dir.join(&config.genesis);
        config.node_log = config.node_log.map(|p| dir.join(p));
        config.control = config.control.map(|p| dir.join(p));
        Ok(LoadedConfig {
            config,
            path: path.to_path_buf(),
            text,
        })
    }
}

impl NodeConfig {
    /// The threads of a `dyno node run` process with this config at its peak, its main
    /// thread included: what a cluster of such nodes costs the kernel's thread and pid
    /// limits. Main thread, node loop, the one I/O thread (every socket), the verify
    /// threads (the ingress's transactions and the peers' relays), while a block is
    /// validated the scoped threads that check its signatures (more than one verify
    /// thread), the replay pool of one thread per core a node keeps once it replayed on
    /// more than one thread (the default is one per core: see
    /// [`NodeConfig::replay_threads`]), and the tile forge's threads.
    pub fn threads(&self) -> usize {
        let verify = self
            .verify_tiles
            .unwrap_or(crate::verify::DEFAULT_VERIFY_TILES);
        let replay = self
            .replay_threads
            .unwrap_or_else(dyno_txn::replay::default_replay_threads);
        // The scoped threads that check a block's signatures, and the replay pool a
        // node keeps once it replayed on more than one thread (a thread per core).
        let validating = if verify > 1 { verify } else { 0 };
        let pool = if replay > 1 {
            dyno_txn::replay::default_replay_threads()
        } else {
            0
        };
        let forge = match self.forge {
            crate::node::ForgeMode::Tiles => {
                crate::node::tile_forge_config(self.bank_tiles.unwrap_or(1)).threads()
            }
            crate::node::ForgeMode::Sequential => 0,
        };
        NODE_BASE_THREADS + verify + validating + pool + forge
    }
}

/// Threads every `dyno node run` process has: its main thread (signals, status), the
/// node loop, and the I/O thread.
pub const NODE_BASE_THREADS: usize = 3;

/// Memory a `dyno node run` process with the sequential forge takes from the machine:
/// what a cluster check counts per node. Its own memory (RssAnon; the binary's pages are
/// shared by every node) measured 2.5 MiB idle and 2.9 MiB at 20 TPS in a 52-node
/// cluster, 2.7 MiB with a genesis of 1,040 validators and 6.9 MiB with 5,000 (release
/// build, 1 s slots: docs/cluster.md, "Scale"); the rest is for what the kernel holds
/// for it (page tables, kernel stacks, socket buffers), which was not measured.
pub const NODE_RSS_ESTIMATE: u64 = 8 << 20;

/// What the tile forge adds to a node's memory (its tiles' rings and stacks), as
/// measured beside [`NODE_RSS_ESTIMATE`].
pub const TILE_FORGE_RSS_ESTIMATE: u64 = 16 << 20;

impl NodeConfig {
    /// The memory a node with this config is expected to hold: the measured figures
    /// above, the tile forge's when it forges with the tiles.
    pub fn rss_estimate_bytes(&self) -> u64 {
        match self.forge {
            crate::node::ForgeMode::Tiles => NODE_RSS_ESTIMATE + TILE_FORGE_RSS_ESTIMATE,
            crate::node::ForgeMode::Sequential => NODE_RSS_ESTIMATE,
        }
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

    fn bad(&self, key: &str, reason: String) -> Error {
        invalid(&self.path, &self.text, key, reason)
    }

    /// Most transactions per block this node forges: the config's limit, else the
    /// genesis's (after [`LoadedConfig::check`], never above the genesis's).
    pub fn block_limit(&self, g: &Genesis) -> usize {
        let network = g.file.max_block_txs as usize;
        self.config
            .max_block_txs
            .map_or(network, |m| m.min(network))
    }

    /// Checks the config against the genesis: the node and every peer are validators,
    /// no peer twice or the node itself, latencies and bandwidths sane.
    pub fn check(&self, g: &Genesis) -> Result<()> {
        let c = &self.config;
        if g.validator(&c.id).is_none() {
            return Err(self.bad(
                "id",
                format!("`{}` is not a validator of {}", c.id, g.file.network),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, p) in c.peers.iter().enumerate() {
            let key = |k: &str| format!("peers[{i}].{k}");
            if g.validator(&p.id).is_none() {
                return Err(self.bad(
                    &key("id"),
                    format!("peer `{}` is not a validator of the genesis", p.id),
                ));
            }
            if p.id == c.id || !seen.insert(p.id.as_str()) {
                return Err(self.bad(
                    &key("id"),
                    format!("peer `{}` is this node or listed twice", p.id),
                ));
            }
            // Bounded so the link shaping's Duration and bits-per-second arithmetic
            // cannot overflow or panic.
            if !(p.latency_ms.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&p.latency_ms)) {
                return Err(self.bad(
                    &key("latency_ms"),
                    format!("peer `{}`: must be 0 to {MAX_LATENCY_MS} ms", p.id),
                ));
            }
            if p.bandwidth_mbit
                .is_some_and(|b| !(MIN_BANDWIDTH_MBIT..=MAX_BANDWIDTH_MBIT).contains(&b))
            {
                return Err(self.bad(
                    &key("bandwidth_mbit"),
                    format!(
                        "peer `{}`: must be {MIN_BANDWIDTH_MBIT} to {MAX_BANDWIDTH_MBIT} Mbit/s",
                        p.id
                    ),
                ));
            }
        }
        let network = g.file.max_block_txs as usize;
        if c.max_block_txs.is_some_and(|m| m == 0 || m > network) {
            return Err(self.bad(
                "max_block_txs",
                format!(
                    "must be 1 to the genesis's max_block_txs ({network}): a node may forge \
                     smaller blocks than its network allows, never larger ones"
                ),
            ));
        }
        if c.mempool_capacity == 0 {
            return Err(self.bad("mempool_capacity", "must be at least 1".into()));
        }
        if c.ingress_tps_per_connection == Some(0) {
            return Err(self.bad(
                "ingress_tps_per_connection",
                "must be at least 1 (leave it out for no limit)".into(),
            ));
        }
        let most = crate::verify::MAX_VERIFY_TILES;
        if c.verify_tiles.is_some_and(|n| n == 0 || n > most) {
            return Err(self.bad("verify_tiles", format!("must be 1 to {most}")));
        }
        let most = crate::verify::MAX_VERIFY_BATCH;
        if c.verify_batch.is_some_and(|n| n == 0 || n > most) {
            return Err(self.bad("verify_batch", format!("must be 1 to {most}")));
        }
        self.check_threads()
    }

    /// `replay_threads` and `bank_tiles` in range (bank tiles spin while a slot is
    /// forged: more than the cores would starve each other).
    fn check_threads(&self) -> Result<()> {
        let c = &self.config;
        let most = dyno_txn::replay::MAX_REPLAY_THREADS;
        if c.replay_threads.is_some_and(|n| n == 0 || n > most) {
            return Err(self.bad("replay_threads", format!("must be 1 to {most}")));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if c.bank_tiles.is_some_and(|n| n == 0 || n > cores) {
            return Err(self.bad(
                "bank_tiles",
                format!("must be 1 to the cores of this machine ({cores})"),
            ));
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
            max_block_txs: 100,
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
            e.contains("a.toml:10:1: key `peers[1].id`") && e.contains("zz"),
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
        assert!(
            e.contains("a.toml:3:") && e.contains("key `peer_listen`"),
            "{e}"
        );
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
            (
                "latency_ms = 1e300\n",
                "a.toml:8:1: key `peers[0].latency_ms`",
            ),
            (
                "bandwidth_mbit = 1e-300\n",
                "a.toml:8:1: key `peers[0].bandwidth_mbit`",
            ),
        ] {
            std::fs::write(&p, format!("{base}{extra}")).unwrap();
            let c = NodeConfig::from_file(&p).unwrap();
            let e = c.check(&genesis()).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn a_node_may_lower_the_network_block_limit_but_not_raise_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        let head = "id = \"a\"\ngenesis = \"g\"\npeer_listen = \"127.0.0.1:1\"\n";
        std::fs::write(&p, format!("{head}max_block_txs = 101\n")).unwrap();
        let e = NodeConfig::from_file(&p)
            .unwrap()
            .check(&genesis())
            .unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("a.toml:4:1: key `max_block_txs`") && e.contains("(100)"),
            "{e}"
        );
        std::fs::write(&p, format!("{head}max_block_txs = 40\n")).unwrap();
        let c = NodeConfig::from_file(&p).unwrap();
        c.check(&genesis()).unwrap();
        assert_eq!(c.block_limit(&genesis()), 40);
        std::fs::write(&p, head).unwrap();
        assert_eq!(
            NodeConfig::from_file(&p).unwrap().block_limit(&genesis()),
            100
        );
    }

    #[test]
    fn peer_addresses_may_be_host_names_but_must_be_host_port() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        let with = |addr: &str| {
            format!("id = \"a\"\ngenesis = \"g\"\npeer_listen = \"127.0.0.1:1\"\n\n[[peers]]\nid = \"b\"\naddr = \"{addr}\"\n")
        };
        for ok in ["node-3.dyno:7000", "localhost:1", "127.0.0.1:2", "[::1]:3"] {
            std::fs::write(&p, with(ok)).unwrap();
            let c = NodeConfig::from_file(&p).unwrap();
            assert_eq!(c.config.peers[0].addr, ok);
        }
        for bad in ["node-3.dyno", "node 3:7000", "n:port", ":7000", "a..b:1"] {
            std::fs::write(&p, with(bad)).unwrap();
            let e = NodeConfig::from_file(&p).unwrap_err().to_string();
            assert!(
                e.contains("a.toml:7:1: key `peers[0].addr`") && e.contains("host:port"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn replay_threads_bank_tiles_and_the_connection_rate_out_of_range_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        let head = "id = \"a\"\ngenesis = \"g\"\npeer_listen = \"127.0.0.1:1\"\n";
        let cores = std::thread::available_parallelism().unwrap().get();
        for (line, key) in [
            ("replay_threads = 0".to_string(), "replay_threads"),
            (format!("bank_tiles = {}", cores + 1), "bank_tiles"),
            ("bank_tiles = 0".to_string(), "bank_tiles"),
            (
                "ingress_tps_per_connection = 0".to_string(),
                "ingress_tps_per_connection",
            ),
        ] {
            std::fs::write(&p, format!("{head}{line}\n")).unwrap();
            let e = NodeConfig::from_file(&p)
                .unwrap()
                .check(&genesis())
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("a.toml:4:1: key `{key}`")), "{e}");
        }
        std::fs::write(
            &p,
            format!(
                "{head}replay_threads = 3\nbank_tiles = {cores}\ningress_tps_per_connection = 500\n"
            ),
        )
        .unwrap();
        let c = NodeConfig::from_file(&p).unwrap();
        c.check(&genesis()).unwrap();
        assert_eq!(
            (
                c.config.replay_threads,
                c.config.bank_tiles,
                c.config.ingress_tps_per_connection
            ),
            (Some(3), Some(cores), Some(500))
        );
    }
}
