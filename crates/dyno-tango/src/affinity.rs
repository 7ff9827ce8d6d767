//! CPU affinity lists: parsing, expansion and validation against the online CPUs.
//!
//! Syntax: `auto`, or comma-separated entries, each one of
//! `N` (CPU N), `N-M` (N to M inclusive), `N-M/S` (every S-th CPU from N to M),
//! `f` (one floating, unpinned tile) or `fK` (K floating tiles).
//! Tile i gets the i-th slot of the expanded list. Validation happens before any thread
//! starts, and its messages name the entry at fault and list the online CPUs (unlike a
//! failure deep inside `sched_setaffinity`).

use std::fmt;

use crate::error::{Error, Result};

/// One entry of an affinity list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AffinityEntry {
    /// A single CPU.
    Cpu(usize),
    /// CPUs `lo..=hi` every `stride`.
    Range {
        /// First CPU.
        lo: usize,
        /// Last CPU (inclusive upper bound).
        hi: usize,
        /// Step (>= 1).
        stride: usize,
    },
    /// `count` floating tiles (`f` is one).
    Floating(usize),
}

/// An affinity list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Affinity {
    /// Every online CPU in order; tiles beyond them float.
    Auto,
    /// Explicit entries.
    List(Vec<AffinityEntry>),
}

/// Where one tile runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CpuSlot {
    /// Pinned to this CPU.
    Pinned(usize),
    /// Not pinned.
    Floating,
}

/// A validated assignment of tiles to CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityPlan {
    /// Slot of tile i.
    pub slots: Vec<CpuSlot>,
    /// Non-fatal findings (the library never prints; the caller shows them).
    pub warnings: Vec<String>,
}

const MAX_CPU: usize = 1 << 16;

impl fmt::Display for AffinityEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AffinityEntry::Cpu(n) => write!(f, "{n}"),
            AffinityEntry::Range { lo, hi, stride: 1 } => write!(f, "{lo}-{hi}"),
            AffinityEntry::Range { lo, hi, stride } => write!(f, "{lo}-{hi}/{stride}"),
            AffinityEntry::Floating(1) => write!(f, "f"),
            AffinityEntry::Floating(k) => write!(f, "f{k}"),
        }
    }
}

impl fmt::Display for Affinity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Affinity::Auto => write!(f, "auto"),
            Affinity::List(entries) => {
                for (i, e) in entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

fn err(input: &str, reason: impl Into<String>) -> Error {
    Error::Affinity {
        input: input.to_string(),
        reason: reason.into(),
    }
}

fn number(s: &str, entry: &str) -> Result<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(entry, format!("{s:?} is not a CPU number")));
    }
    match s.parse::<usize>() {
        Ok(n) if n < MAX_CPU => Ok(n),
        _ => Err(err(
            entry,
            format!("CPU number {s} is too large (max {})", MAX_CPU - 1),
        )),
    }
}

impl AffinityEntry {
    fn parse(entry: &str) -> Result<AffinityEntry> {
        if let Some(k) = entry.strip_prefix('f') {
            let count = if k.is_empty() { 1 } else { number(k, entry)? };
            if count == 0 {
                return Err(err(entry, "f0 names no tile"));
            }
            return Ok(AffinityEntry::Floating(count));
        }
        let (range, stride) = match entry.split_once('/') {
            Some((r, s)) => (r, Some(number(s, entry)?)),
            None => (entry, None),
        };
        match range.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo, entry)?, number(hi, entry)?);
                let stride = stride.unwrap_or(1);
                if hi < lo {
                    return Err(err(entry, format!("range {lo}-{hi} runs backwards")));
                }
                if stride == 0 {
                    return Err(err(entry, "stride must be at least 1"));
                }
                Ok(AffinityEntry::Range { lo, hi, stride })
            }
            None if stride.is_some() => Err(err(entry, "a stride needs a range (N-M/S)")),
            None => Ok(AffinityEntry::Cpu(number(range, entry)?)),
        }
    }

    fn expand(&self, out: &mut Vec<CpuSlot>) {
        match *self {
            AffinityEntry::Cpu(n) => out.push(CpuSlot::Pinned(n)),
            AffinityEntry::Range { lo, hi, stride } => {
                out.extend((lo..=hi).step_by(stride).map(CpuSlot::Pinned))
            }
            AffinityEntry::Floating(k) => out.extend(std::iter::repeat_n(CpuSlot::Floating, k)),
        }
    }
}

