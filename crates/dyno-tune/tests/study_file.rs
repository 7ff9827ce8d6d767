//! The study-file parser: a good file, and each kind of error with its line and key.

use dyno_tune::profile::{Lto, OptLevel, TargetCpu};
use dyno_tune::{
    expand, Extract, Invocation, Study, TuneError, DEFAULT_BENCHMARK_TIMEOUT_S, EXAMPLE,
};
use std::path::Path;

const GOOD: &str = r#"
[project]
manifest = "node/Cargo.toml"
package = "polkadot"
bin = "polkadot"

[matrix]
toolchain = ["stable", "nightly"]
target_cpu = ["none", "native"]
opt_level = [2, 3, "s"]
lto = [false, "off", "thin", "fat"]
codegen_units = [1, 16]
panic = ["unwind", "abort"]
rustflags = ["", "-C force-frame-pointers=yes"]
exclude = [{ lto = "off", codegen_units = 1 }, { toolchain = "nightly", opt_level = "s" }]

[[baseline]]
name = "official"
binary = "/opt/polkadot/polkadot"

[[benchmark]]
name = "machine"
args = ["benchmark", "machine", "--disk-duration", "0"]
extract = { kind = "substrate-table", metrics = ["BLAKE2-256", "SR25519-Verify"] }

[[benchmark]]
name = "remark"
command = ["{bin}", "benchmark", "extrinsic", "--pallet", "system"]
extract = { kind = "regex", pattern = 'Median: (?P<value>[0-9.]+)', metric = "remark", unit = "ns", direction = "lower" }
timeout = "90s"

[run]
repetitions = 24
min_rounds = 6
time_budget = "2h"
alpha = 0.01
min_effect = 0.02
futility = 0.2
jobs = 2
seed = 7
"#;

fn parse(text: &str) -> Result<Study, TuneError> {
    Study::parse(Path::new("/studies/s.toml"), text)
}

