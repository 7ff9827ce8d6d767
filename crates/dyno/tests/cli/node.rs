//! `dyno node` and `dyno load` as a user meets them: refusals with exit 2 naming the
//! file, line and key (or the address), and two node processes plus a load generator
//! on loopback, where blocks forged by one are adopted by the other and every
//! transaction sent has one fate. Every child process is killed and reaped on drop.

use crate::harness::{dyno_process, events, free_tcp, free_udp, node_genesis, write, Reaped};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

fn genesis(dir: &Path, validators: &str, start_in: &str) -> PathBuf {
    let flags = [
        "--slot-ms",
        "300",
        "--start-in",
        start_in,
        "--accounts",
        "64",
    ];
    node_genesis(dir, validators, &flags)
}

#[test]
fn a_peer_that_is_not_in_the_genesis_is_named_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n1=1,n2=1", "5");
    let cfg = write(
        &dir.path().join("n1.toml"),
        "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\n\n[[peers]]\nid = \"n9\"\naddr = \"127.0.0.1:9\"\n",
    );
    let out = dyno_process()
        .args(["node", "run", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("n1.toml:6:1: key `peers[0].id`") && err.contains("n9"),
        "{err}"
    );
    assert!(err.contains("\n6 | id = \"n9\"\n"), "toml's snippet: {err}");
}

/// Runs `dyno node run` on `cfg`; asserts exit 2 and that stderr has `want` and the
/// snippet line `line`; returns stderr.
fn refused(cfg: &Path, want: &str, line: &str) -> String {
    let out = dyno_process()
        .args(["node", "run", "--duration", "1", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(want), "want {want:?} in: {err}");
    assert!(
        err.lines().any(|l| l == line),
        "want the snippet line {line:?} on its own line in: {err}"
    );
    err
}

#[test]
fn node_config_errors_use_the_one_config_error_format() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n1=1", "5");
    let head = "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\n";
    let cfg = write(&dir.path().join("n1.toml"), &format!("{head}colour = 1\n"));
    refused(
        &cfg,
        "n1.toml:4:1: key `colour`: unknown field `colour`",
        "4 | colour = 1",
    );
    write(&cfg, &format!("{head}mempool_capacity = \"lots\"\n"));
    refused(
        &cfg,
        "n1.toml:4:20: key `mempool_capacity`",
        "4 | mempool_capacity = \"lots\"",
    );
    write(&cfg, &format!("{head}max_block_txs = 999999\n"));
    refused(
        &cfg,
        "n1.toml:4:1: key `max_block_txs`: must be 1 to the genesis's max_block_txs (20000)",
        "4 | max_block_txs = 999999",
    );
    write(&cfg, &format!("{head}replay_threads = 0\n"));
    refused(
        &cfg,
        "n1.toml:4:1: key `replay_threads`: must be 1 to 256",
        "4 | replay_threads = 0",
    );
    let cores = std::thread::available_parallelism().unwrap().get();
    write(&cfg, &format!("{head}bank_tiles = {}\n", cores + 1));
    refused(
        &cfg,
        &format!("n1.toml:4:1: key `bank_tiles`: must be 1 to the cores of this machine ({cores})"),
        &format!("4 | bank_tiles = {}", cores + 1),
    );
    write(
        &cfg,
        &format!("{head}\n[[peers]]\nid = \"n2\"\naddr = \"nowhere\"\n"),
    );
    refused(
        &cfg,
        "n1.toml:7:1: key `peers[0].addr`",
        "7 | addr = \"nowhere\"",
    );
}

#[test]
fn genesis_errors_use_the_one_config_error_format() {
    let dir = tempfile::tempdir().unwrap();
    let g = genesis(dir.path(), "n1=1", "5");
    let good = std::fs::read_to_string(&g).unwrap();
    let cfg = write(
        &dir.path().join("n1.toml"),
        "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\n",
    );
    write(&g, &format!("flavour = 1\n{good}"));
    refused(
        &cfg,
        "genesis.toml:1:1: key `flavour`: unknown field `flavour`",
        "1 | flavour = 1",
    );
    write(&g, &good.replace("slot_ms = 300", "slot_ms = \"fast\""));
    let line = good.lines().position(|l| l.starts_with("slot_ms")).unwrap() + 1;
    refused(
        &cfg,
        &format!("genesis.toml:{line}:11: key `slot_ms`"),
        &format!("{line} | slot_ms = \"fast\""),
    );
    write(
        &g,
        &good.replace("max_block_txs = 20000", "max_block_txs = 0"),
    );
    let line = good
        .lines()
        .position(|l| l.starts_with("max_block_txs"))
        .unwrap()
        + 1;
    refused(
        &cfg,
        &format!("genesis.toml:{line}:1: key `max_block_txs`: must be 1 to"),
        &format!("{line} | max_block_txs = 0"),
    );
}

