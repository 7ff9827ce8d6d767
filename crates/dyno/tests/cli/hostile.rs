//! A hostile or careless user's inputs that are no fault of the input (issue 47): a
//! load to a target nothing listens on, a listener on a port another process holds.
//! Those are runtime failures (exit 3), named, not usage errors (2).

use crate::harness::{dyno_process, free_udp, write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// A one-validator genesis of a few accounts in `dir`.
fn genesis(dir: &Path) -> PathBuf {
    let p = dir.join("genesis.toml");
    let out = dyno_process()
        .args([
            "node",
            "genesis",
            "--validators",
            "n1=1",
            "--accounts",
            "8",
            "--out",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    p
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
