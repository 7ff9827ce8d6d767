//! The machine metrics dyno knows: Substrate's set and the validator extras.

use dyno_model::{Direction, Metric, Unit};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Identity of one machine benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MetricId {
    /// BLAKE2b-256 over a 32 KiB buffer, one thread (Substrate).
    Blake2256,
    /// The same on N threads at once, average per-thread throughput (Substrate).
    Blake2256Parallel,
    /// sr25519 verification of 2048 signatures over 32-byte messages (Substrate).
    Sr25519Verify,
    /// One 64 MiB memcpy (Substrate).
    MemCopy,
    /// 64 MiB sequential write plus fsync (Substrate).
    DiskSeqWrite,
    /// 16,384 shuffled 2 KiB writes plus fsync (Substrate).
    DiskRndWrite,
    /// Ed25519 verification, one signature at a time (dyno extra).
    Ed25519Verify,
    /// Ed25519 batch verification in batches of 64 (dyno extra).
    Ed25519BatchVerify,
    /// SHA-256 hash chain h = sha256(h), the proof-of-history rate (dyno extra).
    Sha256Chain,
    /// 64 MiB memcpy on every online core at once, summed (dyno extra).
    MemCopyAllCores,
    /// Time to execute one transfer in the reference node's bank, ns (dyno extra). Plays
    /// the role of Substrate's `benchmark extrinsic --pallet system --extrinsic remark`.
    TransferExecute,
}

/// Which timing flag limits a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationClass {
    /// `--hash-duration`.
    Hash,
    /// `--verify-duration`.
    Verify,
    /// `--memory-duration`.
    Memory,
    /// `--disk-duration`.
    Disk,
    /// `--extra-duration` (dyno's metrics outside the Substrate set).
    Extra,
}

impl MetricId {
    /// The metrics to run, in registry order: those in `only` (all when empty), less those
    /// in `skip`, only Substrate's six with `substrate_only`.
    pub fn select(only: &[MetricId], skip: &[MetricId], substrate_only: bool) -> Vec<MetricId> {
        MetricId::ALL
            .into_iter()
            .filter(|m| only.is_empty() || only.contains(m))
            .filter(|m| !skip.contains(m))
            .filter(|m| !substrate_only || m.is_substrate())
            .collect()
    }

    /// Every metric in the order they run: Substrate's first, in upstream order.
    pub const ALL: [MetricId; 11] = [
        MetricId::Blake2256,
        MetricId::Blake2256Parallel,
        MetricId::Sr25519Verify,
        MetricId::MemCopy,
        MetricId::DiskSeqWrite,
        MetricId::DiskRndWrite,
        MetricId::Ed25519Verify,
        MetricId::Ed25519BatchVerify,
        MetricId::Sha256Chain,
        MetricId::MemCopyAllCores,
        MetricId::TransferExecute,
    ];

