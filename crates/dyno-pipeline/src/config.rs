//! The bench configuration (TOML), parsed into typed structs and validated before any
//! work starts. Every section but `[layout]` is optional; see
//! `examples/pipeline/leader-2core.toml` for a commented file.

use std::path::{Path, PathBuf};

use dyno_tango::config::{Layout, LinkConfig, MetricsConfig, TileKind, WorkspaceConfig};
use dyno_tango::LayoutConfig;
use serde::Deserialize;

use crate::error::{Error, Result};
use dyno_model::ConfigDiagnostic;
pub use dyno_tiles::config::{
    BankConfig, DedupConfig, GenesisConfig, LoadConfig, PackConfig, PohConfig, StoreConfig,
    VerifyConfig, MAX_EXTRA_WORK_PER_TX,
};

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// Affinity, idling, tile counts, link depth.
    #[serde(default)]
    pub layout: LeaderLayout,
    /// Shared memory.
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// Prometheus endpoint.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Funded accounts.
    #[serde(default)]
    pub genesis: GenesisConfig,
    /// The load generator.
    #[serde(default)]
    pub bench: LoadConfig,
    /// Signature verification.
    #[serde(default)]
    pub verify: VerifyConfig,
    /// Deduplication.
    #[serde(default)]
    pub dedup: DedupConfig,
    /// Scheduling.
    #[serde(default)]
    pub pack: PackConfig,
    /// Execution.
    #[serde(default)]
    pub bank: BankConfig,
    /// The hash chain.
    #[serde(default)]
    pub poh: PohConfig,
    /// The ledger.
    #[serde(default)]
    pub store: StoreConfig,
}

/// `[layout]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeaderLayout {
    /// Affinity string (tile order: benchg, verify..., dedup, pack, bank..., poh, store),
    /// or `floating` (every tile unpinned, whatever the tile counts: the default, and
    /// what a sweep needs).
    pub affinity: String,
    /// `spin`, `spin-then-yield`, `park` or `backoff`.
    pub idle: String,
    /// Sleep of `park`, first sleep of `backoff`.
    pub park_micros: u64,
    /// Longest sleep of `backoff` (doubling from `park_micros`).
    pub park_max_micros: u64,
    /// Housekeeping period (default from the link depth).
    pub lazy_ns: Option<u64>,
    /// Verify tiles.
    pub verify_tile_count: usize,
    /// Bank tiles.
    pub bank_tile_count: usize,
    /// Depth of every link (power of two).
    pub link_depth: u64,
    /// The benchg->verify link is reliable (benchg is backpressured) or not (verify
    /// tiles may be overrun at ingress, and the lost transactions are counted).
    pub ingress_reliable: bool,
}

impl Default for LeaderLayout {
    fn default() -> Self {
        LeaderLayout {
            affinity: "floating".into(),
            idle: "spin-then-yield".into(),
            park_micros: 50,
            park_max_micros: 1000,
            lazy_ns: None,
            verify_tile_count: 1,
            bank_tile_count: 1,
            link_depth: 4096,
            ingress_reliable: true,
        }
    }
}

/// What `dyno pipeline bench`'s flags (and `dyno node --workload`'s) ask of the config
/// ([`BenchConfig::resolve`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchOverrides {
    /// A bench config file (`--config`).
    pub config: Option<PathBuf>,
    /// A built-in workload instead (`--workload`).
    pub workload: Option<String>,
    /// The workspace name (`--name`).
    pub name: Option<String>,
    /// Transactions per second offered (`--rate`).
    pub rate: Option<u64>,
    /// SHA-256 rounds of extra work per executed transaction (`--extra-work-per-tx`).
    pub extra_work_per_tx: Option<u64>,
    /// Where to serve the tiles' metrics (`--metrics-listen`).
    pub metrics_listen: Option<String>,
    /// Serve the metrics on a free loopback port when nothing else says where: the live
    /// view of `--serve` watches them.
    pub need_metrics: bool,
}

/// The built-in workloads of the reference node: name, TOML.
pub const WORKLOADS: [(&str, &str); 2] = [
    ("value", include_str!("../workloads/value.toml")),
    ("script", include_str!("../workloads/script.toml")),
];

/// Seconds of load a built-in workload signs before it starts (then benchg signs live).
pub const PRESIGN_SECONDS: u64 = 30;