impl std::str::FromStr for Affinity {
    type Err = Error;

    fn from_str(s: &str) -> Result<Affinity> {
        let t = s.trim();
        if t == "auto" {
            return Ok(Affinity::Auto);
        }
        if t.is_empty() {
            return Err(err(s, "empty affinity (use \"auto\" or a CPU list)"));
        }
        t.split(',')
            .map(|e| AffinityEntry::parse(e.trim()))
            .collect::<Result<Vec<_>>>()
            .map(Affinity::List)
            .map_err(|e| match e {
                // Quote the whole value as given, naming the entry at fault inside it.
                Error::Affinity { input, reason } => err(s, format!("entry {input:?}: {reason}")),
                other => other,
            })
    }
}

/// Formats a CPU list compactly (`0-3,6`).
pub use dyno_proc::host::format_cpu_list;

impl Affinity {
    /// Assigns `tiles` tiles to slots, checking every pinned CPU against `online`.
    pub fn plan(&self, tiles: usize, online: &[usize]) -> Result<AffinityPlan> {
        let online_list = format_cpu_list(online);
        let mut warnings = Vec::new();
        let entries = match self {
            Affinity::Auto => {
                let mut slots: Vec<CpuSlot> = online
                    .iter()
                    .take(tiles)
                    .map(|&c| CpuSlot::Pinned(c))
                    .collect();
                if slots.len() < tiles {
                    warnings.push(format!(
                        "affinity \"auto\": {tiles} tiles on {} online CPUs ({online_list}); \
                         {} tiles float",
                        online.len(),
                        tiles - slots.len()
                    ));
                    slots.resize(tiles, CpuSlot::Floating);
                }
                return Ok(AffinityPlan { slots, warnings });
            }
            Affinity::List(entries) => entries,
        };
        let mut slots = Vec::new();
        let mut owner: std::collections::HashMap<usize, AffinityEntry> = Default::default();
        for e in entries {
            let start = slots.len();
            e.expand(&mut slots);
            for s in &slots[start..] {
                let CpuSlot::Pinned(cpu) = *s else { continue };
                // The whole list is quoted: with "0,0" the entry alone ("0") hides the fault.
                if !online.contains(&cpu) {
                    return Err(err(
                        &self.to_string(),
                        format!(
                            "entry \"{e}\": CPU {cpu} does not exist or is offline; \
                             online CPUs: {online_list}"
                        ),
                    ));
                }
                if let Some(first) = owner.insert(cpu, *e) {
                    return Err(err(
                        &self.to_string(),
                        format!(
                            "entry \"{e}\": CPU {cpu} is repeated (already given by entry \
                             \"{first}\"); online CPUs: {online_list}"
                        ),
                    ));
                }
            }
        }
        if slots.len() < tiles {
            return Err(err(
                &self.to_string(),
                format!(
                    "lists {} CPUs for {tiles} tiles; add CPUs or floating tiles (fK); \
                     online CPUs: {online_list}",
                    slots.len()
                ),
            ));
        }
        if slots.len() > tiles {
            warnings.push(format!(
                "affinity \"{self}\" lists {} CPUs for {tiles} tiles; the last {} are unused",
                slots.len(),
                slots.len() - tiles
            ));
            slots.truncate(tiles);
        }
        Ok(AffinityPlan { slots, warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Result<Affinity> {
        s.parse()
    }

    #[test]
    fn parses_every_form() {
        use AffinityEntry::*;
        assert_eq!(p("auto").unwrap(), Affinity::Auto);
        assert_eq!(
            p("3, 0-2,4-10/3,f,f2").unwrap(),
            Affinity::List(vec![
                Cpu(3),
                Range {
                    lo: 0,
                    hi: 2,
                    stride: 1
                },
                Range {
                    lo: 4,
                    hi: 10,
                    stride: 3
                },
                Floating(1),
                Floating(2)
            ])
        );
        for bad in [
            "", "x", "1-", "-1", "2-1", "1/2", "1-4/0", "f0", "1,,2", "99999999", "fx",
        ] {
            assert!(p(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn plan_expands_and_validates() {
        let online = [0, 1, 2, 3];
        let plan = p("0-3/2,1,f3").unwrap().plan(5, &online).unwrap();
        use CpuSlot::*;
        assert_eq!(
            plan.slots,
            vec![Pinned(0), Pinned(2), Pinned(1), Floating, Floating]
        );
        assert_eq!(plan.warnings.len(), 1, "6 slots for 5 tiles is a warning");

        let e = p("0,5").unwrap().plan(2, &online).unwrap_err().to_string();
        assert!(
            e.contains("\"5\"") && e.contains("CPU 5") && e.contains("online CPUs: 0-3"),
            "{e}"
        );
        let e = p("0-2,1")
            .unwrap()
            .plan(4, &online)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CPU 1 is repeated") && e.contains("\"0-2\""),
            "{e}"
        );
        let e = p("0,0").unwrap().plan(2, &online).unwrap_err().to_string();
        assert!(
            e.contains("affinity \"0,0\"") && e.contains("CPU 0 is repeated"),
            "the whole value is quoted: {e}"
        );
        let e = "0,x".parse::<Affinity>().unwrap_err().to_string();
        assert!(e.contains("\"0,x\"") && e.contains("\"x\""), "{e}");
        let e = p("0-1").unwrap().plan(3, &online).unwrap_err().to_string();
        assert!(e.contains("2 CPUs for 3 tiles") && e.contains("0-3"), "{e}");

        let auto = Affinity::Auto.plan(6, &online).unwrap();
        assert_eq!(
            auto.slots[..4],
            [Pinned(0), Pinned(1), Pinned(2), Pinned(3)]
        );
        assert_eq!(auto.slots[4..], [Floating, Floating]);
        assert_eq!(auto.warnings.len(), 1);
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    fn entry() -> impl Strategy<Value = AffinityEntry> {
        prop_oneof![
            (0usize..4096).prop_map(AffinityEntry::Cpu),
            (0usize..4096, 0usize..64, 1usize..8).prop_map(|(lo, len, stride)| {
                AffinityEntry::Range {
                    lo,
                    hi: lo + len,
                    stride,
                }
            }),
            (1usize..64).prop_map(AffinityEntry::Floating),
        ]
    }

    proptest! {
        // Proptest persists failures in files, which Miri's isolation forbids; the parser
        // has no unsafe code, so these run natively only.
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        #[cfg_attr(miri, ignore)]
        fn display_then_parse_round_trips(entries in prop::collection::vec(entry(), 1..12)) {
            let a = Affinity::List(entries);
            prop_assert_eq!(a.to_string().parse::<Affinity>().unwrap(), a);
        }

        #[test]
        #[cfg_attr(miri, ignore)]
        fn parsing_arbitrary_strings_never_panics(s in ".{0,40}") {
            let _ = s.parse::<Affinity>();
        }

        #[test]
        #[cfg_attr(miri, ignore)]
        fn planning_arbitrary_lists_never_panics(s in "[0-9f,/-]{0,24}", tiles in 0usize..40) {
            if let Ok(a) = s.parse::<Affinity>() {
                if let Ok(plan) = a.plan(tiles, &[0, 1, 2, 3, 4, 5, 6, 7]) {
                    prop_assert_eq!(plan.slots.len(), tiles);
                }
            }
        }
    }
}
