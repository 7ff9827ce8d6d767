//! `dyno serve` in a real browser: headless Chromium loads the main pages of a planted
//! store, the history plot holds the planted points, the console stays empty (no script
//! error, no resource the Content-Security-Policy refused), and a screenshot of each page
//! is saved under target/web-screenshots/ (CI keeps them as artifacts).
//!
//! Skipped with a note where Chromium is not installed (scripts/ci/chromium.sh installs
//! it); `DYNO_CHROMIUM` names another binary.

mod serve_common;

use dyno_store::Store;
use serve_common::{fake_endpoint, plant, three_runs, Served};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The browser, if one is installed.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DYNO_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|p| p.is_file())
}

/// What one headless run of the browser gave.
struct Load {
    /// The DOM after the page loaded (`--dump-dom`), or empty for a screenshot.
    dom: String,
    /// The browser's log, where console messages show as `:CONSOLE` lines.
    log: String,
}

fn browse(browser: &Path, profile: &Path, url: &str, extra: &[&str]) -> Load {
    let out = assert_cmd::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            // Containers often have a small /dev/shm; Chromium then writes to /tmp.
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        // Generous: a cold start of Chromium on a loaded CI machine takes seconds.
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {url}: {:?}",
        out.status
    );
    Load {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The console lines of a browser log (every message a page logs, errors included).
fn console(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// A planted store: three runs of bench-01 (the history under test) and 24 runs of
/// bench-02 whose level drops by a fifth after run 12 (a change point for the pictures).
fn planted(path: &Path) {
    three_runs(path);
    let mut store = Store::open(path).unwrap();
    let wiggle = [0.011, -0.008, 0.004, -0.013, 0.006, 0.0];
    for i in 0..24 {
        let level = if i < 12 { 1.5e9 } else { 1.2e9 };
        let v = level * (1.0 + wiggle[i % wiggle.len()]);
        let t = 1_795_000_000.0 + 3600.0 * i as f64;
        plant(
            &mut store,
            "bench-02",
            "bench-02",
            t,
            &[v * 0.995, v, v * 1.004],
        );
    }
}

#[test]
fn the_main_pages_load_in_chromium_without_console_messages() {
    let Some(browser) = chromium() else {
        eprintln!("note: Chromium not found (scripts/ci/chromium.sh installs it); skipping the browser test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    planted(&db);
    let served = Served::start(&["--db", db.to_str().unwrap()]);
    let profile = dir.path().join("profile");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("web-screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    let history = "history?metric=Blake2256&command=machine&host=bench-01&subject=bench-01";
    let pages = [
        ("runs", "", "27 runs in"),
        ("run", "runs/1", "Blake2256"),
        ("history", history, "History of Blake2256"),
        (
            "history-shift",
            "history?metric=Blake2256&host=bench-02",
            "strong change",
        ),
        ("history-index", "history", "bench-02"),
        ("fleet", "fleet?metric=Blake2256", "2 machines"),
        ("comparisons", "compare", "No comparison is stored"),
        ("live", "live", "Nothing is watched"),
    ];
    for (name, path, expect) in pages {
        let url = format!("{}{path}", served.url);
        let load = browse(&browser, &profile, &url, &["--dump-dom"]);
        assert!(
            load.dom.contains(expect),
            "{name}: {expect:?} not in the DOM:\n{}",
            load.dom
        );
        assert_eq!(
            console(&load.log),
            Vec::<&str>::new(),
            "{name}: console messages"
        );
        let png = shots.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png);
        let shot = browse(
            &browser,
            &profile,
            &url,
            &[&format!("--screenshot={}", png.display())],
        );
        assert_eq!(
            console(&shot.log),
            Vec::<&str>::new(),
            "{name}: console messages"
        );
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{name}: no screenshot at {}",
            png.display()
        );
    }

    // The history of bench-01 holds exactly the three planted runs, as points of the plot
    // (SVG circles, as the browser parsed them) and as rows linking to their runs.
    let load = browse(
        &browser,
        &profile,
        &format!("{}{history}", served.url),
        &["--dump-dom"],
    );
    let start = load
        .dom
        .find("<figure class=\"history\">")
        .expect("a history figure");
    let figure = &load.dom[start..start + load.dom[start..].find("</figure>").unwrap()];
    assert_eq!(figure.matches("<circle").count(), 3, "{figure}");
    for run in 1..=3 {
        assert!(load
            .dom
            .contains(&format!("<a href=\"/runs/{run}\">{run}</a>")));
    }
    eprintln!("screenshots: {}", shots.display());
}

#[test]
fn the_live_page_runs_its_script_under_the_content_security_policy() {
    let Some(browser) = chromium() else {
        eprintln!("note: Chromium not found (scripts/ci/chromium.sh installs it); skipping the browser test");
        return;
    };
    let endpoint = fake_endpoint(
        "dyno_tile_up{tile=\"verify:0\"} 1\n\
         dyno_tile_time_seconds_total{tile=\"verify:0\",bucket=\"finish\"} 1\n\
         dyno_node_tps 4321\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    three_runs(&db);
    let served = Served::start(&["--db", db.to_str().unwrap(), "--watch", &endpoint]);
    // The first scrape comes within about a second; a minute is the give-up point.
    let start = std::time::Instant::now();
    while !served.get("/live").1.contains("verify:0") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no scrape in a minute"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let profile = dir.path().join("profile");
    let load = browse(
        &browser,
        &profile,
        &format!("{}live", served.url),
        &["--dump-dom"],
    );
    assert!(
        load.dom.contains("<td class=\"num\">4321</td>"),
        "{}",
        load.dom
    );
    assert!(load.dom.contains("src=\"/assets/live.js\""));
    // A script the policy refused, or one that failed, would have logged to the console.
    assert_eq!(console(&load.log), Vec::<&str>::new(), "console messages");
}
