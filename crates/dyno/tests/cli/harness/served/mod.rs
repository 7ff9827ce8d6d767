//! What the `dyno serve` tests share: a server child process on a free loopback port
//! (killed when dropped), a plain HTTP GET, and runs planted through the store API.

pub mod cdp;
pub mod kinds;

use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{RunId, Store};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStderr, Stdio};
use std::time::Duration;

/// A running `dyno serve`.
pub struct Served {
    child: Child,
    /// The front page's URL, `http://127.0.0.1:PORT/`.
    pub url: String,
}

impl Served {
    /// Starts `dyno serve --listen 127.0.0.1:0 ARGS...` and waits for the URL it prints.
    pub fn start(args: &[&str]) -> Served {
        let mut child = super::dyno_process()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("http://127.0.0.1:"),
            "serve printed {line:?}"
        );
        Served {
            child,
            url: line.trim().to_string(),
        }
    }

    /// GETs `path` (starting with `/`): the status code and the body.
    pub fn get(&self, path: &str) -> (u16, String) {
        get(&format!("{}{}", self.url.trim_end_matches('/'), path))
    }

    /// Stops the server and returns what it wrote to stderr.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        let stderr: Option<ChildStderr> = self.child.stderr.take();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GETs an `http://127.0.0.1:PORT/path` URL: the status code and the body.
pub fn get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, body.to_string())
}

/// The metric the planted runs measure.
pub fn metric() -> Metric {
    Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter)
}

/// Plants a complete `machine` run of `host` started at `t` with `values` of Blake2256.
pub fn plant(store: &mut Store, host: &str, subject: &str, t: f64, values: &[f64]) -> RunId {
    let info = RunInfo {
        command: "machine".into(),
        subject: Subject::new(SubjectKind::Machine, subject),
        host: Host {
            hostname: host.into(),
            cpu_model: "Test CPU".into(),
            ..Host::default()
        },
        started_at: t,
        command_line: vec!["dyno".into(), "machine".into()],
        tool_version: "test".into(),
        settings: serde_json::json!({}),
    };
    let run = store.begin_run(&info, &[metric()]).unwrap();
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Sample {
            metric: "Blake2256".into(),
            repetition: i as u32,
            value: *v,
        })
        .collect();
    store.add_samples(run, &samples).unwrap();
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

/// A store at `path` with three runs of host `bench-01` (medians 1.0, 1.1 and 1.2 GB/s).
pub fn three_runs(path: &Path) -> Vec<RunId> {
    let mut store = Store::open(path).unwrap();
    (0..3)
        .map(|i| {
            let m = 1.0e9 + 1.0e8 * i as f64;
            plant(
                &mut store,
                "bench-01",
                "bench-01",
                1_795_000_000.0 + 86_400.0 * i as f64,
                &[m * 0.99, m, m * 1.01],
            )
        })
        .collect()
}

/// The part of `page` inside the first `<figure class="CLASS">`.
pub fn figure<'a>(page: &'a str, class: &str) -> &'a str {
    let start = page
        .find(&format!("<figure class=\"{class}\">"))
        .unwrap_or_else(|| panic!("no {class} figure in {page}"));
    let end = page[start..].find("</figure>").unwrap() + start;
    &page[start..end]
}

/// A Prometheus endpoint that answers every request with `body`.
pub fn fake_endpoint(body: &'static str) -> String {
    changing_endpoint(move |_| body.to_string())
}

/// A Prometheus endpoint whose `n`-th answer (from 0) is `body(n)`: counters that grow
/// as a scraper reads them.
pub fn changing_endpoint(body: impl Fn(u64) -> String + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (n, mut conn) in listener.incoming().flatten().enumerate() {
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\r\n{}",
                body(n as u64)
            );
        }
    });
    url
}
