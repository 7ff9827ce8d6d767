//! `dyno serve` over HTTP: the pages a newcomer opens after three `dyno machine` runs,
//! bad input (404 pages with a link back), a corrupt store (500 pages, a log line,
//! nothing written), refused arguments, the live view of a metrics endpoint and of
//! `dyno pipeline bench --serve`, and the same pages from the PostgreSQL fleet store
//! (skipped with a note without PostgreSQL).
//! The pages in a real browser are in serve_browser.rs.

use crate::harness::served::{fake_endpoint, figure, get, plant, three_runs, Served};
use crate::harness::QUICK;
use crate::harness::{dyno, dyno_process};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Runs `dyno machine` with tiny durations three times into the store `db`.
fn three_machine_runs(db: &str, disk: &std::path::Path) {
    for _ in 0..3 {
        // Exit 1 or 0: whether this machine meets the requirements does not matter here.
        let code = dyno()
            .env_remove("PGPASSWORD")
            .args(["machine", "--db", db, "--base-path"])
            .arg(disk)
            .args(QUICK)
            .output()
            .unwrap()
            .status
            .code();
        assert!(matches!(code, Some(0 | 1)), "dyno machine exited {code:?}");
    }
}

#[test]
fn three_machine_runs_make_a_history_of_three_points() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let db = db.to_str().unwrap();
    three_machine_runs(db, dir.path());
    let served = Served::start(&["--db", db]);
    let (code, front) = served.get("/");
    assert_eq!(code, 200);
    assert!(front.contains("3 runs in"), "{front}");
    let (code, history) = served.get("/history?metric=Blake2256");
    assert_eq!(code, 200);
    assert_eq!(figure(&history, "history").matches("<circle").count(), 3);
    for run in 1..=3 {
        assert!(history.contains(&format!("<a href=\"/runs/{run}\">{run}</a>")));
    }
    // Each run page links to the metric's history for its host, and to the report
    // `dyno results report` writes, with the machine's requirements.
    let (code, run) = served.get("/runs/2");
    assert_eq!(code, 200);
    assert!(run.contains("/history?metric=Blake2256&amp;command=machine&amp;host="));
    let (code, report) = served.get("/runs/2/report");
    assert_eq!(code, 200);
    assert!(report.contains("Requirements: run 2"), "{report}");
    assert!(report.contains("<a href=\"/runs/2\">&larr; run 2</a>"));
}

#[test]
fn the_postgresql_fleet_store_serves_the_same_pages() {
    let Some(server) = crate::harness::PgServer::start() else {
        return;
    };
    let url = server.database("serve");
    let disk = tempfile::tempdir().unwrap();
    three_machine_runs(&url, disk.path());
    let served = Served::start(&["--db", &url]);
    let (code, front) = served.get("/");
    assert_eq!(code, 200);
    assert!(front.contains("3 runs in postgresql://"), "{front}");
    let (code, history) = served.get("/history?metric=Blake2256");
    assert_eq!(code, 200);
    assert_eq!(figure(&history, "history").matches("<circle").count(), 3);
    for run in 1..=3 {
        assert!(history.contains(&format!("<a href=\"/runs/{run}\">{run}</a>")));
        assert_eq!(served.get(&format!("/runs/{run}")).0, 200);
    }
    let (code, fleet) = served.get("/fleet?metric=Blake2256");
    assert_eq!(code, 200);
    // Each machine links to its own history of the metric.
    assert!(
        fleet.contains("<a href=\"/history?metric=Blake2256&amp;host="),
        "{fleet}"
    );
    assert!(
        fleet.contains("1 machine,") || fleet.contains("each of 1 machine"),
        "{fleet}"
    );
    assert_eq!(served.get("/runs/999").0, 404);
}

#[test]
fn unknown_runs_metrics_and_pages_get_a_404_page_with_a_link_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    three_runs(&db);
    let mut store = dyno_store::Store::open(&db).unwrap();
    plant(&mut store, "h", "<script>alert(1)</script>", 1.8e9, &[1.0]);
    drop(store);
    let served = Served::start(&["--db", db.to_str().unwrap()]);
    for path in [
        "/runs/999",
        "/runs/abc",
        "/runs/999/report",
        "/history?metric=NoSuchMetric",
        "/fleet?metric=NoSuchMetric",
        "/no/such/page",
    ] {
        let (code, body) = served.get(path);
        assert_eq!(code, 404, "{path}");
        assert!(
            body.contains("<a href=\"/\">Back to the runs</a>"),
            "{path}: {body}"
        );
    }
    let (code, front) = served.get("/");
    assert_eq!(code, 200);
    assert!(front.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!front.contains("<script>alert"));
    let (code, _) = served.get("/?limit=-1");
    assert_eq!(code, 400);
    // A page elsewhere whose host name was rebound to 127.0.0.1 sends its own name.
    let authority = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let mut s = TcpStream::connect(authority).unwrap();
    write!(s, "GET / HTTP/1.0\r\nHost: attacker.example:80\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.0 421") || answer.starts_with("HTTP/1.1 421"),
        "{answer}"
    );
    assert!(!answer.contains("bench-01"));
}

