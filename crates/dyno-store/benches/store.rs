//! Store throughput and export memory: inserts N samples (default 1,000,000), exports
//! them to Parquet, CSV and JSON lines, and prints times, sizes and peak resident memory.
//!
//! ```text
//! cargo bench -p dyno-store --bench store                 # 1,000,000 samples
//! cargo bench -p dyno-store --bench store -- 10000000     # the 10M memory check
//! DYNO_BENCH_SAMPLES=10000000 cargo bench -p dyno-store --bench store
//! DYNO_BENCH_DIR=/some/disk ...                           # where the store is written
//! ```
//!
//! Peak memory is `VmHWM` from `/proc/self/status`, reset through `/proc/self/clear_refs`
//! before each export so each figure is that export's own peak.

use dyno_model::{Direction, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{ExportFormat, RunFilter, Store};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

const BATCH: usize = 1_000;

fn main() {
    let samples: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .or_else(|| std::env::var("DYNO_BENCH_SAMPLES").ok())
        .map(|s| s.replace('_', "").parse().expect("sample count"))
        .unwrap_or(1_000_000);
    let base = std::env::var_os("DYNO_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(&base).expect("temporary directory");
    let fs =
        dyno_proc::host::filesystem_of(dir.path()).map_or_else(|| "unknown".into(), |f| f.fs_type);
    println!(
        "dyno-store bench: {samples} samples in {} ({fs})",
        dir.path().display()
    );
    if cfg!(debug_assertions) {
        println!("WARNING: debug build; run `cargo bench` for meaningful figures");
    }

    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).expect("open store");
    let metrics = [
        Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter),
        Metric::new("Sr25519Verify", Unit::PerSecond, Direction::HigherIsBetter),
        Metric::new(
            "MemoryCopy",
            Unit::BytesPerSecond,
            Direction::HigherIsBetter,
        ),
        Metric::new(
            "DiskSeqWrite",
            Unit::BytesPerSecond,
            Direction::HigherIsBetter,
        ),
    ];
    let info = RunInfo {
        command: "machine".into(),
        subject: Subject::new(SubjectKind::Machine, "bench"),
        host: dyno_proc::host::probe(dir.path()),
        started_at: dyno_model::now_unix(),
        command_line: vec!["dyno".into(), "machine".into()],
        tool_version: "bench".into(),
        settings: serde_json::json!({}),
    };
    let run = store.begin_run(&info, &metrics).expect("begin run");

    let (t, cpu) = (Instant::now(), cpu_seconds());
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut batch = Vec::with_capacity(BATCH);
    for i in 0..samples {
        // xorshift64: values with full 53-bit mantissas, so nothing compresses trivially.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        batch.push(Sample {
            metric: metrics[i % metrics.len()].name.clone(),
            repetition: (i / metrics.len()) as u32,
            value: (rng >> 11) as f64 * 1e-3,
        });
        if batch.len() == BATCH || i + 1 == samples {
            store.add_samples(run, &batch).expect("add samples");
            batch.clear();
        }
    }
    store
        .finish_run(run, RunStatus::Complete)
        .expect("finish run");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "insert   {samples:>11} samples  {secs:7.2} s (cpu {:.2} s)  {:>9.0} samples/s  (batches of {BATCH})  db {}  peak RSS {}",
        cpu_seconds() - cpu,
        samples as f64 / secs,
        mib(file_size(&path)),
        peak_rss()
    );
    drop(store);

    let store = Store::open_read_only(&path).expect("reopen store");
    let t = Instant::now();
    let listed = store.list_runs(&RunFilter::default()).expect("list runs");
    assert_eq!(listed[0].samples, samples as u64);
    println!(
        "list     1 run ({samples} samples counted)  {:7.3} s",
        t.elapsed().as_secs_f64()
    );
    for (name, format) in [
        ("parquet", ExportFormat::Parquet),
        ("csv", ExportFormat::Csv),
        ("jsonl", ExportFormat::JsonLines),
    ] {
        reset_peak_rss();
        let out_path = dir.path().join(format!("export.{name}"));
        let mut out = BufWriter::new(std::fs::File::create(&out_path).expect("export file"));
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let rows = store.export(&[], format, &mut out).expect("export");
        out.flush().expect("flush export");
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(rows, samples as u64);
        println!(
            "export   {name:<8} {rows:>11} rows  {secs:7.2} s (cpu {:.2} s)  {:>9.0} rows/s  file {}  peak RSS {}",
            cpu_seconds() - cpu,
            rows as f64 / secs,
            mib(file_size(&out_path)),
            peak_rss()
        );
    }
}

/// User plus system CPU time of this process: on a busy machine it shows the work done
/// apart from the wait for a core.
fn cpu_seconds() -> f64 {
    dyno_proc::procfs::own_cpu_seconds().unwrap_or(0.0)
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Peak resident set size (`VmHWM`), as the kernel reports it.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| dyno_proc::procfs::parse_status(&s).peak_rss_bytes)
        .map_or_else(|| "unknown".into(), mib)
}

/// Resets `VmHWM` to the current RSS (Linux 4.0+); harmless where unsupported.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