    /// The stable name (Substrate's JSON name for Substrate metrics).
    pub fn name(self) -> &'static str {
        match self {
            MetricId::Blake2256 => "Blake2256",
            MetricId::Blake2256Parallel => "Blake2256Parallel",
            MetricId::Sr25519Verify => "Sr25519Verify",
            MetricId::MemCopy => "MemCopy",
            MetricId::DiskSeqWrite => "DiskSeqWrite",
            MetricId::DiskRndWrite => "DiskRndWrite",
            MetricId::Ed25519Verify => "Ed25519Verify",
            MetricId::Ed25519BatchVerify => "Ed25519BatchVerify",
            MetricId::Sha256Chain => "Sha256Chain",
            MetricId::MemCopyAllCores => "MemCopyAllCores",
            MetricId::TransferExecute => "TransferExecute",
        }
    }

    /// Parses a metric as people write it: the stable name (`DiskSeqWrite`, as in
    /// requirement files), the name the table prints (`Seq Write`, `BLAKE2-256`,
    /// `BLAKE2-256-Parallel-8` with any thread count), or either with another case and
    /// with `-`, `_` or spaces anywhere (`seq-write`, `mem_copy`).
    pub fn parse(s: &str) -> Option<MetricId> {
        let wanted = spelling_key(s);
        if wanted.is_empty() {
            return None;
        }
        Self::ALL
            .into_iter()
            .find(|m| spelling_key(m.name()) == wanted || m.display_key() == wanted)
    }

    /// The table name reduced by [`spelling_key`]; the parallel metric's thread count is
    /// not part of its identity.
    fn display_key(self) -> String {
        match self {
            MetricId::Blake2256Parallel => "blake2256parallel".into(),
            _ => spelling_key(&self.display(0)),
        }
    }

    /// Every spelling [`MetricId::parse`] accepts for this metric, for error messages:
    /// the stable name, then the table's name when it differs.
    pub fn spellings(self) -> String {
        let shown = match self {
            MetricId::Blake2256Parallel => "BLAKE2-256-Parallel-N".to_string(),
            _ => self.display(0),
        };
        format!("{} (\"{shown}\")", self.name())
    }

    /// True for the six metrics of Substrate's `benchmark machine`.
    pub fn is_substrate(self) -> bool {
        !matches!(
            self,
            MetricId::Ed25519Verify
                | MetricId::Ed25519BatchVerify
                | MetricId::Sha256Chain
                | MetricId::MemCopyAllCores
                | MetricId::TransferExecute
        )
    }

    /// Table category, as upstream (CPU, Memory, Disk).
    pub fn category(self) -> &'static str {
        match self {
            MetricId::MemCopy | MetricId::MemCopyAllCores => "Memory",
            MetricId::DiskSeqWrite | MetricId::DiskRndWrite => "Disk",
            _ => "CPU",
        }
    }

    /// The function name shown in the table (`num_cores` for the parallel variant).
    pub fn display(self, num_cores: usize) -> String {
        match self {
            MetricId::Blake2256 => "BLAKE2-256".into(),
            MetricId::Blake2256Parallel => format!("BLAKE2-256-Parallel-{num_cores}"),
            MetricId::Sr25519Verify => "SR25519-Verify".into(),
            MetricId::MemCopy => "Copy".into(),
            MetricId::DiskSeqWrite => "Seq Write".into(),
            MetricId::DiskRndWrite => "Rnd Write".into(),
            MetricId::Ed25519Verify => "Ed25519-Verify".into(),
            MetricId::Ed25519BatchVerify => "Ed25519-Verify-Batch".into(),
            MetricId::Sha256Chain => "SHA-256-Chain".into(),
            MetricId::MemCopyAllCores => "Copy-All-Cores".into(),
            MetricId::TransferExecute => "Transfer-Execute".into(),
        }
    }

    /// The unit of the score.
    pub fn unit(self) -> Unit {
        match self {
            MetricId::Ed25519Verify | MetricId::Ed25519BatchVerify | MetricId::Sha256Chain => {
                Unit::PerSecond
            }
            MetricId::TransferExecute => Unit::Nanoseconds,
            _ => Unit::BytesPerSecond,
        }
    }

    /// Whether a larger score is better: true for every throughput, false for the
    /// per-transaction time.
    pub fn direction(self) -> Direction {
        match self {
            MetricId::TransferExecute => Direction::LowerIsBetter,
            _ => Direction::HigherIsBetter,
        }
    }

    /// The metric as the store records it.
    pub fn metric(self) -> Metric {
        Metric::new(self.name(), self.unit(), self.direction())
    }

    /// Which duration flag limits it.
    pub fn duration_class(self) -> DurationClass {
        match self {
            MetricId::Blake2256 | MetricId::Blake2256Parallel => DurationClass::Hash,
            MetricId::Sr25519Verify => DurationClass::Verify,
            MetricId::MemCopy => DurationClass::Memory,
            MetricId::DiskSeqWrite | MetricId::DiskRndWrite => DurationClass::Disk,
            _ => DurationClass::Extra,
        }
    }

    /// True for the disk benchmarks (they need a writable base path).
    pub fn is_disk(self) -> bool {
        matches!(self, MetricId::DiskSeqWrite | MetricId::DiskRndWrite)
    }
}