#[test]
fn a_corrupt_store_gets_500_pages_and_a_log_line_and_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    let served = Served::start(&["--db", db.to_str().unwrap()]);
    for path in ["/", "/runs/1", "/history"] {
        let (code, body) = served.get(path);
        assert_eq!(code, 500, "{path}");
        assert!(body.contains("could not be read"), "{body}");
        assert!(body.contains("Nothing was written to it."));
    }
    let log = served.stop();
    assert!(
        log.contains("dyno serve: GET /runs/1: results store:"),
        "{log}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        garbage,
        "the store is unchanged"
    );
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "no journal or WAL file was made");
}

#[test]
fn a_missing_store_or_an_open_address_without_the_flag_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    dyno()
        .args(["serve", "--db", missing.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("dyno machine"));
    let db = dir.path().join("results.db");
    three_runs(&db);
    dyno()
        .args([
            "serve",
            "--db",
            db.to_str().unwrap(),
            "--listen",
            "0.0.0.0:0",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--listen 0.0.0.0:0"));
    dyno()
        .args([
            "serve",
            "--db",
            db.to_str().unwrap(),
            "--watch",
            "localhost",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--watch"));
}

#[test]
fn comparisons_are_grouped_by_their_id_and_link_to_their_verdicts() {
    use dyno_model::{Host, RunInfo, RunStatus, Subject, SubjectKind};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let mut store = dyno_store::Store::open(&db).unwrap();
    // Runs of two comparisons as dyno compare stores them: the comparison in the settings.
    for (i, (id, subject)) in [("cmp-1", "v1"), ("cmp-1", "v2"), ("cmp-2", "v1")]
        .iter()
        .enumerate()
    {
        let info = RunInfo {
            command: "compare".into(),
            subject: Subject::new(SubjectKind::Release, *subject),
            host: Host::default(),
            started_at: 1.8e9 + i as f64,
            command_line: vec!["dyno".into(), "compare".into()],
            tool_version: "test".into(),
            settings: serde_json::json!({"comparison": {
                "id": id, "subjects": ["v1", "v2"], "workloads": ["value"], "rounds": 3,
                "file": "<cmp>.toml"
            }}),
        };
        let run = store.begin_run(&info, &[]).unwrap();
        store.finish_run(run, RunStatus::Complete).unwrap();
    }
    drop(store);
    let served = Served::start(&["--db", db.to_str().unwrap()]);
    let (code, page) = served.get("/compare");
    assert_eq!(code, 200);
    // Each links to its page inside the app; these planted runs hold only the list's
    // part of a comparison's settings, so judging them fails, and their row says so.
    assert!(
        page.contains("<a href=\"/compare?id=cmp-1\">cmp-1</a>"),
        "{page}"
    );
    assert!(page.contains("<a href=\"/compare?id=cmp-2\">cmp-2</a>"));
    assert!(page.contains("judging comparison cmp-1"), "{page}");
    assert!(page.contains("<td class=\"num\">2 of 6</td>") && page.contains("1 of 6"));
    assert!(page.contains("&lt;cmp&gt;.toml"));
}

/// Reads the event stream at `url` until it holds every one of `wanted` (or a minute
/// passes, which fails the test: the first panel comes within about a second).
fn read_events_until(url: &str, wanted: &[&str]) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {authority}\r\n\r\n").unwrap();
    let start = Instant::now();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !wanted.iter().all(|w| seen.contains(w)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "stream so far: {seen}"
        );
        if let Ok(n) = s.read(&mut buf) {
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
    seen
}

#[test]
fn the_live_view_streams_tiles_and_tps_of_a_watched_endpoint() {
    let endpoint = fake_endpoint(
        "# TYPE dyno_tile_up gauge\ndyno_tile_up{tile=\"verify:0\"} 1\n\
         dyno_tile_in_backpressure{tile=\"verify:0\"} 1\n\
         dyno_tile_time_seconds_total{tile=\"verify:0\",bucket=\"wait\"} 1\n\
         dyno_tile_time_seconds_total{tile=\"verify:0\",bucket=\"finish\"} 3\n\
         dyno_node_tps 4321\ndyno_node_blocks_adopted_total 17\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    three_runs(&db);
    let served = Served::start(&["--db", db.to_str().unwrap(), "--watch", &endpoint]);
    let events = format!("{}live/events", served.url);
    let stream = read_events_until(&events, &["verify:0", "75.0 %", "4321", "backpressured"]);
    assert!(stream.contains("text/event-stream"), "{stream}");
    assert!(stream.contains("event: panel"));
    let (code, page) = served.get("/live");
    assert_eq!(code, 200);
    assert!(page.contains("<script src=\"/assets/live.js\" defer></script>"));
    assert!(
        page.contains("http-equiv=\"refresh\""),
        "reloads without JavaScript"
    );
    let (code, script) = get(&format!("{}assets/live.js", served.url));
    assert_eq!((code, script.contains("EventSource")), (200, true));
}

#[test]
fn pipeline_bench_with_serve_streams_its_own_tiles() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bench.toml");
    std::fs::write(
        &config,
        format!(
            "[layout]\naffinity = \"floating\"\nlink_depth = 1024\n\
             [workspace]\nname = \"serve-cli-{pid}\"\ndir = \"{d}\"\n\
             [genesis]\nfund_initial_accounts = 256\n\
             [bench]\npresign = 4000\nrate = 1500\n\
             [poh]\nhashes_per_tick = 200\ntick_ns = 2000000\nticks_per_slot = 8\n\
             [store]\ndir = \"{d}\"\n",
            pid = std::process::id(),
            d = dir.path().display()
        ),
    )
    .unwrap();
    let mut bench = dyno_process()
        .args([
            "pipeline",
            "bench",
            "--duration",
            "8",
            "--serve",
            "127.0.0.1:0",
            "--db",
        ])
        .arg(dir.path().join("results.db"))
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Keep reading stderr (a full pipe would stall the bench); pass on the live view's URL.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = bench.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(url) = line.strip_prefix("live view: ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let live = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("a live view URL");
    let events = live.replace("/live", "/live/events");
    let stream = read_events_until(&events, &["verify:0", "bank:0", "Blocks produced"]);
    assert!(stream.contains("event: panel"));
    let status = bench.wait().unwrap();
    assert!(status.success(), "bench exited {status:?}");
}

/// Sends `head` (request line and headers, without the final blank line) and `body`;
/// returns the whole answer, headers included.
fn request(url: &str, head: &str, body: &str) -> String {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "{head}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

fn key_file(dir: &std::path::Path, text: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(format!("key-{mode:o}-{}", text.len()));
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn public_mode_is_refused_without_a_usable_key_or_tls_pair() {
    use predicates::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    three_runs(&db);
    let serve = |args: &[&str]| {
        let mut c = dyno();
        c.args(["serve", "--db", db.to_str().unwrap()]).args(args);
        c.assert().code(2)
    };
    serve(&["--public", "--listen", "127.0.0.1:0"])
        .stderr(predicates::str::contains("--public needs --key-file"));
    serve(&["--listen", "0.0.0.0:0", "--public"]).stderr(predicates::str::contains("--key-file"));
    let empty = key_file(dir.path(), "\n", 0o600);
    serve(&["--public", "--key-file", empty.to_str().unwrap()]).stderr(
        predicates::str::contains(empty.to_str().unwrap()).and(predicates::str::contains("empty")),
    );
    let open = key_file(dir.path(), "0123456789abcdef-open\n", 0o644);
    serve(&["--public", "--key-file", open.to_str().unwrap()]).stderr(
        predicates::str::contains(open.to_str().unwrap())
            .and(predicates::str::contains("other users can read it")),
    );
    let good = key_file(dir.path(), "0123456789abcdef-good\n", 0o600);
    let cert = dir.path().join("server.crt");
    std::fs::write(&cert, "not a certificate\n").unwrap();
    serve(&[
        "--public",
        "--key-file",
        good.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        cert.to_str().unwrap(),
    ])
    .stderr(predicates::str::contains(cert.to_str().unwrap()));
    // Half a pair is a usage error too.
    serve(&["--tls-cert", cert.to_str().unwrap()]).stderr(predicates::str::contains("--tls-key"));
    // Nothing was left behind: the files given and the store (with its WAL), nothing else.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("results.db"))
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// An answer whose headers forbid every other page to frame it: CSP `frame-ancestors
/// 'none'` and, for older browsers, `X-Frame-Options: DENY`.
fn assert_not_framable(answer: &str) {
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .to_ascii_lowercase();
    let csp = head
        .lines()
        .find_map(|l| l.strip_prefix("content-security-policy: "))
        .unwrap_or_else(|| panic!("no CSP: {head}"));
    assert!(csp.contains("frame-ancestors 'none'"), "{head}");
    assert!(head.contains("\r\nx-frame-options: deny"), "{head}");
}

#[test]
fn public_mode_needs_the_key_on_every_route_and_never_shows_it() {
    use predicates::prelude::*;
    const KEY: &str = "s3cret-access-key-for-the-test";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    three_runs(&db);
    let key = key_file(dir.path(), &format!("{KEY}\n"), 0o600);
    let endpoint = fake_endpoint("dyno_node_tps 4321\n");
    let served = Served::start(&[
        "--db",
        db.to_str().unwrap(),
        "--public",
        "--key-file",
        key.to_str().unwrap(),
        "--watch",
        &endpoint,
    ]);
    let host = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut seen = String::new();
    for path in [
        "/",
        "/runs/1",
        "/runs/1/report",
        "/history",
        "/history?metric=Blake2256",
        "/compare",
        "/fleet?metric=Blake2256",
        "/live",
        "/live/events",
        "/assets/dyno.css",
        "/assets/live.js",
        "/login",
        "/no/such/page",
    ] {
        let answer = request(
            &served.url,
            &format!("GET {path} HTTP/1.0\r\nHost: {host}"),
            "",
        );
        assert!(answer.starts_with("HTTP/1.0 401"), "{path}: {answer}");
        assert!(!answer.contains("bench-01"), "{path}: {answer}");
        // The key form, like every answer, may not be framed by another page.
        assert_not_framable(&answer);
        seen.push_str(&answer);
        // A wrong key is no key.
        let answer = request(
            &served.url,
            &format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAuthorization: Bearer not-{KEY}"),
            "",
        );
        assert!(answer.starts_with("HTTP/1.0 401"), "{path}: {answer}");
    }
    // A script sends the key as a bearer token.
    let bearer = format!("Authorization: Bearer {KEY}");
    let answer = request(
        &served.url,
        &format!("GET / HTTP/1.0\r\nHost: {host}\r\n{bearer}"),
        "",
    );
    assert!(
        answer.starts_with("HTTP/1.0 200") && answer.contains("bench-01"),
        "{answer}"
    );
    assert_not_framable(&answer);
    seen.push_str(&answer);
    // The scheme's name is case-insensitive (RFC 9110): `bearer` is `Bearer`.
    for scheme in ["bearer", "BEARER"] {
        let answer = request(
            &served.url,
            &format!("GET / HTTP/1.0\r\nHost: {host}\r\nAuthorization: {scheme} {KEY}"),
            "",
        );
        assert!(answer.starts_with("HTTP/1.0 200"), "{scheme}: {answer}");
        seen.push_str(&answer);
    }
    // A wrong Host is refused even with the key.
    let answer = request(
        &served.url,
        &format!("GET / HTTP/1.0\r\nHost: attacker.example:80\r\n{bearer}"),
        "",
    );
    assert!(answer.starts_with("HTTP/1.0 421"), "{answer}");
    assert!(!answer.contains("bench-01"));
    assert_not_framable(&answer);
    // A browser posts the key form once and gets a cookie that is not the key.
    let form = format!("key={KEY}&next=%2Fhistory%3Fmetric%3DBlake2256");
    let answer = request(
        &served.url,
        &format!(
            "POST /login HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded"
        ),
        &form,
    );
    assert!(answer.starts_with("HTTP/1.0 303"), "{answer}");
    assert!(
        answer.contains("location: /history?metric=Blake2256"),
        "{answer}"
    );
    let cookie = answer
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(
        !cookie.contains(KEY) && cookie.starts_with("dyno_key="),
        "{cookie}"
    );
    seen.push_str(&answer);
    for path in [
        "/",
        "/history?metric=Blake2256",
        "/runs/1",
        "/runs/1/report",
        "/live",
        "/assets/dyno.css",
    ] {
        let answer = request(
            &served.url,
            &format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nCookie: {cookie}"),
            "",
        );
        assert!(answer.starts_with("HTTP/1.0 200"), "{path}: {answer}");
        assert_not_framable(&answer);
        seen.push_str(&answer);
    }
    // A wrong key in the form gets the form again; a redirect elsewhere is not followed.
    let answer = request(
        &served.url,
        &format!(
            "POST /login HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded"
        ),
        "key=wrong-key-0123456789&next=%2F%2Fevil.example%2F",
    );
    assert!(
        answer.starts_with("HTTP/1.0 401") && answer.contains("not this server"),
        "{answer}"
    );
    assert!(!answer.contains("evil.example"), "{answer}");
    let log = served.stop();
    assert!(!seen.contains(KEY), "a page or header showed the key");
    assert!(!log.contains(KEY), "the log showed the key: {log}");
    assert!(predicate::str::contains("unencrypted").eval(&log), "{log}");
}