impl BenchConfig {
    /// The built-in workload `name` (see [`WORKLOADS`]), at `rate` transactions per second
    /// when given (its pre-signed pool scaled to [`PRESIGN_SECONDS`] of that rate).
    pub fn workload(name: &str, rate: Option<u64>) -> Result<BenchConfig> {
        let (_, text) =
            WORKLOADS
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| Error::Config {
                    origin: "--workload".into(),
                    reason: format!(
                        "unknown workload `{name}` (built in: {})",
                        WORKLOADS.map(|(n, _)| n).join(", ")
                    ),
                })?;
        let origin = format!("built-in workload {name}");
        let mut cfg = Self::from_toml(text, &origin)?;
        if let Some(r) = rate {
            if r == 0 {
                return Err(Error::Config {
                    origin: "--rate".into(),
                    reason: "a workload's rate must be at least 1 transaction per second".into(),
                });
            }
            cfg.bench.rate = r;
            cfg.bench.presign = r.saturating_mul(PRESIGN_SECONDS).min(1 << 20) as usize;
        }
        Ok(cfg)
    }

    /// The config `asked` names (a file or a built-in workload) with its overrides,
    /// and its origin for messages.
    pub fn resolve(asked: &BenchOverrides) -> Result<(BenchConfig, String)> {
        let (mut cfg, origin) = match (&asked.config, &asked.workload) {
            (Some(path), _) => (BenchConfig::from_file(path)?, path.display().to_string()),
            (None, Some(name)) => (
                BenchConfig::workload(name, asked.rate)?,
                format!("workload {name}"),
            ),
            (None, None) => return Err(Error::Config {
                origin: "--config".into(),
                reason:
                    "give a bench config (--config FILE) or a built-in workload (--workload NAME)"
                        .into(),
            }),
        };
        // A built-in workload already took the rate (and sized its pre-signed pool by it).
        if let (Some(rate), Some(_)) = (asked.rate, &asked.config) {
            cfg.bench.rate = rate;
        }
        if let Some(name) = &asked.name {
            cfg.workspace.name = name.clone();
        }
        if let Some(n) = asked.extra_work_per_tx {
            cfg.bank.extra_work_per_tx = n;
            cfg.validate("--extra-work-per-tx")?;
        }
        if let Some(addr) = &asked.metrics_listen {
            cfg.metrics.listen = Some(addr.clone());
        }
        if asked.need_metrics && cfg.metrics.listen.is_none() {
            cfg.metrics.listen = Some("127.0.0.1:0".into());
        }
        Ok((cfg, origin))
    }

    /// Reads and validates a file.
    pub fn from_file(path: &Path) -> Result<BenchConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Parses and validates TOML; `origin` names the file in errors, which point at the
    /// line, column and key in `text`.
    pub fn from_toml(text: &str, origin: &str) -> Result<BenchConfig> {
        let path = Path::new(origin);
        ConfigDiagnostic::parse_toml_checked(path, text, BenchConfig::check)
            .map_err(|d| Error::ConfigFile(Box::new(d)))
    }

    /// Checks every value (also after a sweep changed the counts).
    pub fn validate(&self, origin: &str) -> Result<()> {
        self.check().map_err(|(key, message)| Error::Config {
            origin: origin.to_string(),
            reason: format!("key {key}: {message}"),
        })
    }

    /// The first value out of range, as (key path, what is wrong).
    fn check(&self) -> std::result::Result<(), (String, String)> {
        let bad = |key: &str, message: String| (key.to_string(), message);
        let l = &self.layout;
        if !(1..=64).contains(&l.verify_tile_count) {
            return Err(bad("layout.verify_tile_count", "must be in 1..=64".into()));
        }
        if !(1..=64).contains(&l.bank_tile_count) {
            return Err(bad("layout.bank_tile_count", "must be in 1..=64".into()));
        }
        if l.link_depth < 64 || !l.link_depth.is_power_of_two() || l.link_depth > 1 << 20 {
            return Err(bad(
                "layout.link_depth",
                "must be a power of two in [64, 2^20]".into(),
            ));
        }
        let b = &self.bench;
        for (k, v) in [
            ("contention", b.contention),
            ("invalid_fraction", b.invalid_fraction),
            ("duplicate_fraction", b.duplicate_fraction),
            ("script_fraction", b.script_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(bad(&format!("bench.{k}"), format!("{v} must be in [0, 1]")));
            }
        }
        let g = &self.genesis;
        if g.fund_initial_accounts < 2 || g.fund_initial_accounts > 1 << 22 {
            return Err(bad(
                "genesis.fund_initial_accounts",
                "must be in [2, 4194304]".into(),
            ));
        }
        if b.hot_accounts < 2 || b.hot_accounts > g.fund_initial_accounts {
            return Err(bad(
                "bench.hot_accounts",
                "must be at least 2 and at most genesis.fund_initial_accounts".into(),
            ));
        }
        if b.fee_min > b.fee_max {
            return Err(bad("bench.fee_min", "must not exceed bench.fee_max".into()));
        }
        if b.script_budget > crate::tx::MAX_BUDGET {
            return Err(bad(
                "bench.script_budget",
                format!("at most {}", crate::tx::MAX_BUDGET),
            ));
        }
        if self.bank.extra_work_per_tx > MAX_EXTRA_WORK_PER_TX {
            return Err(bad(
                "bank.extra_work_per_tx",
                format!("at most {MAX_EXTRA_WORK_PER_TX}"),
            ));
        }
        if !(1..=256).contains(&self.verify.batch) {
            return Err(bad("verify.batch", "must be in 1..=256".into()));
        }
        if self.dedup.depth == 0 {
            return Err(bad("dedup.depth", "must be at least 1".into()));
        }
        let p = &self.pack;
        if !(1..=64).contains(&p.max_txs_per_microblock) {
            return Err(bad(
                "pack.max_txs_per_microblock",
                "must be in 1..=64".into(),
            ));
        }
        if p.block_cost_limit < crate::tx::BASE_COST + b.script_budget {
            return Err(bad(
                "pack.block_cost_limit",
                "smaller than one transaction's cost".into(),
            ));
        }
        for (key, value) in [
            ("pack.max_pending", p.max_pending as u64),
            ("pack.microblocks_per_bank", p.microblocks_per_bank as u64),
            ("poh.hashes_per_tick", self.poh.hashes_per_tick),
            ("poh.ticks_per_slot", self.poh.ticks_per_slot),
        ] {
            if value == 0 {
                return Err(bad(key, "must be at least 1".into()));
            }
        }
        self.tango_layout()
            .idle_strategy()
            .map_err(|r| bad("layout.idle", r))?;
        self.tango_layout()
            .affinity()
            .map_err(|e| bad("layout.affinity", e.to_string()))?;
        Ok(())
    }

    /// Tile kinds and counts in affinity order.
    pub fn tile_kinds(&self) -> Vec<(&'static str, usize)> {
        let mut v = vec![
            ("benchg", 1),
            ("verify", self.layout.verify_tile_count),
            ("dedup", 1),
            ("pack", 1),
            ("bank", self.layout.bank_tile_count),
            ("poh", 1),
        ];
        if self.store.enabled {
            v.push(("store", 1));
        }
        v
    }

    /// The equivalent `dyno-tango` layout (for the affinity plan and tile names).
    pub fn tango_layout(&self) -> LayoutConfig {
        let l = &self.layout;
        let tiles: usize = self.tile_kinds().iter().map(|(_, c)| c).sum();
        LayoutConfig {
            layout: Layout {
                affinity: if l.affinity == "floating" {
                    format!("f{tiles}")
                } else {
                    l.affinity.clone()
                },
                idle: l.idle.clone(),
                park_micros: l.park_micros,
                park_max_micros: l.park_max_micros,
                lazy_ns: l.lazy_ns,
                tiles: self
                    .tile_kinds()
                    .into_iter()
                    .map(|(k, c)| TileKind {
                        kind: k.into(),
                        count: c,
                    })
                    .collect(),
            },
            links: Vec::<LinkConfig>::new(),
            workspace: self.workspace.clone(),
            metrics: self.metrics.clone(),
            synthetic: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_default_layout() {
        let c = BenchConfig::from_toml("", "x.toml").unwrap();
        assert_eq!(c.layout.verify_tile_count, 1);
        assert_eq!(
            c.tango_layout().tile_names(),
            ["benchg:0", "verify:0", "dedup:0", "pack:0", "bank:0", "poh:0", "store:0"]
        );
    }

    #[test]
    fn the_example_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/pipeline");
        for (name, tiles) in [
            ("leader-2core", 7),
            ("leader-16core", 15),
            ("leader-64core", 29),
        ] {
            let c = BenchConfig::from_file(&dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(c.tango_layout().tile_names().len(), tiles, "{name}");
            assert_eq!(c.workspace.name, name);
        }
    }

    #[test]
    fn the_builtin_workloads_are_fixed_rate_and_differ_in_kind() {
        let v = BenchConfig::workload("value", None).unwrap();
        let s = BenchConfig::workload("script", Some(50)).unwrap();
        assert!(v.bench.rate > 0 && v.bench.script_fraction == 0.0);
        assert_eq!(
            (s.bench.rate, s.bench.presign),
            (50, 50 * PRESIGN_SECONDS as usize)
        );
        assert_eq!(s.bench.script_fraction, 1.0);
        // Small blocks: a script block holds far fewer transactions than a transfer block.
        let per_block = |c: &BenchConfig, cost: u64| c.pack.block_cost_limit / cost;
        let script_cost = crate::tx::BASE_COST + s.bench.script_budget;
        assert!(
            per_block(&s, script_cost) <= 200,
            "{}",
            per_block(&s, script_cost)
        );
        assert!(per_block(&v, crate::tx::BASE_COST) >= 10_000);
        let e = BenchConfig::workload("fast", None).unwrap_err().to_string();
        assert!(
            e.contains("--workload") && e.contains("value, script"),
            "{e}"
        );
        let e = BenchConfig::workload("value", Some(0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--rate"), "{e}");
    }

    #[test]
    fn the_flags_override_the_config_they_name() {
        let asked = BenchOverrides {
            workload: Some("script".into()),
            rate: Some(50),
            name: Some("second".into()),
            need_metrics: true,
            ..BenchOverrides::default()
        };
        let (cfg, origin) = BenchConfig::resolve(&asked).unwrap();
        assert_eq!(origin, "workload script");
        assert_eq!(
            (cfg.bench.rate, cfg.bench.presign),
            (50, 50 * PRESIGN_SECONDS as usize)
        );
        assert_eq!(cfg.workspace.name, "second");
        assert_eq!(cfg.metrics.listen.as_deref(), Some("127.0.0.1:0"));
        let file = BenchOverrides {
            config: Some(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../examples/pipeline/leader-2core.toml"),
            ),
            rate: Some(7),
            metrics_listen: Some("127.0.0.1:9".into()),
            need_metrics: true,
            ..BenchOverrides::default()
        };
        let (cfg, origin) = BenchConfig::resolve(&file).unwrap();
        assert!(origin.ends_with("leader-2core.toml"), "{origin}");
        assert_eq!(cfg.bench.rate, 7);
        assert_eq!(cfg.metrics.listen.as_deref(), Some("127.0.0.1:9"));
        let too_much = BenchOverrides {
            extra_work_per_tx: Some(MAX_EXTRA_WORK_PER_TX + 1),
            ..asked
        };
        let e = BenchConfig::resolve(&too_much).unwrap_err().to_string();
        assert!(e.contains("--extra-work-per-tx"), "{e}");
        let e = BenchConfig::resolve(&BenchOverrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--config") && e.contains("--workload"), "{e}");
    }

    #[test]
    fn errors_name_the_file_line_column_key_and_snippet() {
        for (text, at, key) in [
            (
                "[layout]\nverify_tile_count = 0",
                "l.toml:2:1:",
                "layout.verify_tile_count",
            ),
            (
                "[layout]\naffinity = \"0-x\"",
                "l.toml:2:1:",
                "layout.affinity",
            ),
            (
                "[bench]\ncontention = 2.0",
                "l.toml:2:1:",
                "bench.contention",
            ),
            (
                "[bench]\nfee_min = 9\nfee_max = 1",
                "l.toml:2:1:",
                "bench.fee_min",
            ),
            ("[pack]\nmax_txs = 3", "l.toml:2:1:", "pack.max_txs"),
            ("[pack]\nmax_txs = ", "l.toml:2:11:", "pack.max_txs"),
        ] {
            let e = BenchConfig::from_toml(text, "l.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{at} key `{key}`: ")), "{key}: {e}");
            let line = text.lines().nth(1).unwrap();
            assert!(e.contains(&format!("\n2 | {line}\n")), "{key}: {e}");
        }
        // A check that compares against another value points at the key it names.
        let e = BenchConfig::from_toml("[pack]\nblock_cost_limit = 1", "l.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("l.toml:2:1: key `pack.block_cost_limit`"),
            "{e}"
        );
    }
}
