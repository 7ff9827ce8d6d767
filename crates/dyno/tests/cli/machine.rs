//! `dyno machine` as people type it: metric names as the table prints them, Substrate's
//! `--chain`/`--dev`/`-d`, their refusals, and the verdict in the stored run's report.
//! Durations are tiny and no assertion depends on how fast this machine is.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

use crate::harness::{entries, Env, QUICK};

/// `dyno machine` with tiny durations and no disk path, and its JSON document.
trait Machine {
    fn machine(&self, extra: &[&str]) -> Command;
    fn machine_json(&self, extra: &[&str]) -> (serde_json::Value, String);
}

impl Machine for Env {
    /// `dyno machine` with tiny durations and no disk path.
    fn machine(&self, extra: &[&str]) -> Command {
        let mut c = self.dyno();
        c.arg("machine").args(QUICK).args(extra);
        c
    }
    /// Runs `dyno machine ... --format json --allow-fail` and parses its document.
    fn machine_json(&self, extra: &[&str]) -> (serde_json::Value, String) {
        let out = self
            .machine(extra)
            .args(["--format", "json", "--allow-fail"])
            .assert()
            .code(0)
            .get_output()
            .clone();
        (
            serde_json::from_slice(&out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

fn metrics(doc: &serde_json::Value) -> Vec<String> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn metrics_are_accepted_as_the_table_prints_them() {
    let env = Env::new();
    let disk = env.disk();
    let disk = disk.to_str().unwrap();
    // The table's names, a dashed lower-case spelling, and the requirement files' names.
    let (doc, _) = env.machine_json(&[
        "-d",
        disk,
        "--only",
        "Seq Write,blake2-256,SR25519-VERIFY,ed25519_verify",
        "--skip",
        "Ed25519-Verify",
        "--no-save",
    ]);
    assert_eq!(
        metrics(&doc),
        ["Blake2256", "Sr25519Verify", "DiskSeqWrite"],
        "registry order, the skipped one left out"
    );
    assert_eq!(entries(Path::new(disk)), 0, "disk files removed");
    let (doc, _) = env.machine_json(&["--only", "seq-write", "--base-path", disk, "--no-save"]);
    assert_eq!(metrics(&doc), ["DiskSeqWrite"]);
    let (doc, _) = env.machine_json(&["--only", "BLAKE2-256-Parallel-8", "--no-save"]);
    assert_eq!(metrics(&doc), ["Blake2256Parallel"]);
}

#[test]
fn misspelled_metrics_are_refused_whole_with_the_spellings_that_work() {
    let env = Env::new();
    for (flag, typed) in [("--only", "Seq Wrte"), ("--skip", "Copy,Blake3")] {
        env.machine(&[flag, typed]).assert().code(2).stderr(
            predicate::str::contains(flag)
                .and(predicate::str::contains("DiskSeqWrite (\"Seq Write\")"))
                .and(predicate::str::contains("MemCopy (\"Copy\")")),
        );
    }
    env.machine(&["--only", "Seq Wrte"])
        .assert()
        .stderr(predicate::str::contains("`Seq Wrte`"));
    assert!(!env.db().exists(), "nothing stored");
}

#[test]
fn chain_and_dev_pick_the_built_in_set_and_say_so() {
    let env = Env::new();
    for (args, chain) in [
        (&["--chain", "polkadot"][..], "polkadot"),
        (&["--chain", "Kusama"][..], "Kusama"),
        (&["--dev"][..], "dev"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--only", "Blake2256", "--no-save"]);
        let (doc, stderr) = env.machine_json(&all);
        assert_eq!(doc["settings"]["requirements"], "substrate", "{args:?}");
        assert_eq!(doc["settings"]["chain"], chain, "{args:?}");
        assert!(
            stderr.contains("built-in requirement set `substrate`"),
            "{args:?} says which set: {stderr}"
        );
        assert!(
            doc["results"][0]["minimum"].as_f64().unwrap() > 0.0,
            "judged against the set"
        );
    }
}

#[test]
fn unknown_chains_and_conflicting_choices_are_refused() {
    let env = Env::new();
    env.machine(&["--chain", "moonbeam-alpha", "--only", "Blake2256"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--chain")
                .and(predicate::str::contains("`moonbeam-alpha`"))
                .and(predicate::str::contains("polkadot, polkadot-dev"))
                .and(predicate::str::contains("--requirements FILE")),
        );
    let file = env.dir.path().join("req.json");
    std::fs::write(&file, r#"[{"metric": "Blake2256", "minimum": 1.0}]"#).unwrap();
    let file = file.to_str().unwrap();
    for (args, named) in [
        (
            &["--chain", "polkadot", "--requirements", file][..],
            "--requirements",
        ),
        (&["--dev", "--requirements", file][..], "--requirements"),
        (&["--dev", "--chain", "kusama"][..], "--chain"),
        (
            &["--chain", "polkadot", "--reference", "substrate-2022"][..],
            "--reference",
        ),
    ] {
        env.machine(args).assert().code(2).stderr(
            predicate::str::contains(named).and(predicate::str::contains("cannot be used")),
        );
    }
    env.machine(&["--chain"]).assert().code(2);
    assert!(!env.db().exists(), "nothing stored");
}

#[test]
fn short_d_is_the_base_path_and_a_missing_one_is_named() {
    let env = Env::new();
    let missing = env.dir.path().join("no-such-dir");
    env.machine(&["-d", missing.to_str().unwrap(), "--only", "Rnd Write"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no-such-dir"));
    assert!(!missing.exists());
    assert!(!env.db().exists(), "nothing stored");
}

#[test]
fn one_sample_has_no_spread_and_the_report_carries_the_verdict() {
    let env = Env::new();
    // One repetition: no CV in JSON, "-" in the report.
    let (doc, _) = env.machine_json(&["--only", "Blake2256,Sha256Chain"]);
    assert!(doc["results"][0]["cv"].is_null(), "{}", doc["results"][0]);
    let verdict = doc["verdict"].as_str().unwrap().to_string();
    let html = env.dir.path().join("machine.html");
    env.dyno()
        .args(["results", "report", "1", "--output"])
        .arg(&html)
        .assert()
        .code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Requirements: run 1"), "verdict section");
    assert!(page.contains("substrate"), "names the set");
    let sentence = if verdict == "pass" {
        "The hardware meets the requirements."
    } else {
        "The hardware fails to meet the requirements."
    };
    assert!(
        page.contains(sentence),
        "same verdict as the terminal: {verdict}"
    );
    assert!(
        page.contains("from 1 benchmarks in total"),
        "only BLAKE2-256 has a minimum"
    );
    assert!(page.contains("no minimum"), "the extra is shown unjudged");
    assert!(!page.contains("0.00 %"), "no CV of zero for one sample");
}

#[test]
fn repeated_runs_report_a_spread() {
    let env = Env::new();
    let (doc, _) = env.machine_json(&["--only", "Blake2256", "--repeat", "3", "--no-save"]);
    let cv = doc["results"][0]["cv"].as_f64().unwrap();
    assert!(cv >= 0.0 && cv.is_finite(), "{cv}");
    assert_eq!(doc["results"][0]["samples"].as_array().unwrap().len(), 3);
}
