//! `dyno pipeline bench --sweep verify=1..2,bank=1..2`: one bench per layout of tile
//! counts, every layout checked against the machine before the first runs.

use crate::{BenchConfig, Error, Result};

/// Tile counts to sweep: `(kind, low, high)`, kind `verify` or `bank`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep(Vec<(String, usize, usize)>);

impl Sweep {
    /// Parses `KIND=LOW..HIGH[,KIND=LOW..HIGH]` (a single count `KIND=N` too); the message
    /// says what is wrong with which part.
    pub fn parse(s: &str) -> std::result::Result<Sweep, String> {
        let mut out = Vec::new();
        for part in s.split(',') {
            let (kind, range) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected KIND=LOW..HIGH, e.g. verify=1..2"))?;
            if kind != "verify" && kind != "bank" {
                return Err(format!(
                    "`{kind}`: only verify and bank tile counts can be swept"
                ));
            }
            let (lo, hi) = range.split_once("..").unwrap_or((range, range));
            let num = |x: &str| {
                x.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| format!("`{part}`: counts must be numbers in 1..=64"))
            };
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi {
                return Err(format!("`{part}`: {lo} > {hi}"));
            }
            out.push((kind.to_string(), lo, hi));
        }
        Ok(Sweep(out))
    }

    /// Every (verify, bank) pair, starting from the config's counts `base`.
    pub fn layouts(&self, base: (usize, usize)) -> Vec<(usize, usize)> {
        let range = |k: &str, d: usize| {
            self.0
                .iter()
                .find(|(kind, ..)| kind == k)
                .map_or(d..=d, |&(_, lo, hi)| lo..=hi)
        };
        range("verify", base.0)
            .flat_map(|v| range("bank", base.1).map(move |b| (v, b)))
            .collect()
    }
}

/// One config per layout of `sweep` (or `cfg`'s own layout without one), each validated
/// (config and affinity on the `online` CPUs) before the first runs; `origin` names the
/// config in messages.
pub fn sweep_configs(
    cfg: &BenchConfig,
    sweep: Option<&Sweep>,
    origin: &str,
    online: &[usize],
) -> Result<Vec<BenchConfig>> {
    let base = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let layouts = match sweep {
        Some(s) => s.layouts(base),
        None => vec![base],
    };
    let mut cfgs = Vec::new();
    for (verify, bank) in layouts {
        let mut c = cfg.clone();
        c.layout.verify_tile_count = verify;
        c.layout.bank_tile_count = bank;
        c.validate(origin)?;
        c.tango_layout()
            .plan(online)
            .map_err(|source| Error::Layout {
                origin: origin.to_string(),
                verify,
                bank,
                source,
            })?;
        cfgs.push(c);
    }
    Ok(cfgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_and_expand() {
        let s = Sweep::parse("verify=1..2,bank=1..2").unwrap();
        assert_eq!(s.layouts((1, 1)), [(1, 1), (1, 2), (2, 1), (2, 2)]);
        assert_eq!(Sweep::parse("verify=3").unwrap().layouts((1, 2)), [(3, 2)]);
        for bad in ["pack=1..2", "verify=2..1", "verify=0..1", "verify"] {
            assert!(Sweep::parse(bad).is_err(), "{bad}");
        }
    }
}
