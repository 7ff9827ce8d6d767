//! The layout configuration (TOML), parsed into typed structs and validated before any
//! tile starts.
//!
//! ```toml
//! [layout]
//! affinity = "0-1"            # N, N-M, N-M/S, f, fK, auto
//! idle = "spin-then-yield"    # spin | spin-then-yield | park | backoff
//! park_micros = 50            # sleep length for idle = "park"; first sleep of "backoff"
//! park_max_micros = 1000      # longest sleep of "backoff" (doubling from park_micros)
//!
//! [[layout.tiles]]            # in order: tile i gets the i-th affinity slot
//! kind = "source"
//! count = 1
//! [[layout.tiles]]
//! kind = "sink"
//! count = 1
//!
//! [[links]]
//! from = "source"
//! to = "sink"
//! depth = 4096                # power of two
//! mtu = 1232
//! reliable = true             # false: the consumer may be overrun, never slows the producer
//!
//! [workspace]
//! name = "pipeline"           # file /dev/shm/dyno-pipeline
//! # dir = "/some/dir"
//! size_mb = 64
//!
//! [metrics]
//! # listen = "127.0.0.1:7999" # Prometheus endpoint, off unless set
//!
//! [synthetic]                 # for run_synthetic
//! frag_size = 64
//! rate = 0                    # frags/s, 0 = flat out
//! count = 0                   # frags to publish, 0 = until stopped
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::affinity::{Affinity, AffinityPlan};
use crate::dcache::MAX_MTU;
use crate::error::{Error, Result};
use crate::tile::{IdleStrategy, StemOptions};
use dyno_model::ConfigDiagnostic;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutConfig {
    /// Tiles, affinity, idling.
    pub layout: Layout,
    /// Links between tile kinds.
    #[serde(default)]
    pub links: Vec<LinkConfig>,
    /// Where the shared memory lives.
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// The Prometheus endpoint.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The synthetic load of `run_synthetic`.
    #[serde(default)]
    pub synthetic: SyntheticConfig,
}

/// `[layout]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Affinity string.
    #[serde(default = "default_affinity")]
    pub affinity: String,
    /// Idle strategy name.
    #[serde(default = "default_idle")]
    pub idle: String,
    /// Sleep for `idle = "park"`, first sleep of `idle = "backoff"`.
    #[serde(default = "default_park")]
    pub park_micros: u64,
    /// Longest sleep of `idle = "backoff"`.
    #[serde(default = "default_park_max")]
    pub park_max_micros: u64,
    /// Mean housekeeping period in ns (default: from the link depth).
    #[serde(default)]
    pub lazy_ns: Option<u64>,
    /// Tile kinds and counts, in order.
    pub tiles: Vec<TileKind>,
}

/// `[[layout.tiles]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileKind {
    /// Kind name.
    pub kind: String,
    /// Number of tiles of this kind.
    #[serde(default = "one")]
    pub count: usize,
}

/// `[[links]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Producer tile kind.
    pub from: String,
    /// Consumer tile kind.
    pub to: String,
    /// Records in the ring (power of two).
    #[serde(default = "default_depth")]
    pub depth: u64,
    /// Largest payload.
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// Reliable consumers backpressure the producer; unreliable ones may be overrun.
    #[serde(default = "yes")]
    pub reliable: bool,
}

impl LinkConfig {
    /// The link's name, `from->to`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.from, self.to)
    }
}

/// `[workspace]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Name.
    #[serde(default = "default_ws_name")]
    pub name: String,
    /// Directory (default /dev/shm).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Size in MiB.
    #[serde(default = "default_ws_mb")]
    pub size_mb: usize,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig {
            name: default_ws_name(),
            dir: None,
            size_mb: default_ws_mb(),
        }
    }
}

/// `[metrics]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Address of the Prometheus endpoint; none = off.
    #[serde(default)]
    pub listen: Option<String>,
}

/// `[synthetic]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticConfig {
    /// Payload bytes per frag.
    #[serde(default = "default_frag")]
    pub frag_size: usize,
    /// Frags per second; 0 = flat out.
    #[serde(default)]
    pub rate: u64,
    /// Frags to publish; 0 = until stopped.
    #[serde(default)]
    pub count: u64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            frag_size: default_frag(),
            rate: 0,
            count: 0,
        }
    }
}

fn default_affinity() -> String {
    "auto".into()
}
fn default_idle() -> String {
    "spin-then-yield".into()
}
fn default_park() -> u64 {
    50
}
fn default_park_max() -> u64 {
    1000
}
fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_depth() -> u64 {
    4096
}
fn default_mtu() -> usize {
    1232
}
fn default_ws_name() -> String {
    "pipeline".into()
}
fn default_ws_mb() -> usize {
    64
}
fn default_frag() -> usize {
    64
}

impl LayoutConfig {
    /// Reads and validates a layout file.
    pub fn from_file(path: &Path) -> Result<LayoutConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Parses and validates TOML text; `origin` names the file in errors.
    /// Errors point at the line, column and key in `text`.
    pub fn from_toml(text: &str, origin: &str) -> Result<LayoutConfig> {
        ConfigDiagnostic::parse_toml_checked(std::path::Path::new(origin), text, Self::check)
            .map_err(|d| Error::ConfigFile(Box::new(d)))
    }

