//! The parts of the output contract every command shares (docs/output.md): colour
//! choice, shell completions and the man page generated from the parser, and the exit
//! code of a command stopped by a signal.

use crate::harness::{dyno, dyno_process};
use predicates::prelude::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = dyno().args(["completions", shell]).assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        for sub in ["machine", "compare", "pipeline", "results", "tune"] {
            assert!(text.contains(sub), "{shell} completions lack `{sub}`");
        }
    }
    dyno()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("tcsh"));
}

#[test]
fn the_man_page_is_roff_and_a_directory_gets_one_page_per_subcommand() {
    dyno()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::starts_with(".ie").or(predicate::str::contains(".TH dyno 1")));
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    dyno().args(["man", "--dir"]).arg(&pages).assert().success();
    for page in [
        "dyno.1",
        "dyno-machine.1",
        "dyno-results-list.1",
        "dyno-tune-run.1",
    ] {
        let text = std::fs::read_to_string(pages.join(page)).unwrap_or_default();
        assert!(text.contains(".TH"), "{page} is a man page");
    }
}

#[test]
fn color_takes_three_values_and_names_the_flag_otherwise() {
    dyno()
        .args(["--color", "sometimes", "results", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--color"));
}

fn two_tile_config(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let cfg = dir.join("two-tile.toml");
    std::fs::write(
        &cfg,
        format!(
            "[workspace]\nname = \"{name}\"\ndir = \"{}\"\n\n\
             [layout]\naffinity = \"f2\"\nidle = \"spin-then-yield\"\n\n\
             [[layout.tiles]]\nkind = \"source\"\ncount = 1\n\n\
             [[layout.tiles]]\nkind = \"sink\"\ncount = 1\n\n\
             [[links]]\nfrom = \"source\"\nto = \"sink\"\n",
            dir.display()
        ),
    )
    .unwrap();
    cfg
}

#[test]
fn a_layout_run_as_json_names_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = two_tile_config(dir.path(), &format!("json-{}", std::process::id()));
    let out = dyno()
        .args([
            "pipeline",
            "run",
            "--no-save",
            "--duration",
            "0.3",
            "--format",
            "json",
            "--config",
        ])
        .arg(&cfg)
        .assert()
        .code(0);
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["schema"], "dyno.pipeline.run/1");
    assert!(v["published"].as_u64().is_some(), "{v}");
}

/// A layout run until stopped exits 143 after a clean stop on SIGTERM, as supervisors
/// expect of a process that SIGTERM ended.
#[test]
fn sigterm_stops_a_run_cleanly_with_143() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("sigterm-{}", std::process::id());
    let cfg = two_tile_config(dir.path(), &name);
    let mut child = dyno_process()
        .args([
            "pipeline",
            "run",
            "--no-save",
            "--duration",
            "120",
            "--config",
        ])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the tiles run (their workspace file exists), then SIGTERM.
    let started = Instant::now();
    while !dir.path().join(format!("dyno-{name}")).exists()
        && started.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the pid of a child we spawned and have not yet reaped.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(143), "exit status {status:?}: {err}");
    assert!(err.contains("SIGTERM: stopping"), "{err}");
}

/// `results list` and `results show` speak the JSON contract: a schema, RFC 3339 times,
/// and no spread made up from one sample.
#[test]
fn stored_runs_as_json_carry_a_schema_and_rfc3339_times() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let disk = dir.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    dyno()
        .args(["machine", "--only", "BLAKE2-256", "--hash-duration", "0.02"])
        .args(["--allow-fail", "--format", "json", "-d"])
        .arg(&disk)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0);
    let json = |args: &[&str]| -> serde_json::Value {
        let out = dyno().args(args).arg("--db").arg(&db).assert().code(0);
        serde_json::from_slice(&out.get_output().stdout).unwrap()
    };
    // Colour follows --color, not only the terminal: `always` colours even into a pipe.
    let coloured = |args: &[&str]| -> bool {
        let out = dyno().args(args).arg("--db").arg(&db).assert().code(0);
        String::from_utf8_lossy(&out.get_output().stdout).contains("\x1b[")
    };
    assert!(coloured(&["--color", "always", "results", "list"]));
    assert!(!coloured(&["results", "list"]), "a pipe is not a terminal");
    assert!(!coloured(&["results", "list", "--color", "never"]));
    let list = json(&["results", "list", "--format", "json"]);
    assert_eq!(list["schema"], "dyno.results.list/1");
    let started = list["runs"][0]["started_at"].as_str().unwrap().to_string();
    assert!(started.len() == 20 && started.ends_with('Z'), "{started}");
    let show = json(&["results", "show", "1", "--format", "json"]);
    assert_eq!(show["schema"], "dyno.results.show/1");
    assert_eq!(show["info"]["started_at"], started.as_str());
    assert!(show["finished_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(show["metrics"][0]["n"], 1);
    assert!(show["metrics"][0]["cv"].is_null(), "one sample has no CV");
    let table = dyno()
        .args(["results", "show", "1", "--format", "csv", "--db"])
        .arg(&db)
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&table.get_output().stdout).to_string();
    let row = text
        .lines()
        .find(|l| l.starts_with("BLAKE2-256") || l.contains("Blake2"))
        .unwrap();
    assert!(row.split(',').any(|c| c == "-"), "{text}");
    assert!(!row.contains("0.00 %"), "{text}");
}
