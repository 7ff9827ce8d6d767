//! What `dyno serve`'s pages say, over HTTP, on a store holding a run of every kind:
//! each run page (and each full report) starts with its command's answer; the cluster
//! page reads its centiles, faults, recovery and CPU as the CLI and the report do; and no
//! page anywhere shows NaN or an infinity. How the pages look in a browser (widths, the
//! answer's place on screen) is serve_browser.rs.

use crate::harness::heavy;
use crate::harness::served::{kinds, Served};
use dyno_model::{format_value, Unit};
use dyno_store::{RunFilter, RunId, Store};
use std::path::Path;

/// The newest run of `command` in the store at `db`.
fn run_of(db: &Path, command: &str) -> RunId {
    let store = Store::open_read_only(db).unwrap();
    let filter = RunFilter {
        command: Some(command.into()),
        ..RunFilter::default()
    };
    store.list_runs(&filter).unwrap()[0].id
}

/// The part of `page` inside its `<section id="answer">`, which must come before
/// everything else in the page's `<main>` but its title.
fn answer(page: &str) -> &str {
    let main = page.find("<main>").unwrap_or(0);
    let start = page
        .find("<section id=\"answer\"")
        .unwrap_or_else(|| panic!("no answer on the page:\n{page}"));
    let between = &page[main..start];
    assert!(
        !between.contains("<section") && !between.contains("<table"),
        "something comes before the answer:\n{between}"
    );
    let end = page[start..].find("</section>").unwrap() + start;
    &page[start..end]
}

/// A store with every run kind, served.
fn every_kind(dir: &Path) -> (std::path::PathBuf, Served) {
    let db = dir.join("results.db");
    kinds::every_kind(&db, dir);
    let served = Served::start(&["--db", db.to_str().unwrap()]);
    (db, served)
}

#[test]
fn every_run_page_and_report_starts_with_its_commands_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (db, served) = every_kind(dir.path());
    for (command, expect) in [
        (
            "machine",
            &[
                "Requirements: run",
                "fails to meet the requirements",
                "Pass (",
                "Fail (",
            ][..],
        ),
        (
            "pipeline bench",
            &["Bottleneck: verify", "lose frags at ingress"],
        ),
        (
            "cluster run",
            &[
                "to 50% of the nodes",
                "to 80% of the nodes",
                "to 100% of the nodes",
            ],
        ),
        (
            "tune",
            &["The winning recipe", "stable/o3", "opt-level = 3"],
        ),
        ("compare", &["One execution of comparison", "regression"]),
    ] {
        let id = run_of(&db, command);
        let (code, page) = served.get(&format!("/runs/{id}"));
        assert_eq!(code, 200, "{command}: {page}");
        let answer = answer(&page);
        for text in expect {
            assert!(answer.contains(text), "{command}: {text:?} not in {answer}");
        }
    }
    // A machine run's requirements: the result column first, each result coloured.
    let machine = served.get(&format!("/runs/{}", run_of(&db, "machine"))).1;
    let a = answer(&machine);
    assert!(a.contains("<th>Result</th><th>Category</th>"), "{a}");
    assert!(
        a.contains("class=\"bad\">Fail (") && a.contains("class=\"good\">Pass ("),
        "{a}"
    );
    assert!(
        a.starts_with("<section id=\"answer\" class=\"answer fail\">"),
        "{a}"
    );
    // The full reports answer first too: the requirements, the bottleneck, adoption.
    for (command, expect, then) in [
        (
            "machine",
            "fails to meet the requirements",
            "<h2>Summary</h2>",
        ),
        ("pipeline bench", "Bottleneck: verify", "<h2>Summary</h2>"),
        (
            "cluster run",
            "adopted on 50% of nodes after",
            "<h2>Tables</h2>",
        ),
    ] {
        let id = run_of(&db, command);
        let (code, report) = served.get(&format!("/runs/{id}/report"));
        assert_eq!(code, 200, "{command}: {report}");
        let a = answer(&report);
        assert!(a.contains(expect), "{command}: {a}");
        assert!(report.find(then).unwrap() > report.find("id=\"answer\"").unwrap());
    }
}