/// A name reduced to what identifies it: lower case, without `-`, `_` and whitespace.
/// A trailing thread count of the parallel metric is dropped.
fn spelling_key(s: &str) -> String {
    let key: String = s
        .chars()
        .filter(|c| *c != '-' && *c != '_' && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    match key.strip_prefix("blake2256parallel") {
        // `N` is the placeholder the error message and the docs show for the count.
        Some(n) if n == "n" || n.chars().all(|c| c.is_ascii_digit()) => "blake2256parallel".into(),
        _ => key,
    }
}

impl fmt::Display for MetricId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_leniently_and_round_trip() {
        for m in MetricId::ALL {
            assert_eq!(MetricId::parse(m.name()), Some(m));
        }
        assert_eq!(MetricId::parse("blake2-256"), Some(MetricId::Blake2256));
        assert_eq!(MetricId::parse("MEM_COPY"), Some(MetricId::MemCopy));
        assert_eq!(MetricId::parse("Blake3"), None);
    }

    #[test]
    fn names_parse_as_the_table_prints_them() {
        for m in MetricId::ALL {
            assert_eq!(MetricId::parse(&m.display(8)), Some(m), "{}", m.display(8));
            assert_eq!(
                MetricId::parse(&m.display(8).to_uppercase()),
                Some(m),
                "{m}"
            );
        }
        for (typed, want) in [
            ("Seq Write", MetricId::DiskSeqWrite),
            ("seq-write", MetricId::DiskSeqWrite),
            ("DiskSeqWrite", MetricId::DiskSeqWrite),
            ("disk_seq_write", MetricId::DiskSeqWrite),
            ("rnd write", MetricId::DiskRndWrite),
            ("copy", MetricId::MemCopy),
            ("Copy-All-Cores", MetricId::MemCopyAllCores),
            ("sr25519-verify", MetricId::Sr25519Verify),
            ("BLAKE2-256-Parallel-16", MetricId::Blake2256Parallel),
            ("blake2-256-parallel", MetricId::Blake2256Parallel),
            ("BLAKE2-256-Parallel-N", MetricId::Blake2256Parallel),
            ("Ed25519-Verify-Batch", MetricId::Ed25519BatchVerify),
            ("  Transfer Execute ", MetricId::TransferExecute),
        ] {
            assert_eq!(MetricId::parse(typed), Some(want), "{typed}");
        }
        for refused in ["", " - ", "Seq", "Write", "BLAKE2-256-Parallel-x", "Copy2"] {
            assert_eq!(MetricId::parse(refused), None, "{refused:?}");
        }
        // No two metrics share a spelling, so no name is ambiguous.
        let mut keys: Vec<String> = MetricId::ALL
            .iter()
            .flat_map(|m| [spelling_key(m.name()), m.display_key()])
            .collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        let distinct_names = MetricId::ALL
            .iter()
            .filter(|m| spelling_key(m.name()) != m.display_key())
            .count()
            + MetricId::ALL.len();
        assert_eq!(keys.len(), distinct_names, "{n} spellings");
    }

    #[test]
    fn substrate_set_is_the_upstream_six() {
        let subs: Vec<_> = MetricId::ALL
            .into_iter()
            .filter(|m| m.is_substrate())
            .collect();
        assert_eq!(subs.len(), 6);
        assert_eq!(
            MetricId::TransferExecute.direction(),
            Direction::LowerIsBetter
        );
        assert_eq!(
            MetricId::Blake2256Parallel.display(8),
            "BLAKE2-256-Parallel-8"
        );
        assert_eq!(MetricId::DiskRndWrite.category(), "Disk");
    }
}