    /// The first value that makes no sense, as (key path, what is wrong).
    fn check(&self) -> std::result::Result<(), (String, String)> {
        let bad = |key: String, message: String| (key, message);
        self.affinity()
            .map_err(|e| bad("layout.affinity".into(), e.to_string()))?;
        self.idle_strategy()
            .map_err(|r| bad("layout.idle".into(), r))?;
        if self.layout.tiles.is_empty() {
            return Err(bad("layout.tiles".into(), "no tiles".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, t) in self.layout.tiles.iter().enumerate() {
            if t.count == 0 || !seen.insert(&t.kind) || t.kind.is_empty() || t.kind.len() > 16 {
                return Err(bad(
                    format!("layout.tiles[{i}]"),
                    format!(
                        "kind {:?} must be 1-16 characters, listed once, count >= 1",
                        t.kind
                    ),
                ));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            for end in [&l.from, &l.to] {
                if !seen.contains(end) {
                    return Err(bad(
                        format!("links[{i}]"),
                        format!("unknown tile kind {end:?}"),
                    ));
                }
            }
            if l.depth < 2 || !l.depth.is_power_of_two() || l.depth > 1 << 24 {
                return Err(bad(
                    format!("links[{i}].depth"),
                    format!("{} must be a power of two in [2, 2^24]", l.depth),
                ));
            }
            if l.mtu == 0 || l.mtu > MAX_MTU {
                return Err(bad(
                    format!("links[{i}].mtu"),
                    format!("{} must be in [1, {MAX_MTU}]", l.mtu),
                ));
            }
        }
        if self.workspace.size_mb == 0 {
            return Err(bad("workspace.size_mb".into(), "must be at least 1".into()));
        }
        if let Some(why) = crate::workspace::name_problem(
            &self.workspace.name,
            crate::workspace::MAX_WORKSPACE_NAME,
        ) {
            return Err(bad("workspace.name".into(), why));
        }
        Ok(())
    }

    /// Reads a layout file for the synthetic pipeline (`dyno pipeline run`): the checks of
    /// [`LayoutConfig::from_file`] and what that pipeline needs (kinds `source` and `sink`,
    /// a link between them, frags that fit its MTU), each refusal at its file, line and
    /// key before a tile starts.
    pub fn synthetic_from_file(path: &Path) -> Result<LayoutConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ConfigDiagnostic::parse_toml_checked(path, &text, |c: &LayoutConfig| {
            // Unknown kinds first: a link to the `sink` they replaced would blame the link.
            c.check_synthetic_kinds()?;
            c.check()?;
            c.check_synthetic_shape()
        })
        .map_err(|d| Error::ConfigFile(Box::new(d)))
    }

    fn check_synthetic_kinds(&self) -> std::result::Result<(), (String, String)> {
        for (i, t) in self.layout.tiles.iter().enumerate() {
            if t.kind != "source" && t.kind != "sink" {
                return Err((
                    format!("layout.tiles[{i}].kind"),
                    format!(
                        "unknown tile kind {:?}: the synthetic pipeline has kinds \"source\" \
                         (count 1) and \"sink\" (count >= 1)",
                        t.kind
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_synthetic_shape(&self) -> std::result::Result<(), (String, String)> {
        let first = self.layout.tiles.first().map(|t| t.kind.as_str());
        if self.count("source") != 1 || self.count("sink") == 0 || first != Some("source") {
            return Err((
                "layout.tiles".into(),
                "the synthetic pipeline needs kind \"source\" (count 1) first, then kind \
                 \"sink\" (count >= 1)"
                    .into(),
            ));
        }
        let Some(link) = self
            .links
            .iter()
            .find(|l| l.from == "source" && l.to == "sink")
        else {
            return Err((
                "links".into(),
                "the synthetic pipeline needs a link from \"source\" to \"sink\"".into(),
            ));
        };
        let frag = self.synthetic.frag_size;
        if frag == 0 || frag > link.mtu {
            return Err((
                "synthetic.frag_size".into(),
                format!("{frag} must be in [1, link mtu {}]", link.mtu),
            ));
        }
        Ok(())
    }

    /// The parsed affinity.
    pub fn affinity(&self) -> Result<Affinity> {
        self.layout.affinity.parse()
    }

    /// The idle strategy.
    pub fn idle_strategy(&self) -> Result<IdleStrategy, String> {
        match self.layout.idle.as_str() {
            "spin" => Ok(IdleStrategy::Spin),
            "spin-then-yield" => Ok(IdleStrategy::SpinThenYield),
            "park" => Ok(IdleStrategy::Park {
                micros: self.layout.park_micros,
            }),
            "backoff" if self.layout.park_max_micros < self.layout.park_micros => Err(format!(
                "park_max_micros {} is below park_micros {}: backoff doubles its sleep from park_micros up to park_max_micros",
                self.layout.park_max_micros, self.layout.park_micros
            )),
            "backoff" => Ok(IdleStrategy::Backoff {
                min_micros: self.layout.park_micros,
                max_micros: self.layout.park_max_micros,
            }),
            other => Err(format!(
                "{other:?} is not one of spin, spin-then-yield, park, backoff"
            )),
        }
    }

    /// How every tile of the layout idles and how often it does housekeeping, on links
    /// `link_depth` deep (the layout's `lazy_ns`, else what suits that depth).
    pub fn stem_options(&self, link_depth: u64) -> Result<StemOptions> {
        let idle = self.idle_strategy().map_err(|reason| Error::Config {
            origin: "layout".into(),
            reason,
        })?;
        Ok(StemOptions {
            idle,
            lazy_ns: self
                .layout
                .lazy_ns
                .unwrap_or_else(|| StemOptions::lazy_for_depth(link_depth)),
            accounting: true,
        })
    }

    /// Tile names in affinity order: `kind:index`.
    pub fn tile_names(&self) -> Vec<String> {
        self.layout
            .tiles
            .iter()
            .flat_map(|t| (0..t.count).map(move |i| format!("{}:{i}", t.kind)))
            .collect()
    }

    /// Number of tiles of `kind`.
    pub fn count(&self, kind: &str) -> usize {
        self.layout
            .tiles
            .iter()
            .find(|t| t.kind == kind)
            .map_or(0, |t| t.count)
    }

    /// Validates the affinity against `online` CPUs for this layout's tiles.
    pub fn plan(&self, online: &[usize]) -> Result<AffinityPlan> {
        self.affinity()?.plan(self.tile_names().len(), online)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        [layout]
        affinity = "0-1"
        idle = "park"
        park_micros = 20
        [[layout.tiles]]
        kind = "source"
        [[layout.tiles]]
        kind = "sink"
        count = 2
        [[links]]
        from = "source"
        to = "sink"
        depth = 1024
        reliable = false
        [metrics]
        listen = "127.0.0.1:7999"
    "#;

    #[test]
    fn parses_a_layout() {
        let c = LayoutConfig::from_toml(GOOD, "good.toml").unwrap();
        assert_eq!(c.tile_names(), ["source:0", "sink:0", "sink:1"]);
        assert_eq!(c.idle_strategy(), Ok(IdleStrategy::Park { micros: 20 }));
        assert_eq!(c.links[0].name(), "source->sink");
        assert_eq!(c.links[0].mtu, 1232);
        assert!(!c.links[0].reliable);
        assert_eq!(c.metrics.listen.as_deref(), Some("127.0.0.1:7999"));
        assert_eq!(c.workspace.name, "pipeline");
        let e = c.plan(&[0, 1]).unwrap_err().to_string();
        assert!(e.contains("2 CPUs for 3 tiles"), "{e}");
    }

    #[test]
    fn backoff_takes_its_floor_and_cap_and_refuses_a_cap_below_the_floor() {
        let text = GOOD.replace(r#"idle = "park""#, r#"idle = "backoff""#);
        let c = LayoutConfig::from_toml(&text, "good.toml").unwrap();
        assert_eq!(
            c.idle_strategy(),
            Ok(IdleStrategy::Backoff {
                min_micros: 20,
                max_micros: 1000
            })
        );
        let text = text.replace("park_micros = 20", "park_micros = 20\npark_max_micros = 10");
        let e = LayoutConfig::from_toml(&text, "good.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("layout.idle"), "{e}");
        assert!(
            e.contains("park_max_micros 10 is below park_micros 20"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_file_line_column_key_and_snippet() {
        let line_of =
            |text: &str, needle: &str| text[..text.find(needle).unwrap()].matches('\n').count() + 1;
        let cases = [
            (GOOD.replace("0-1", "0-x"), "0-x", "layout.affinity"),
            (GOOD.replace("\"park\"", "\"nap\""), "nap", "layout.idle"),
            (GOOD.replace("1024", "1000"), "1000", "links[0].depth"),
            (
                GOOD.replace("to = \"sink\"", "to = \"snk\""),
                "[[links]]",
                "links[0]",
            ),
            (
                GOOD.replace("park_micros", "parkmicros"),
                "parkmicros",
                "layout.parkmicros",
            ),
            (
                GOOD.replace("kind = \"sink\"", "kind = \"source\""),
                "[[layout.tiles]]\n        kind = \"source\"\n        count",
                "layout.tiles[1]",
            ),
        ];
        for (text, needle, key) in cases {
            let e = LayoutConfig::from_toml(&text, "l.toml")
                .unwrap_err()
                .to_string();
            let line = line_of(&text, needle);
            let written = text.lines().nth(line - 1).unwrap();
            let column = written.len() - written.trim_start().len() + 1;
            assert!(
                e.starts_with(&format!("l.toml:{line}:{column}: key `{key}`: ")),
                "{key}: {e}"
            );
            assert!(e.contains(&format!("\n{line} | {written}\n")), "{key}: {e}");
        }
    }
}