#[test]
fn a_genesis_where_no_node_gets_a_slot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dyno_process()
        .args(["node", "genesis", "--out"])
        .arg(dir.path().join("g.toml"))
        .args(["--validators", "n1=0,n2=0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`validators[0].stake`") && err.contains("no node"),
        "{err}"
    );
    assert!(!dir.path().join("g.toml").exists(), "nothing left behind");
}

#[test]
fn an_address_in_use_is_named() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n1=1", "5");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let cfg = write(
        &dir.path().join("n1.toml"),
        &format!("id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"{addr}\"\n"),
    );
    let out = dyno_process()
        .args(["node", "run", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // A port another process holds is the machine's state, not the input: exit 3.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&addr.to_string()), "{err}");
}

fn node_config(dir: &Path, id: &str, peer: u16, ingress: u16, other: (&str, u16)) -> PathBuf {
    write(
        &dir.join(format!("{id}.toml")),
        &format!(
            "id = \"{id}\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{peer}\"\n\
             ingress_listen = \"127.0.0.1:{ingress}\"\nnode_log = \"{id}.jsonl\"\n\n\
             [[peers]]\nid = \"{}\"\naddr = \"localhost:{}\"\nlatency_ms = 5\n",
            other.0, other.1
        ),
    )
}

#[test]
fn two_nodes_and_a_load_generator() {
    let dir = tempfile::tempdir().unwrap();
    let g = genesis(dir.path(), "n1=1,n2=1", "2");
    let (p1, p2, i1, i2) = (free_tcp(), free_tcp(), free_udp(), free_udp());
    let c1 = node_config(dir.path(), "n1", p1, i1, ("n2", p2));
    let c2 = node_config(dir.path(), "n2", p2, i2, ("n1", p1));
    let start = |cfg: &Path| {
        Reaped(Some(
            dyno_process()
                .args([
                    "node",
                    "run",
                    "--quiet",
                    "--duration",
                    "7",
                    "--format",
                    "json",
                    "--config",
                ])
                .arg(cfg)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ))
    };
    let (n1, n2) = (start(&c1), start(&c2));
    std::thread::sleep(Duration::from_millis(2500));
    let load = dyno_process()
        .args(["load", "--genesis"])
        .arg(&g)
        .args([
            "--target",
            &format!("127.0.0.1:{i2}"),
            "--rate",
            "200",
            "--duration",
            "2",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let sent: serde_json::Value = serde_json::from_slice(&load.stdout).unwrap();
    let (o1, o2) = (n1.wait_output(), n2.wait_output());
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert!(
        o2.status.success(),
        "{}",
        String::from_utf8_lossy(&o2.stderr)
    );
    let s2: serde_json::Value = serde_json::from_slice(&o2.stdout).unwrap();
    assert_eq!(s2["schema"], "dyno.node.summary/1");
    assert_eq!(sent["schema"], "dyno.load.summary/1");
    let f = &s2["status"]["fates"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    assert_eq!(n(&sent["sent"]), n(&s2["ingress"]["accepted"]));
    assert_eq!(n(&f["received"]), n(&sent["sent"]));
    let settled: u64 = [
        "malformed",
        "invalid_signature",
        "duplicate",
        "dropped_full",
        "executed",
        "failed",
        "in_flight",
    ]
    .iter()
    .map(|k| n(&f[k]))
    .sum();
    assert_eq!(settled, n(&f["received"]));
    assert!(n(&f["executed"]) > 0);
    // Blocks forged by each node are adopted by the other.
    let adopted_by = |id: &str| -> Vec<String> {
        events(&dir.path().join(format!("{id}.jsonl")), "adopted")
            .iter()
            .map(|e| e["block"].as_str().unwrap().to_string())
            .collect()
    };
    for (leader, other) in [("n1", "n2"), ("n2", "n1")] {
        let forged = events(&dir.path().join(format!("{leader}.jsonl")), "forged");
        let adopted = adopted_by(other);
        let crossed = forged
            .iter()
            .filter(|e| adopted.contains(&e["block"].as_str().unwrap().to_string()))
            .count();
        assert!(
            crossed >= 1,
            "{other} adopted none of the {} blocks {leader} forged",
            forged.len()
        );
    }
}

#[test]
fn sigterm_stops_a_node_cleanly_with_its_log_flushed() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n1=1", "1");
    let cfg = write(
        &dir.path().join("n1.toml"),
        "id = \"n1\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:0\"\nnode_log = \"n1.jsonl\"\n",
    );
    let node = Reaped(Some(
        dyno_process()
            .args(["node", "run", "--quiet", "--config"])
            .arg(&cfg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    // Past slot 0's start, so it has forged at least once.
    std::thread::sleep(Duration::from_millis(2500));
    let pid = node.0.as_ref().unwrap().id();
    dyno_proc::signal_process(pid, dyno_proc::Signal::Term).unwrap();
    let out = node.wait_output();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("node n1: height"), "{stdout}");
    // Every block it forged came out of the pipeline's tiles (the default forge).
    let blocks: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("blocks: forged"))
        .unwrap_or_else(|| panic!("{stdout}"))
        .split_whitespace()
        .collect();
    assert_eq!(blocks[2], blocks[3].trim_start_matches('('), "{stdout}");
    assert_eq!(
        blocks[7], "0",
        "no fallback to the sequential bank: {stdout}"
    );
    let log = dir.path().join("n1.jsonl");
    assert_eq!(events(&log, "started").len(), 1);
    assert!(
        !events(&log, "forged").is_empty(),
        "forged lines flushed at stop"
    );
}

#[test]
fn the_single_process_node_honours_an_explicit_duration() {
    // Without --duration `dyno node --workload` runs until stopped; with one it stops
    // by itself, as `dyno pipeline bench` does.
    let mut node = Reaped(Some(
        dyno_process()
            .args([
                "node",
                "--workload",
                "value",
                "--rate",
                "200",
                "--duration",
                "1",
            ])
            .args(["--no-save", "--no-ledger-check", "--name"])
            .arg(format!("dur-{}", std::process::id()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = node.0.as_mut().unwrap().try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "--duration 1 still running after 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = node.wait_output();
    assert!(
        status.success(),
        "{status}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Threads of process `pid` now (its /proc/PID/task entries).
#[cfg(target_os = "linux")]
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

/// GET `path` on 127.0.0.1:`port`; the status line, or "" when nothing answers.
fn http_status(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = write!(s, "GET {path} HTTP/1.0\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines().next().unwrap_or("").to_string()
}

#[test]
#[cfg(target_os = "linux")]
fn a_nodes_threads_grow_with_its_config_not_its_peers_or_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    genesis(dir.path(), "n0=1,n1=1,n2=1,n3=1,n4=1", "1");
    // n2 has four peers: n0 and n1 must dial it (they never do), n3 and n4 it dials (no
    // one listens: its dialers back off and retry). The old network ran a thread per
    // link and per dialer; the cores once sized its verify threads.
    let peers: String = ["n0", "n1", "n3", "n4"]
        .iter()
        .map(|id| {
            format!(
                "\n[[peers]]\nid = \"{id}\"\naddr = \"127.0.0.1:{}\"\nlatency_ms = 5\n",
                free_tcp()
            )
        })
        .collect();
    // (extra config, threads once started, NodeConfig::threads: the peak, which counts
    // the scoped threads a block's signatures are checked on with several verify
    // threads, and the replay pool). The first is the node a cluster runs;
    // replay_threads alone defaults to the cores, whose pool of a thread per core starts
    // with the first large block replayed.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let replaying = if cores > 1 { cores.min(256) } else { 0 };
    for (i, (extra, steady, peak)) in [
        ("forge = \"sequential\"\nreplay_threads = 1\n", 4, 4),
        ("forge = \"sequential\"\n", 4, 4 + replaying),
        (
            "forge = \"sequential\"\nverify_tiles = 3\nreplay_threads = 1\n",
            6,
            9,
        ),
        ("forge = \"tiles\"\nreplay_threads = 1\n", 9, 9),
    ]
    .into_iter()
    .enumerate()
    {
        let metrics = free_tcp();
        let cfg = write(
            &dir.path().join(format!("n2-{i}.toml")),
            &format!(
                "id = \"n2\"\ngenesis = \"genesis.toml\"\npeer_listen = \"127.0.0.1:{}\"\n\
                 ingress_listen = \"127.0.0.1:{}\"\nmetrics_listen = \"127.0.0.1:{metrics}\"\n\
                 node_log = \"n2-{i}.jsonl\"\ncontrol = \"n2.control.toml\"\n{extra}{peers}",
                free_tcp(),
                free_udp()
            ),
        );
        let config = dyno_node::config::NodeConfig::from_file(&cfg)
            .unwrap()
            .config;
        assert_eq!(config.threads(), peak, "{extra}");
        let node = Reaped(Some(
            dyno_process()
                .args(["node", "run", "--quiet", "--config"])
                .arg(&cfg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ));
        let pid = node.0.as_ref().unwrap().id();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !http_status(metrics, "/ready").contains(" 200 ") {
            assert!(std::time::Instant::now() < deadline, "{extra}: never ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        // Past slot 0, with the dialers retrying: the count holds.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(threads_of(pid), steady, "{extra}");
        drop(node);
    }
}
