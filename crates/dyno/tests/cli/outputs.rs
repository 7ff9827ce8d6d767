//! Files a flag names (`--output`, `-o`, `--html`): written atomically when they are
//! regular files or new, written through when they are devices or FIFOs, through a
//! symbolic link to its target, and a directory refused with exit 2 naming the flag,
//! before a long command starts. The devices are made with mknod in the test's own
//! directory (the machine's /dev is never written); where mknod is refused the device
//! cases skip with a note.

use crate::harness::served::kinds;
use crate::harness::served::three_runs;
use crate::harness::{dyno, write};
use predicates::prelude::*;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A character device in `dir`: `null` (1,3) takes everything, `full` (1,7) nothing.
/// `None`, with a note, where this process may not make or write devices.
fn device(dir: &Path, name: &str) -> Option<PathBuf> {
    let minor = if name == "full" { "7" } else { "3" };
    let path = dir.join(name);
    let made = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", minor])
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("note: mknod is refused here (not root?); skipping the device cases");
        return None;
    }
    // A mount with `nodev` refuses to open the device even to root.
    if name == "null" && std::fs::write(&path, "probe").is_err() {
        eprintln!("note: devices cannot be opened on this mount; skipping the device cases");
        return None;
    }
    Some(path)
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_char_device()
}

/// A store with three machine runs and one comparison (run ids 4..), in `dir`.
fn store(dir: &Path) -> PathBuf {
    let db = dir.join("r.db");
    three_runs(&db);
    let mut s = dyno_store::Store::open(&db).unwrap();
    kinds::comparison(&mut s, dir, "cmp", 1_795_500_000.0, 1.0);
    db
}

#[test]
fn devices_are_written_through_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let (Some(null), Some(full)) = (device(dir.path(), "null"), device(dir.path(), "full")) else {
        return;
    };
    // A device that takes nothing fails the export as a full disk does: exit 3.
    dyno()
        .args(["results", "export", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&full)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("--output").and(predicate::str::contains("No space")));
    assert!(is_char_device(&full), "the device is still a device");
    for args in [
        vec!["results", "export", "-o"],
        vec!["results", "report", "1", "-o"],
        vec!["compare", "report", "4", "--html"],
    ] {
        dyno()
            .args(&args)
            .arg(&null)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(0);
        assert!(is_char_device(&null), "{args:?} replaced the device");
    }
    let cluster = dir.path().join("c.toml");
    dyno()
        .args(["cluster", "init"])
        .arg(&cluster)
        .assert()
        .code(0);
    dyno()
        .args(["cluster", "export", "--nomad", "--image", "dyno:1", "-o"])
        .arg(&null)
        .arg(&cluster)
        .assert()
        .code(0);
    assert!(is_char_device(&null), "cluster export replaced the device");
    dyno()
        .args(["compare", "report", "4", "--html"])
        .arg(&full)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("--html"));
    assert!(is_char_device(&full));
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
}

/// Temporary files left in `dir` (an atomic write's start its rename never ended).
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect()
}

#[test]
fn a_fifo_gets_the_bytes_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let fifo = dir.path().join("report.html");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("note: mkfifo is not available; skipping");
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || tx.send(std::fs::read_to_string(reader).unwrap()));
    dyno()
        .args(["results", "report", "1", "-o"])
        .arg(&fifo)
        .arg("--db")
        .arg(&db)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    // A FIFO renamed away would leave its reader waiting for ever.
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the FIFO's reader got nothing");
    assert!(got.contains("<html"), "{got}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_symlink_stays_and_its_target_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let real = write(&dir.path().join("real.csv"), "old");
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink("real.csv", &link).unwrap();
    dyno()
        .args(["results", "export", "-o"])
        .arg(&link)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .starts_with("run_id,"));
    let html = dir.path().join("cmp.html");
    std::os::unix::fs::symlink("real.html", &html).unwrap();
    dyno()
        .args(["compare", "report", "4", "--html"])
        .arg(&html)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0);
    assert!(std::fs::symlink_metadata(&html)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(dir.path().join("real.html"))
        .unwrap()
        .contains("<html"));
}

#[test]
fn a_directory_is_refused_naming_the_flag_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (args, flag) in [
        (vec!["results", "export", "-o"], "--output"),
        (vec!["results", "report", "1", "-o"], "--output"),
        (vec!["compare", "report", "4", "--html"], "--html"),
    ] {
        dyno()
            .args(&args)
            .arg(&sub)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "{flag} {}",
                sub.display()
            )));
    }
    // A comparison that would run for seconds is refused before its first execution.
    let cmp = write(
        &dir.path().join("c.toml"),
        "rounds = 1\n[[subject]]\nname = \"a\"\ncommand = [\"sleep\", \"30\"]\n\
         [[subject]]\nname = \"b\"\ncommand = [\"sleep\", \"30\"]\n\
         [[workload]]\nname = \"w\"\nrate = 1\nwarmup_s = 0\nmeasure_s = 5\n",
    );
    let fresh = dir.path().join("fresh.db");
    dyno()
        .args(["compare", "run", "--html"])
        .arg(&sub)
        .arg("--db")
        .arg(&fresh)
        .arg(&cmp)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--html"));
    assert!(!fresh.exists(), "nothing was stored");
    dyno()
        .args(["compare", "run", "--html"])
        .arg(dir.path().join("no/such/r.html"))
        .arg("--db")
        .arg(&fresh)
        .arg(&cmp)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no directory"));
    assert!(!fresh.exists(), "nothing was stored");
    assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 0, "nothing in it");
}
