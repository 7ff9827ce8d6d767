//! A hostile or careless user's inputs that are no fault of the input (issue 47): a
//! load to a target nothing listens on, a listener on a port another process holds.
//! Those are runtime failures (exit 3), named, not usage errors (2).

use crate::harness::{dyno_process, free_udp, node_genesis, write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// A one-validator genesis of a few accounts in `dir`.
fn genesis(dir: &Path) -> PathBuf {
    node_genesis(dir, "n1=1", &["--accounts", "8"])
}

/// Runs `dyno` with `args` and returns its exit code and stderr.
fn exit_and_stderr(cmd: &mut std::process::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_load_to_a_target_nothing_listens_on_is_a_runtime_failure() {
    let dir = tempfile::tempdir().unwrap();
    let g = genesis(dir.path());
    // A UDP port just freed: nothing answers QUIC there.
    let target = format!("127.0.0.1:{}", free_udp());
    let (code, err) = exit_and_stderr(dyno_process().args(["load", "--genesis"]).arg(&g).args([
        "--target",
        &target,
        "--duration",
        "1",
        "--rate",
        "10",
    ]));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("--target") && err.contains(&target), "{err}");
}

#[test]
fn a_node_whose_metrics_port_is_taken_is_a_runtime_failure() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let cfg = write(
        &dir.path().join("n1.toml"),
        &format!(
            "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\n\
             metrics_listen = \"{addr}\"\n"
        ),
    );
    let (code, err) = exit_and_stderr(dyno_process().args(["node", "run", "--config"]).arg(&cfg));
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("metrics") && err.contains(&addr.to_string()),
        "{err}"
    );
}

#[test]
fn serve_on_a_port_that_is_taken_is_a_runtime_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    drop(dyno_store::Store::open(&db).unwrap());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = exit_and_stderr(
        dyno_process()
            .args(["serve", "--db"])
            .arg(&db)
            .args(["--listen", &addr]),
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains(&format!("--listen {addr}")), "{err}");
}

/// Runs `dyno` with `args` in `dir`; expects exit 2 and returns stderr.
fn refused_in(dir: &Path, args: &[&str]) -> String {
    let (code, err) = exit_and_stderr(dyno_process().current_dir(dir).args(args));
    assert_eq!(code, Some(2), "{args:?}: {err}");
    err
}

#[test]
fn genesis_flags_are_blamed_by_their_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["node", "genesis", "--validators", "n1=1", "--out", "g.toml"];
    for (flag, value) in [("--accounts", "0"), ("--slot-ms", "0")] {
        let args: Vec<&str> = base.iter().copied().chain([flag, value]).collect();
        let err = refused_in(dir.path(), &args);
        assert!(
            err.contains(&format!("error: {flag} {value}: must be")),
            "{err}"
        );
        assert!(!err.contains("--validators"), "{err}");
    }
    assert!(!dir.path().join("g.toml").exists(), "nothing left behind");
}

#[test]
fn every_metric_name_the_only_error_suggests_is_accepted_by_only() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused_in(dir.path(), &["machine", "--only", "no-such-metric"]);
    let known = err
        .split("known metrics: ")
        .nth(1)
        .expect("a list of names");
    // `Name ("Shown Name"), ...`: both spellings of each.
    let suggested: Vec<&str> = known
        .lines()
        .next()
        .unwrap()
        .split(", ")
        .flat_map(|m| {
            let (name, shown) = m.split_once(" (").expect("Name (\"Shown\")");
            [name, shown.trim_end_matches(')').trim_matches('"')]
        })
        .collect();
    assert!(
        suggested.contains(&"BLAKE2-256-Parallel-N"),
        "{suggested:?}"
    );
    for name in suggested {
        // `--help` after the flag: clap checks the value, then prints help (exit 0).
        let (code, err) =
            exit_and_stderr(dyno_process().args(["machine", "--only", name, "--help"]));
        assert_eq!(code, Some(0), "--only {name}: {err}");
    }
}

/// examples/pipeline/two-tile.toml with `edit` applied, its metrics on a free port.
fn two_tile(dir: &Path, edit: (&str, &str)) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/pipeline/two-tile.toml")).unwrap();
    assert!(text.contains(edit.0), "{}", edit.0);
    let text = text
        .replacen(edit.0, edit.1, 1)
        .replace("127.0.0.1:7999", "127.0.0.1:0")
        .replace(
            "name = \"two-tile\"",
            &format!("name = \"{}\"", workspace_of(dir)),
        );
    write(&dir.join("layout.toml"), &text)
}

