use super::*;

const GOOD: &str = r#"
rounds = 4
seed = 7

[[subject]]
name = "old"
command = ["sh", "-c", "exec sleep 100", "{workload}"]
env = { RATE = "{rate}" }

[[subject]]
name = "new"
command = ["sh"]
metrics = { prometheus = "http://127.0.0.1:7999/metrics" }

[[workload]]
name = "value"
rate = 1000
warmup_s = 1
measure_s = 3
args = ["--rate", "{rate}"]
"#;

fn parse(text: &str) -> Result<ComparisonFile, ConfigError> {
    ComparisonFile::parse(text, Path::new("cmp.toml"))
}

#[test]
fn a_good_file_parses_with_defaults() {
    let c = parse(GOOD).unwrap();
    assert_eq!(
        (c.rounds, c.seed, c.noise_band, c.alpha),
        (4, 7, 0.02, 0.05)
    );
    assert_eq!(c.subjects[0].name, "old");
    let w = &c.workloads[0];
    assert_eq!(
        c.subjects[0].command_for(w),
        ["sh", "-c", "exec sleep 100", "value", "--rate", "1000"]
    );
    let env = c.subjects[0].env_for(w);
    assert_eq!(env["RATE"], "1000");
    assert_eq!(env["DYNO_WORKLOAD"], "value");
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_key() {
    let e = err(&GOOD.replace(
        "name = \"new\"\ncommand = [\"sh\"]",
        "name = \"new\"\ncommand = [\"./no/such/node\"]",
    ));
    assert!(
        e.starts_with("cmp.toml:12:1: key `subject[1].command`: "),
        "{e}"
    );
    assert!(e.contains("does not exist"), "{e}");

    let e = err(&GOOD.replace("command = [\"sh\"]", "command = [\"no-such-node-xyz\"]"));
    assert!(e.contains("not an executable on PATH"), "{e}");

    let e = err(&GOOD.replace("rate = 1000", "rate = 0"));
    assert!(
        e.starts_with("cmp.toml:17:1: key `workload[0].rate`: "),
        "{e}"
    );

    let e = err(&GOOD.replace("rounds = 4", "rounds = 0"));
    assert_eq!(
        e,
        "cmp.toml:2:10: key `rounds`: 0 is out of range: give 1 to 10000 rounds\n  |\n2 | rounds = 0\n  |          ^"
    );

    let e = err(&GOOD.replace("seed = 7", "sead = 7"));
    assert!(
        e.starts_with("cmp.toml:3:1: key `sead`: unknown field `sead`")
            && e.contains("\n3 | sead = 7\n  | ^^^^"),
        "{e}"
    );

    let e = err(&GOOD.replace("warmup_s = 1", "warmup_s = 1\nspeed = 2"));
    assert!(e.contains("unknown field `speed`"), "{e}");

    let e = err(&GOOD.replace("name = \"new\"", "name = \"old\""));
    assert!(e.contains("subject[1].name"), "{e}");

    let e = err(&GOOD.replace(
        "command = [\"sh\"]",
        "git = { manifest = \"Cargo.toml\", rev = \"v1\" }",
    ));
    assert!(
        e.starts_with("cmp.toml:12:1: key `subject[1].git`: ") && e.contains("Cargo.toml"),
        "{e}"
    );

    let e = err(&GOOD.replace("http://127.0.0.1:7999/metrics", "https://x/metrics"));
    assert!(e.contains("metrics.prometheus"), "{e}");

    let e = err("[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n");
    assert!(e.contains("at least one candidate"), "{e}");
}

#[test]
fn declared_directions_and_ignored_metrics() {
    let with = |decl: &str| {
        GOOD.replace(
            "metrics = { prometheus = \"http://127.0.0.1:7999/metrics\" }",
            &format!("[subject.metrics]\njsonl = \"node.jsonl\"\n{decl}"),
        )
    };
    let c = parse(&with(
        "lower_is_better = [\"jsonl:stage_*\", \"*_s\"]\nhigher_is_better = [\"jsonl:tps\"]\nignore = [\"jsonl:cost_units\"]\n",
    ))
    .unwrap();
    let m = &c.subjects[1].metrics;
    assert_eq!(m.lower_is_better, ["jsonl:stage_*", "*_s"]);
    assert_eq!(m.higher_is_better, ["jsonl:tps"]);
    assert_eq!(m.ignore, ["jsonl:cost_units"]);
    assert_eq!(m.jsonl.as_deref(), Some(Path::new("node.jsonl")));

    // Errors point at the entry: [[subject]] is line 10, [subject.metrics] line 13.
    let e = err(&with("lower_is_better = [\"jsonl:*stage*\"]\n"));
    assert!(
        e.starts_with("cmp.toml:15:20: key `subject[1].metrics.lower_is_better[0]`: "),
        "{e}"
    );
    assert!(e.contains("one `*` at most"), "{e}");

    let e = err(&with(
        "higher_is_better = [\"jsonl:tps\"]\nignore = [\n  \"jsonl:slot\",\n  \"jsonl:*\",\n]\n",
    ));
    assert!(
        e.starts_with("cmp.toml:18:3: key `subject[1].metrics.ignore[1]`: "),
        "{e}"
    );
    assert!(e.contains("`jsonl:tps` in `higher_is_better[0]`"), "{e}");

    let e = err(&with(
        "lower_is_better = [\"a\"]\nhigher_is_better = [\"a\"]\n",
    ));
    assert!(
        e.contains("metrics.lower_is_better[0]") && e.contains("`higher_is_better[0]`"),
        "{e}"
    );

    let e = err(&with("lower_is_beter = [\"a\"]\n"));
    assert!(
        e.starts_with("cmp.toml:15:1: key `subject[1].metrics.lower_is_beter`: unknown field"),
        "{e}"
    );
}

#[test]
fn unknown_workload_is_named() {
    let mut c = parse(GOOD).unwrap();
    let e = c
        .select_workloads(&["script".into()], Path::new("cmp.toml"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "cmp.toml: unknown workload `script` (the file defines: value)"
    );
    c.select_workloads(&["value".into()], Path::new("cmp.toml"))
        .unwrap();
    assert_eq!(c.workloads.len(), 1);
}

#[test]
fn non_executable_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("node");
    std::fs::write(&f, "#!/bin/sh\n").unwrap();
    let e = check_executable(f.to_str().unwrap(), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an executable file"), "{e}");
    assert!(check_executable("./node", Some(dir.path())).is_err());
    assert!(check_executable("sh", None).is_ok());
}

#[test]
fn primary_metrics_are_named_once_each_and_do_not_change_the_fingerprint() {
    let with = |list: &str| GOOD.replace("seed = 7", &format!("seed = 7\nprimary = {list}"));
    let c = parse(&with(r#"["cpu_s_per_tx", "jsonl:tps"]"#)).unwrap();
    assert_eq!(c.primary, ["cpu_s_per_tx", "jsonl:tps"]);
    assert_eq!(
        crate::resume::fingerprint(&c),
        crate::resume::fingerprint(&parse(GOOD).unwrap())
    );
    let e = err(&with("[]"));
    assert!(
        e.starts_with("cmp.toml:4:11: key `primary`: name at least one metric"),
        "{e}"
    );
    let e = err(&with(r#"["cpu_s_per_tx", "cpu_s_per_tx"]"#));
    assert!(
        e.starts_with("cmp.toml:4:28: key `primary`: `cpu_s_per_tx` is named twice"),
        "{e}"
    );
    let e = err(&with(r#"[" "]"#));
    assert!(
        e.contains("key `primary`: a metric name cannot be empty"),
        "{e}"
    );
}

#[test]
fn a_precision_target_and_its_budget_are_checked() {
    let with = |head: &str| GOOD.replace("rounds = 4\n", head);
    let c = parse(&with("precision = \"5%\"\n")).unwrap();
    let seq = c.sequential.unwrap();
    assert_eq!(
        (seq.precision, seq.max_rounds, seq.max_minutes),
        (0.05, 100, 60.0)
    );
    assert_eq!(
        (c.rounds, c.test),
        (100, Some(dyno_judge::TestKind::Sequential))
    );
    let c = parse(&with(
        "precision = 0.03\nmax_rounds = 40\nmax_minutes = 15\n",
    ))
    .unwrap();
    assert_eq!(c.sequential.unwrap().max_rounds, 40);
    // The budget is not part of what is measured: the same comparison continues.
    let a = parse(&with("precision = \"5%\"\nmax_rounds = 40\n")).unwrap();
    let b = parse(&with("precision = \"3%\"\nmax_rounds = 80\n")).unwrap();
    assert_eq!(
        crate::resume::fingerprint(&a),
        crate::resume::fingerprint(&b)
    );
    assert_ne!(
        crate::resume::fingerprint(&a),
        crate::resume::fingerprint(&parse(GOOD).unwrap())
    );
    for (head, starts) in [
        (
            "precision = \"0%\"\n",
            "cmp.toml:2:13: key `precision`: 0% is not in (0%, 100%)",
        ),
        (
            "precision = \"100%\"\n",
            "cmp.toml:2:13: key `precision`: 100% is not in (0%, 100%)",
        ),
        (
            "precision = 5\n",
            "cmp.toml:2:13: key `precision`: 5 is not in (0, 1)",
        ),
        (
            "precision = \"1%\"\n",
            "cmp.toml:2:13: key `precision`: 1% is inside the noise band (2%)",
        ),
        (
            "precision = \"5%\"\nmax_rounds = 0\n",
            "cmp.toml:3:14: key `max_rounds`: not a budget: 0 is out of range: give 2 to 10000",
        ),
        (
            "precision = \"5%\"\nmax_minutes = 0\n",
            "cmp.toml:3:15: key `max_minutes`: not a budget: 0 is out of range: give more than 0 to 10080 minutes",
        ),
        (
            "max_rounds = 20\n",
            "cmp.toml:2:14: key `max_rounds`: a budget for reaching a precision",
        ),
        (
            "precision = \"5%\"\nrounds = 10\n",
            "cmp.toml:3:10: key `rounds`: a precision target decides the rounds",
        ),
        (
            "precision = \"5%\"\ntest = \"paired\"\n",
            "cmp.toml:3:8: key `test`: `paired` cannot be looked at after every round",
        ),
    ] {
        let e = err(&with(head));
        assert!(e.starts_with(starts), "{head}: {e}");
    }
    // --precision and the budgets on the command line, each refusal naming its flag.
    let mut c = parse(GOOD).unwrap();
    c.apply_precision(Some("4%"), Some(30), None).unwrap();
    assert_eq!(c.sequential.unwrap().max_rounds, 30);
    assert_eq!(c.rounds, 30);
    let mut c = parse(GOOD).unwrap();
    let e = c.apply_precision(None, Some(30), None).unwrap_err();
    assert!(e.starts_with("--max-rounds: "), "{e}");
    let e = c.apply_precision(Some("120%"), None, None).unwrap_err();
    assert!(
        e.starts_with("--precision: 120% is not in (0%, 100%)"),
        "{e}"
    );
    let e = c.apply_precision(Some("5%"), None, Some(0.0)).unwrap_err();
    assert!(
        e.starts_with("--max-minutes: not a budget: 0 is out of range"),
        "{e}"
    );
    let e = c
        .apply_precision(Some("5%"), Some(1_000_000), None)
        .unwrap_err();
    assert!(e.contains("give 2 to 10000 rounds"), "{e}");
    let mut paired = parse(&GOOD.replace("seed = 7", "seed = 7\ntest = \"paired\"")).unwrap();
    let e = paired.apply_precision(Some("5%"), None, None).unwrap_err();
    assert!(e.contains("`test = \"paired\"`"), "{e}");
    // --rounds sets the rounds of a fixed comparison; a precision target decides them.
    let mut c = parse(GOOD).unwrap();
    c.apply_run_flags(None, None, None, Some(7)).unwrap();
    assert_eq!(c.rounds, 7);
    let e = c
        .apply_run_flags(Some("4%"), None, None, Some(7))
        .unwrap_err();
    assert!(
        e.starts_with("--rounds: the comparison has a precision target"),
        "{e}"
    );
}

#[test]
fn cpu_sets_must_be_on_this_machine() {
    let machine = crate::pinning::machine_cpus();
    let one = machine[0];
    let c = parse(&GOOD.replace(
        "name = \"new\"\n",
        &format!("name = \"new\"\ncpus = \"{one}\"\n"),
    ))
    .unwrap();
    assert_eq!(c.subjects[1].cpus, Some(vec![one]));
    let e = err(&GOOD.replace("name = \"new\"\n", "name = \"new\"\ncpus = \"4096\"\n"));
    assert!(
        e.starts_with("cmp.toml:12:8: key `subject[1].cpus`: CPU 4096 is not on this machine (dyno may use CPUs "),
        "{e}"
    );
    // A pinned subject is a different comparison from an unpinned one.
    assert_ne!(
        crate::resume::fingerprint(&c),
        crate::resume::fingerprint(&parse(GOOD).unwrap())
    );
}

#[test]
fn the_file_names_its_test() {
    let base = "[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n";
    let parse = |head: &str| {
        ComparisonFile::parse(&format!("{head}{base}"), std::path::Path::new("c.toml"))
    };
    assert_eq!(parse("").unwrap().test, None);
    assert_eq!(
        parse("test = \"signed-rank\"\n").unwrap().test,
        Some(TestKind::SignedRank)
    );
    assert_eq!(
        parse("test = \"unpaired\"\n").unwrap().test,
        Some(TestKind::Unpaired)
    );
    // A file without `test` hashes as it did before the key existed (so it resumes);
    // naming the test is a different comparison.
    let json = serde_json::to_string(&parse("").unwrap()).unwrap();
    assert!(!json.contains("\"test\""), "{json}");
    let without = crate::resume::fingerprint(&parse("").unwrap());
    let with = crate::resume::fingerprint(&parse("test = \"paired\"\n").unwrap());
    assert_ne!(without, with);
    let err = parse("test = \"welch\"\n").unwrap_err().to_string();
    assert!(err.contains("test") && err.contains("welch"), "{err}");
    assert!(err.contains("c.toml"), "{err}");
}

#[test]
fn numbers_past_their_bounds_are_refused_naming_line_key_and_range() {
    let err = |text: &str| parse(text).unwrap_err().to_string();
    for (from, to, starts) in [
        (
            "measure_s = 3",
            "measure_s = 1e9",
            "cmp.toml:19:1: key `workload[0].measure_s`: 1000000000 is out of range: give 2 to 86400 seconds",
        ),
        (
            "warmup_s = 1",
            "warmup_s = 1e7",
            "cmp.toml:18:1: key `workload[0].warmup_s`: 10000000 is out of range: give 0 to 86400 seconds",
        ),
        (
            "rate = 1000",
            "rate = 1e12",
            "cmp.toml:17:1: key `workload[0].rate`: 1000000000000 is out of range: give more than 0 to 100000000 tx/s",
        ),
        (
            "rounds = 4",
            "rounds = 4000000000",
            "cmp.toml:2:10: key `rounds`: 4000000000 is out of range: give 1 to 10000 rounds",
        ),
        (
            "seed = 7",
            "seed = 7\ngrace_s = 1e300",
            "cmp.toml:4:11: key `grace_s`: 1e300 is out of range: give 0 to 3600 seconds",
        ),
        (
            "rounds = 4",
            "precision = \"5%\"\nmax_minutes = 1e9",
            "cmp.toml:3:15: key `max_minutes`: not a budget: 1000000000 is out of range",
        ),
    ] {
        let e = err(&GOOD.replace(from, to));
        assert!(e.starts_with(starts), "{to}: {e}");
    }
    let e = err(&GOOD.replace(
        "command = [\"sh\"]",
        "command = [\"sh\"]\nready = { log = \"up\", timeout_s = 1e12 }",
    ));
    assert!(
        e.contains("key `subject[1].ready.timeout_s`: 1000000000000 is out of range"),
        "{e}"
    );
}

#[test]
fn long_and_control_character_names_are_refused_naming_the_key() {
    let err = |text: &str| parse(text).unwrap_err().to_string();
    let long = "x".repeat(100_000);
    let e = err(&GOOD.replace("name = \"old\"", &format!("name = \"{long}\"")));
    assert!(
        e.starts_with("cmp.toml:6:1: key `subject[0].name`: `xxxxxxxxxxxxxxxx...` is 100000 characters long: give at most 64"),
        "{}",
        &e[..e.len().min(300)]
    );
    let e = err(&GOOD.replace("name = \"new\"", "name = \"n\\u0000w\""));
    assert!(e.contains("key `subject[1].name`"), "{e}");
    assert!(e.contains("U+0000"), "{e}");
    let e = err(&GOOD.replace("name = \"value\"", "name = \"v\\u202Eeulav\""));
    assert!(e.contains("key `workload[0].name`"), "{e}");
    assert!(e.contains("U+202E"), "{e}");
    let e = err(&GOOD.replace("name = \"new\"", "name = \"old\""));
    assert!(e.contains("`old` is used twice"), "{e}");
}