/// Parses `text`, expects an error, returns (line, message).
fn error(text: &str) -> (usize, String) {
    match parse(text) {
        Err(TuneError::Study(d)) => {
            assert_eq!(d.path, Path::new("/studies/s.toml"));
            (d.line().unwrap_or(0), d.to_string())
        }
        Err(other) => panic!("not a study error: {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

#[test]
fn good_file_parses_into_types() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.project.manifest, Path::new("/studies/node/Cargo.toml"));
    assert_eq!(s.project.package.as_deref(), Some("polkadot"));
    assert_eq!(s.project.profile, "production");
    assert_eq!(
        s.matrix.lto,
        [Lto::ThinLocal, Lto::Off, Lto::Thin, Lto::Fat]
    );
    assert_eq!(
        s.matrix.opt_level,
        [OptLevel::Level(2), OptLevel::Level(3), OptLevel::S]
    );
    assert_eq!(s.matrix.target_cpu, [TargetCpu::None, TargetCpu::Native]);
    assert_eq!(s.exclude.len(), 2);
    assert_eq!(s.baselines[0].binary, Path::new("/opt/polkadot/polkadot"));
    assert!(matches!(s.benchmarks[0].invocation, Invocation::Args(_)));
    assert!(matches!(s.benchmarks[1].extract, Extract::Regex { .. }));
    assert_eq!(
        s.benchmarks[1]
            .invocation
            .command_line(Path::new("/b/polkadot"))[..2],
        ["/b/polkadot".to_string(), "benchmark".to_string()]
    );
    assert_eq!(s.benchmarks[0].timeout_s, DEFAULT_BENCHMARK_TIMEOUT_S);
    assert_eq!(s.benchmarks[1].timeout_s, 90.0);
    assert_eq!(s.run.max_rounds, 24);
    assert_eq!(s.run.min_rounds, 6);
    assert_eq!(s.run.time_budget_s, Some(7200.0));
    assert_eq!(
        (s.run.alpha, s.run.min_effect, s.run.jobs, s.run.seed),
        (0.01, 0.02, 2, 7)
    );
    assert_eq!(s.run.futility, 0.2);
    // 2 x 2 x 3 x 4 x 2 x 2 x 2 = 384; minus lto=off&cgu=1 (48) and nightly&s (64) plus
    // their overlap (nightly, s, off, cgu1: 8 counted twice).
    let v = expand(&s.matrix, &s.exclude, &s.project.profile);
    assert_eq!(v.len(), 384 - 48 - 64 + 8);
}

#[test]
fn the_init_example_is_a_valid_study() {
    let s = parse(EXAMPLE).unwrap();
    assert_eq!(s.project.bin, "dyno");
    assert!(!expand(&s.matrix, &s.exclude, &s.project.profile).is_empty());
}

fn with(section: &str, replace: &str, by: &str) -> String {
    assert!(GOOD.contains(replace), "{section}: {replace}");
    GOOD.replacen(replace, by, 1)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn unknown_key_names_its_line() {
    let t = with(
        "project",
        "bin = \"polkadot\"",
        "bin = \"polkadot\"\nbinary = \"x\"",
    );
    let (line, msg) = error(&t);
    assert_eq!(line, line_of(&t, "binary = \"x\""));
    assert!(msg.contains("binary"), "{msg}");
}

#[test]
fn unknown_matrix_dimension() {
    let t = with("matrix", "panic = [", "strip = [true]\npanic = [");
    let (line, msg) = error(&t);
    assert_eq!(line, line_of(&t, "strip = "));
    assert!(msg.contains("strip"), "{msg}");
}

#[test]
fn impossible_values_name_line_and_key() {
    for (replace, by, key) in [
        (
            "lto = [false, \"off\", \"thin\", \"fat\"]",
            "lto = [false, \"medium\"]",
            "lto",
        ),
        (
            "lto = [false, \"off\", \"thin\", \"fat\"]",
            "lto = [\"false\"]",
            "lto",
        ),
        (
            "opt_level = [2, 3, \"s\"]",
            "opt_level = [2, 4]",
            "opt_level",
        ),
        (
            "panic = [\"unwind\", \"abort\"]",
            "panic = [\"explode\"]",
            "panic",
        ),
        (
            "codegen_units = [1, 16]",
            "codegen_units = [-1]",
            "codegen_units",
        ),
    ] {
        let t = with("matrix", replace, by);
        let (line, msg) = error(&t);
        assert_eq!(line, line_of(&t, by), "{by}: {msg}");
        assert!(msg.contains(key), "{by}: {msg}");
    }
}

#[test]
fn semantic_errors_name_line_and_key() {
    let cases = [
        (
            "codegen_units = [1, 16]",
            "codegen_units = [0, 16]",
            "codegen_units",
        ),
        (
            "codegen_units = [1, 16]",
            "codegen_units = [16, 16]",
            "codegen_units",
        ),
        (
            "exclude = [{ lto = \"off\", codegen_units = 1 }",
            "exclude = [{ lto = \"off\", codegen_units = 8 }",
            "codegen_units",
        ),
        ("alpha = 0.01", "alpha = 1.5", "alpha"),
        ("min_effect = 0.02", "min_effect = -1.0", "min_effect"),
        ("futility = 0.2", "futility = 1.0", "futility"),
        (
            "time_budget = \"2h\"",
            "time_budget = \"soon\"",
            "time_budget",
        ),
        ("min_rounds = 6", "min_rounds = 1", "min_rounds"),
        ("jobs = 2", "jobs = 0", "jobs"),
        // A file's counts have their flag's bounds (--jobs 1..=256, --max-rounds).
        (
            "jobs = 2",
            "jobs = 1000000000",
            "must be in 1..=256 (as --jobs), got 1000000000",
        ),
        ("jobs = 2", "jobs = 1e9", "jobs"),
        (
            "repetitions = 24",
            "repetitions = 1000000",
            "must be in 1..=100000 (as --max-rounds), got 1000000",
        ),
        (
            "rustflags = [\"\", ",
            "rustflags = [\"-C target-cpu=native\", ",
            "target_cpu",
        ),
    ];
    for (replace, by, key) in cases {
        let t = with("semantic", replace, by);
        let (line, msg) = error(&t);
        assert_eq!(line, line_of(&t, by), "{by}: {msg}");
        assert!(msg.contains(key), "{by}: {msg}");
    }
}

#[test]
fn benchmark_errors_name_the_benchmark() {
    // Both args and command.
    let t = with(
        "b",
        "name = \"remark\"",
        "name = \"remark\"\nargs = [\"x\"]",
    );
    let (line, msg) = error(&t);
    assert_eq!(
        line,
        line_of(&t, "name = \"remark\"") - 1,
        "the [[benchmark]] header"
    );
    assert!(
        msg.contains("remark") && msg.contains("exactly one"),
        "{msg}"
    );
    // A regex without the value group.
    let t = with("b", "(?P<value>[0-9.]+)", "([0-9.]+)");
    let (line, msg) = error(&t);
    assert_eq!(line, line_of(&t, "Median: ("));
    assert!(msg.contains("pattern") && msg.contains("value"), "{msg}");
    // An unknown extractor kind.
    let t = with("b", "kind = \"substrate-table\"", "kind = \"csv\"");
    let (line, msg) = error(&t);
    assert_eq!(line, line_of(&t, "kind = \"csv\""));
    assert!(msg.contains("csv"), "{msg}");
    // A command without {bin}.
    let t = with("b", "command = [\"{bin}\"", "command = [\"/usr/bin/true\"");
    let (_, msg) = error(&t);
    assert!(msg.contains("{bin}"), "{msg}");
    // A timeout that is not a positive duration.
    for bad in ["\"soon\"", "0"] {
        let t = with("b", "timeout = \"90s\"", &format!("timeout = {bad}"));
        let (line, msg) = error(&t);
        assert_eq!(line, line_of(&t, "timeout = "));
        assert!(msg.contains("remark") && msg.contains("timeout"), "{msg}");
    }
    // No benchmark at all.
    let cut = GOOD.find("[[benchmark]]").unwrap();
    let run = GOOD.find("[run]").unwrap();
    let t = format!("{}{}", &GOOD[..cut], &GOOD[run..]);
    let (_, msg) = error(&t);
    assert!(msg.contains("[[benchmark]]"), "{msg}");
}

#[test]
fn missing_project_and_bad_manifest() {
    let (_, msg) = error("[matrix]\nlto = [false]\n");
    assert!(msg.contains("project"), "{msg}");
    let t = with(
        "p",
        "manifest = \"node/Cargo.toml\"",
        "manifest = \"node/\"",
    );
    let (line, msg) = error(&t);
    assert_eq!(line, 3);
    assert!(msg.contains("manifest"), "{msg}");
}

#[test]
fn display_is_file_line_column_message() {
    let t = with(
        "matrix",
        "lto = [false, \"off\", \"thin\", \"fat\"]",
        "lto = [\"medium\"]",
    );
    let err = parse(&t).unwrap_err().to_string();
    let line = line_of(&t, "lto = [\"medium\"]");
    assert!(
        err.starts_with(&format!("/studies/s.toml:{line}:8: key `matrix.lto`: ")),
        "{err}"
    );
    // toml's snippet, on lines of its own.
    assert!(
        err.contains(&format!("\n{line} | lto = [\"medium\"]\n")),
        "{err}"
    );
}

#[test]
fn work_dir_is_absolute_next_to_the_study() {
    let s = Study::parse(Path::new("s.toml"), GOOD).unwrap();
    let w = s.work_dir();
    assert!(w.is_absolute(), "{}", w.display());
    assert!(w.ends_with("s.tune"));
}

#[test]
fn pgo_dimension_training_and_their_errors() {
    use dyno_tune::profile::Pgo;
    let text = with(
        GOOD,
        "rustflags = [\"\", \"-C force-frame-pointers=yes\"]\n",
        "pgo = [\"off\", \"on\", \"on+bolt\"]\n",
    );
    let s = parse(&text).unwrap();
    assert_eq!(s.matrix.pgo, [Pgo::Off, Pgo::On, Pgo::OnBolt]);
    let vs = expand(&s.matrix, &s.exclude, &s.project.profile);
    assert!(vs.iter().any(|v| v.label.ends_with("/pgo+bolt")));
    // Without [pgo], training runs the benchmarks' own commands, and says so.
    let (training, same) = s.training_commands();
    assert!(same);
    assert_eq!(training[0][0], "{bin}");
    assert_eq!(training[1][..3], ["{bin}", "benchmark", "extrinsic"]);
    let trained =
        format!("{text}\n[pgo]\ntraining = [[\"{{bin}}\", \"--small\"]]\ntimeout = \"2m\"\n");
    let s = parse(&trained).unwrap();
    assert_eq!(
        s.training_commands(),
        (vec![vec!["{bin}".to_string(), "--small".into()]], false)
    );
    assert_eq!(s.pgo.timeout_s, 120.0);

    let bad = with(
        GOOD,
        "rustflags = [\"\", \"-C force-frame-pointers=yes\"]\n",
        "pgo = [\"on\", \"bolt\"]\n",
    );
    let (line, msg) = error(&bad);
    assert_eq!(line, line_of(&bad, "pgo = "));
    assert!(msg.contains("on+bolt"), "{msg}");
    let bad = format!("{text}\n[pgo]\ntraining = [[\"./train\"]]\n");
    let (line, msg) = error(&bad);
    assert_eq!(line, line_of(&bad, "training = "));
    assert!(
        msg.contains("key `pgo.training`: each command") && msg.contains("{bin}"),
        "{msg}"
    );
    let bad = format!("{text}\n[pgo]\ntimeout = \"soon\"\n");
    let (line, msg) = error(&bad);
    assert_eq!(line, line_of(&bad, "timeout = \"soon\""));
    assert!(msg.contains("key `pgo.timeout`: not a positive"), "{msg}");
    let bad = format!("{text}\n[pgo]\ntrainer = []\n");
    assert!(error(&bad).1.contains("trainer"));
    let bad = with(GOOD, "exclude = [", "exclude = [{ pgo = \"on\" }, ");
    let (line, msg) = error(&bad);
    assert_eq!(line, line_of(&bad, "exclude = "));
    assert!(msg.contains("exclude `pgo`"), "{msg}");
}

#[test]
fn an_exclude_key_that_is_no_setting_is_refused_on_its_line() {
    // An exclude rule's keys are a variant's settings: a typo is refused, not ignored
    // (ignored, the rule would exclude more than meant).
    let bad = with(
        "exclude",
        "exclude = [{ lto = \"off\", codegen_units = 1 }",
        "exclude = [{ lto = \"off\", codegen_unit = 1 }",
    );
    let (line, msg) = error(&bad);
    assert_eq!(line, line_of(&bad, "exclude = "));
    assert!(msg.contains("unknown field `codegen_unit`"), "{msg}");
    assert!(msg.contains("`codegen_units`"), "{msg}");
}