/// A workspace name of this test's own (the default lives in /dev/shm, shared).
fn workspace_of(dir: &Path) -> String {
    format!(
        "hostile-{}",
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .replace(['/', ' '], "")
    )
}

#[test]
fn a_bad_pipeline_layout_is_refused_at_its_key_before_any_tile_runs() {
    for (edit, key, line) in [
        (
            ("name = \"two-tile\"", "name = \"bad/name\""),
            "workspace.name",
            "26",
        ),
        (
            ("frag_size = 64", "frag_size = 100000"),
            "synthetic.frag_size",
            "32",
        ),
        (
            ("frag_size = 64", "frag_size = 0"),
            "synthetic.frag_size",
            "32",
        ),
        (
            ("kind = \"sink\"", "kind = \"blackhole\""),
            "layout.tiles[1].kind",
            "15",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = two_tile(dir.path(), edit);
        let err = refused_in(
            dir.path(),
            &[
                "pipeline",
                "run",
                "--config",
                "layout.toml",
                "--duration",
                "1",
                "--no-save",
            ],
        );
        assert!(
            err.contains(&format!("layout.toml:{line}:1: key `{key}`")),
            "{edit:?}: {err}"
        );
        assert!(!err.contains("running"), "refused before starting: {err}");
        if key.ends_with("kind") {
            assert!(err.contains("\"blackhole\""), "the kind named: {err}");
        }
        drop(path);
    }
}

#[test]
fn a_cluster_file_without_links_names_the_missing_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/cluster/mini-torus.toml")).unwrap();
    let mut kept = Vec::new();
    let mut in_links = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_links = line.trim_start_matches('[').starts_with("links");
        }
        if !in_links {
            kept.push(line);
        }
    }
    assert!(kept.len() < text.lines().count(), "the example has links");
    write(&dir.path().join("c.toml"), &kept.join("\n"));
    let err = refused_in(dir.path(), &["cluster", "check", "c.toml"]);
    assert!(err.contains("c.toml: no `links`"), "{err}");
    assert!(!err.contains("c.toml:1:1"), "line 1 is not at fault: {err}");
}

#[test]
fn a_directory_as_the_store_is_named_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused_in(dir.path(), &["results", "list", "--db", "."]);
    assert!(
        err.contains("is a directory, not a results store file"),
        "{err}"
    );
    assert!(!err.contains("disk I/O"), "{err}");
}

#[test]
fn an_older_store_is_named_older_with_the_command_that_migrates_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    drop(dyno_store::Store::open(&db).unwrap());
    // Back to schema version 1 (before run uuids), as an older dyno left it.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid; DROP TABLE sample_batches;
             DROP INDEX hosts_machine; PRAGMA user_version = 1;",
        )
        .unwrap();
    let db_arg = db.to_str().unwrap();
    for args in [
        vec!["results", "list", "--db", db_arg],
        vec!["serve", "--db", db_arg, "--listen", "127.0.0.1:0"],
    ] {
        let err = refused_in(dir.path(), &args);
        assert!(
            err.contains("has an older dyno schema (version 1"),
            "{args:?}: {err}"
        );
        assert!(err.contains("dyno results migrate --db"), "{args:?}: {err}");
        assert!(!err.contains("not a dyno results store"), "{args:?}: {err}");
    }
    let (code, err) = exit_and_stderr(dyno_process().args(["results", "migrate", "--db", db_arg]));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = exit_and_stderr(dyno_process().args(["results", "list", "--db", db_arg]));
    assert_eq!(code, Some(0), "migrated, it reads: {err}");
}

#[test]
fn the_battery_of_bad_inputs_holds_for_this_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/hostile/battery.sh"))
        .env("DYNO", env!("CARGO_BIN_EXE_dyno"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("battery:"))
        .collect();
    assert!(cases.len() >= 30, "{text}");
    for line in cases {
        assert!(
            line.ends_with(" OK") || line.contains(" SKIP "),
            "one line per case, each OK or SKIP: {line}"
        );
    }
}