#[test]
fn the_cluster_page_reads_as_the_cli_and_the_report_do() {
    let dir = tempfile::tempdir().unwrap();
    let (db, served) = every_kind(dir.path());
    let (_, page) = served.get(&format!("/runs/{}", run_of(&db, "cluster run")));
    // The centiles are dyno-cluster's (nearest rank): the report's and the CLI's p90.
    let mut values: Vec<f64> = (0..40).map(kinds::cluster_adoption_80).collect();
    values.sort_by(f64::total_cmp);
    let cli = dyno_cluster::propagation::Distribution {
        key: "adoption_0.80".into(),
        label: "adopted on 80% of nodes".into(),
        family: dyno_cluster::propagation::Family::Adoption,
        values_s: values.clone(),
        missing: 0,
        available: true,
    }
    .summary()
    .unwrap();
    let p90 = format_value(cli.p90_s, Unit::Seconds);
    let p50 = format_value(cli.p50_s, Unit::Seconds);
    let linear = dyno_stats::quantile(&values, 0.9, dyno_stats::QuantileMethod::Linear).unwrap();
    assert_ne!(
        p90,
        format_value(linear, Unit::Seconds),
        "the planted values tell them apart"
    );
    let a = answer(&page);
    assert!(
        a.contains(&format!("{p50} <small>p90 {p90}</small>")),
        "{p90}: {a}"
    );
    let table = &page[page.find("<table class=\"adoption\">").unwrap()..];
    let row = &table[table.find("80% of nodes").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains(&format!(">{p90}<")), "{row}");
    // What each fault did, in the answer: adoption back to pace, the nodes back at the tip.
    for text in [
        "partition of n2 from slot 10",
        "adoption back to its pre-fault pace <b>950.00 ms</b> after it ended",
        "n2 back at the tip 400.00 ms after",
        "restart of n1 from slot 25",
        "every node agreed again 600.00 ms after",
        "n1 back at the tip 800.00 ms after",
    ] {
        assert!(a.contains(text), "{text:?} not in {a}");
    }
    // The fault table names a partition's other side, and no target for a restart.
    let faults = &page[page.find("<table class=\"faults\">").unwrap()..];
    let faults = &faults[..faults.find("</table>").unwrap()];
    assert!(faults.contains("cut off from n0, n1"), "{faults}");
    assert!(
        !faults.contains("to n0, n2") && !faults.contains("n0, n2"),
        "{faults}"
    );
    // A lean node's CPU: the mean over the window (two ticks of 2.5% in ten slots), not
    // the median slot's 0.
    let nodes = &page[page.find("<table class=\"nodes\">").unwrap()..];
    let n2 = &nodes[nodes.find("<td>n2</td>").unwrap()..];
    let n2 = &n2[..n2.find("</tr>").unwrap()];
    assert!(n2.contains(">0.500 %<"), "{n2}");
    assert!(!n2.contains(">0.0 %<"), "{n2}");
}

/// The text of an HTML page: tags taken out (a script or style element has none here),
/// the escapes of `<`, `>` and `&` read back.
fn text_of(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The words of `text` that are a NaN or an infinity as Rust or JavaScript print them.
fn non_finite(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '.'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| {
            let w = w.trim_start_matches('-').to_ascii_lowercase();
            w == "nan" || w == "inf" || w == "infinity"
        })
        .map(String::from)
        .chain(text.contains('∞').then(|| "∞".to_string()))
        .collect()
}

/// The targets of the page's links inside the app (`href="/..."`), unescaped.
fn links(page: &str) -> Vec<String> {
    page.split("href=\"/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|href| format!("/{}", href.replace("&amp;", "&")))
        .filter(|href| !href.starts_with("/assets/"))
        .collect()
}

#[test]
fn no_page_shows_a_nan_or_an_infinity() {
    assert_eq!(
        non_finite("CV NaN % and inf or -inf, info"),
        ["NaN", "inf", "-inf"]
    );
    // Some hundred pages, the comparisons judged on each of theirs.
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let (db, served) = every_kind(dir.path());
    // Every page a user reaches by following links from the front page, the history
    // index and the comparisons (each once), and what each shows.
    let mut todo = vec![
        "/".to_string(),
        "/history".into(),
        "/compare".into(),
        "/live".into(),
    ];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = todo.pop() {
        // Filtered views of the front page are the front page again.
        let page_of = path.split('?').next().unwrap_or_default().to_string();
        if !seen.insert(path.clone()) || (page_of == "/" && path != "/") {
            continue;
        }
        let (code, page) = served.get(&path);
        assert_eq!(code, 200, "{path}");
        let bad = non_finite(&text_of(&page));
        assert!(bad.is_empty(), "{path} shows {bad:?}:\n{page}");
        todo.extend(links(&page));
    }
    for kind in [
        "/runs/",
        "/history?metric=",
        "/compare?id=",
        "/fleet?metric=",
        "/report",
    ] {
        assert!(
            seen.iter().any(|p| p.contains(kind)),
            "no {kind} page was reached: {seen:?}"
        );
    }
    // The metric that is always zero reads a CV of 0, not "NaN %".
    let (_, page) = served.get(&format!("/runs/{}", run_of(&db, "cluster run")));
    let row = &page[page
        .find("<td>forging.<wbr>ledger_<wbr>ticking</td>")
        .expect("the zero metric")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains(">0.00 %<"), "{row}");
}

/// A number in exponent form (`1.23e-17`, `1.00e0`), as the pages once wrote p-values.
fn exponent_form(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .find(|w| {
            let (mantissa, exponent) = match w.split_once('e') {
                Some(p) => p,
                None => return false,
            };
            !mantissa.is_empty()
                && mantissa.chars().all(|c| c.is_ascii_digit() || c == '.')
                && mantissa.contains('.')
                && exponent.trim_start_matches('-').parse::<i32>().is_ok()
        })
}

#[test]
fn p_values_read_in_thousandths_on_the_comparison_and_history_pages() {
    assert_eq!(exponent_form("p = 1.23e-17)"), Some("1.23e-17"));
    assert_eq!(exponent_form("p 1.00e0 and 3e-1 release"), Some("1.00e0"));
    let dir = tempfile::tempdir().unwrap();
    let (_, served) = every_kind(dir.path());
    let (_, comparison) = served.get("/compare?id=cmp-after");
    let (_, history) = served.get(&format!(
        "/history?metric=cpu_percent&host={}&subject=v2",
        kinds::HOST
    ));
    for (page, name) in [(&comparison, "comparison"), (&history, "history")] {
        let text = text_of(page);
        assert_eq!(exponent_form(&text), None, "{name}:\n{text}");
        assert!(
            text.contains("p < 0.001"),
            "{name}: the regression's p:\n{text}"
        );
    }
    // The comparison's table shows the adjusted p of every metric the same way.
    let table = &comparison[comparison.find("<table").unwrap()..];
    assert!(
        table.contains("<td class=\"num\">&lt; 0.001</td>"),
        "{table}"
    );
}

#[test]
fn the_runs_list_shows_a_comparison_as_one_row_with_its_outcome() {
    let _slot = heavy();
    let dir = tempfile::tempdir().unwrap();
    let (db, served) = every_kind(dir.path());
    let (status, page) = served.get("/");
    assert_eq!(status, 200, "{page}");
    let rows: Vec<&str> = page.split("<tr").skip(1).collect();
    let row_of = |id: &str| -> Vec<&str> {
        rows.iter()
            .copied()
            .filter(|r| r.contains(&format!("comparison {id}: v1 vs v2")))
            .collect()
    };
    // Each comparison of 24 executions is one row, with what it found.
    let after = row_of("cmp-after");
    assert_eq!(after.len(), 1, "{page}");
    assert!(after[0].contains("1 regression"), "{}", after[0]);
    let before = row_of("cmp-before");
    assert_eq!(before.len(), 1, "{page}");
    assert!(before[0].contains("no significant change"), "{}", before[0]);
    let compare_rows = rows.iter().filter(|r| r.contains(">compare</a>")).count();
    assert_eq!(compare_rows, 2, "{page}");
    // The other kinds keep one row per run, and the count says what was grouped.
    let store = Store::open_read_only(&db).unwrap();
    let all = store.list_runs(&RunFilter::default()).unwrap();
    let others = all.iter().filter(|r| r.command != "compare").count();
    assert!(
        page.contains(&format!(
            "({} rows: the executions of 2 comparisons in one row each)",
            others + 2
        )),
        "{page}"
    );
}

/// `+3.2%` for a ratio of 1.032, as every output writes a change.
fn pct(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

/// The row of `html`'s table (from `<tr` to `</tr>`) whose cell names `metric`, as text.
fn html_row(html: &str, metric: &str) -> Option<String> {
    html.split("<tr")
        .skip(1)
        .map(|row| &row[..row.find("</tr>").unwrap_or(row.len())])
        .find(|row| text_of(row).split_whitespace().any(|w| w == metric))
        .map(text_of)
}

#[test]
fn every_output_of_a_stored_comparison_says_the_same_change() {
    let dir = tempfile::tempdir().unwrap();
    let (db, served) = every_kind(dir.path());
    let run = run_of(&db, "compare").to_string();
    let report = |extra: &[&str]| -> String {
        let out = crate::harness::dyno()
            .args(["compare", "report", &run, "--db"])
            .arg(&db)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&report(&["--format", "json"])).unwrap();
    let table = report(&["--secondary"]);
    let html_path = dir.path().join("report.html");
    report(&["--html", html_path.to_str().unwrap()]);
    let html = std::fs::read_to_string(&html_path).unwrap();
    let (status, page) = served.get("/compare?id=cmp-after");
    assert_eq!(status, 200, "{page}");
    let mut checked = 0;
    for v in json["verdicts"].as_array().unwrap() {
        let metric = v["metric"].as_str().unwrap();
        let (Some(r), Some(low), Some(high)) = (
            v["ratio"].as_f64(),
            v["ratio_low"].as_f64(),
            v["ratio_high"].as_f64(),
        ) else {
            continue;
        };
        let interval = format!("{}..{}", pct(low), pct(high));
        let line = table
            .lines()
            .find(|l| l.starts_with('│') && l.split_whitespace().any(|w| w == metric))
            .unwrap_or_else(|| panic!("{metric} is not in the table:\n{table}"));
        assert!(
            line.contains(&pct(r)) && line.contains(&interval),
            "{metric}: the table says {line:?}, the JSON {} ({interval})",
            pct(r)
        );
        let row = html_row(&html, metric).unwrap_or_else(|| panic!("{metric}: not in the report"));
        assert!(
            row.contains(&pct(r)) && row.contains(&interval),
            "{metric}: {row}"
        );
        let row = html_row(&page, metric).unwrap_or_else(|| panic!("{metric}: not on the page"));
        let shown = format!("{} ({} .. {})", pct(r), pct(low), pct(high));
        assert!(
            row.contains(&shown),
            "{metric}: the page says {row:?}, the JSON {shown}"
        );
        // A metric with a sentence says the same numbers in it.
        let named = match metric {
            "cpu_percent" => "CPU use",
            "rss_bytes" => "memory (RSS)",
            "peak_rss_bytes" => "peak memory",
            other => other,
        };
        let start = format!(": value: {named} of v2 ");
        for said in table.lines().filter(|l| l.contains(&start)) {
            let size = format!(" {:.1}% (CI ", ((r - 1.0) * 100.0).abs());
            let ci = format!(
                "CI {:.1}% to {:.1}%",
                (low - 1.0) * 100.0,
                (high - 1.0) * 100.0
            );
            assert!(
                said.contains(&size) && said.contains(&ci),
                "{said} / {size} {ci}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "{json:#}");
    // The answer comes first: the verdict line is the report's first.
    let plain = report(&[]);
    assert!(
        plain.starts_with("verdict: regression: "),
        "{}",
        plain.lines().next().unwrap_or("")
    );
}
