//! Readiness: how dyno knows a node it started is up, before it measures or loads it.
//!
//! A [`Probe`] is a TCP port accepting connections, an HTTP URL answering 2xx, or a line
//! of the node's output matching a regular expression. [`Readiness::wait`] polls the
//! probe until it passes, the node exits, the caller stops, or the timeout passes; the
//! failure says which, with the probe's last error.

use crate::child::{GuardedChild, SpawnOptions};
use crate::http::{Endpoint, HttpError};
use regex::Regex;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A probe that cannot be made, or one check of it that did not pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// A TCP probe's address is not `host:port`.
    #[error("`{0}`: give host:port")]
    Address(String),
    /// An output-line probe's pattern does not compile.
    #[error("`{pattern}` is not a valid regex: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// The regex compiler's message.
        message: String,
    },
    /// An HTTP probe's URL, exchange or answer.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// Not ready yet: the connection was refused, no line matched...
    #[error("{0}")]
    NotYet(String),
}

/// How to know a node is up.
#[derive(Debug, Clone)]
pub enum Probe {
    /// A TCP connection to `host:port` is accepted.
    Tcp(String),
    /// A GET of the URL answers with a 2xx status.
    Http(Endpoint),
    /// A line of the node's stdout or stderr matches (watched from the first line on:
    /// spawn with [`Readiness::spawn_options`]).
    OutputLine(Regex),
}

impl Probe {
    /// A TCP probe of `host:port` (checked now: the port must be a number).
    pub fn tcp(address: &str) -> Result<Probe, ProbeError> {
        match address.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Probe::Tcp(address.to_string()))
            }
            _ => Err(ProbeError::Address(address.to_string())),
        }
    }

    /// An HTTP probe of `url` (`http://host:port/path`; path `/` when none).
    pub fn http(url: &str) -> Result<Probe, ProbeError> {
        Ok(Endpoint::parse_with_default(url, "/").map(Probe::Http)?)
    }

    /// An output-line probe; the error is the regex compiler's message.
    pub fn output_line(pattern: &str) -> Result<Probe, ProbeError> {
        Regex::new(pattern)
            .map(Probe::OutputLine)
            .map_err(|e| ProbeError::Pattern {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })
    }

    /// What the probe waits for, for messages.
    pub fn describe(&self) -> String {
        match self {
            Probe::Tcp(a) => format!("TCP {a} accepting"),
            Probe::Http(e) => format!("{} answering 2xx", e.url()),
            Probe::OutputLine(re) => format!("an output line matching `{re}`"),
        }
    }

    /// One check: `Ok` when the node is ready, else why not.
    pub fn check(&self, child: Option<&GuardedChild>, timeout: Duration) -> Result<(), ProbeError> {
        let not_yet = |why: String| ProbeError::NotYet(why);
        match self {
            Probe::Tcp(a) => {
                let addrs: Vec<_> = a
                    .to_socket_addrs()
                    .map_err(|e| not_yet(e.to_string()))?
                    .collect();
                let mut last = String::from("no address");
                for addr in addrs {
                    match TcpStream::connect_timeout(&addr, timeout) {
                        Ok(_) => return Ok(()),
                        Err(e) => last = e.to_string(),
                    }
                }
                Err(not_yet(last))
            }
            Probe::Http(e) => {
                let a = e.get(timeout)?;
                if (200..300).contains(&a.status) {
                    Ok(())
                } else {
                    Err(HttpError::Status(a.status_line).into())
                }
            }
            Probe::OutputLine(_) => match child {
                Some(c) if c.saw_ready_line() => Ok(()),
                Some(_) => Err(not_yet("no matching line yet".into())),
                None => Err(not_yet(
                    "an output-line probe needs the node's output".into(),
                )),
            },
        }
    }
}

/// A probe with its time limit.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// The probe.
    pub probe: Probe,
    /// How long the node may take to become ready.
    pub timeout: Duration,
    /// Time between checks.
    pub interval: Duration,
}

/// Why a node is not ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// The timeout passed first.
    #[error("not ready within {:.1} s (waiting for {probe}; last check: {last})", waited.as_secs_f64())]
    Timeout {
        /// How long it waited.
        waited: Duration,
        /// The probe, described.
        probe: String,
        /// The last check's failure.
        last: String,
    },
    /// The node exited while dyno waited.
    #[error("exited ({0}) before it was ready")]
    Exited(String),
    /// The caller asked to stop.
    #[error("interrupted while waiting for the node to be ready")]
    Stopped,
}

impl Readiness {
    /// `probe` with `timeout`, checked every 100 ms.
    pub fn new(probe: Probe, timeout: Duration) -> Self {
        Readiness {
            probe,
            timeout,
            interval: Duration::from_millis(100),
        }
    }

    /// `base` with the output line this readiness watches for, if any.
    pub fn spawn_options(&self, base: SpawnOptions) -> SpawnOptions {
        match &self.probe {
            Probe::OutputLine(re) => SpawnOptions {
                ready_line: Some(re.clone()),
                ..base
            },
            _ => base,
        }
    }

    /// Waits for `child` to be ready; returns how long it took.
    pub fn wait(&self, child: &mut GuardedChild, stop: &AtomicBool) -> Result<Duration, NotReady> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let mut last;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(NotReady::Stopped);
            }
            if let Some(status) = child.exited() {
                return Err(NotReady::Exited(status));
            }
            let per_check = self
                .interval
                .max(Duration::from_millis(200))
                .min(deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(1));
            match self.probe.check(Some(child), per_check) {
                Ok(()) => return Ok(start.elapsed()),
                Err(why) => last = why.to_string(),
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(NotReady::Timeout {
                    waited: now - start,
                    probe: self.probe.describe(),
                    last,
                });
            }
            std::thread::sleep(self.interval.min(deadline - now));
        }
    }

    /// Waits for a probe that needs no child (TCP or HTTP) of a process dyno did not
    /// start, or of one watched otherwise; `alive` says why it is gone, if it is.
    pub fn wait_for(
        &self,
        stop: &AtomicBool,
        mut alive: impl FnMut() -> Option<String>,
    ) -> Result<Duration, NotReady> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(NotReady::Stopped);
            }
            if let Some(why) = alive() {
                return Err(NotReady::Exited(why));
            }
            let last = match self.probe.check(None, Duration::from_millis(500)) {
                Ok(()) => return Ok(start.elapsed()),
                Err(why) => why.to_string(),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(NotReady::Timeout {
                    waited: now - start,
                    probe: self.probe.describe(),
                    last,
                });
            }
            std::thread::sleep(self.interval.min(deadline - now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn probes_are_checked_when_written() {
        assert!(Probe::tcp("127.0.0.1:26657").is_ok());
        assert!(Probe::tcp("127.0.0.1").is_err());
        assert!(Probe::tcp(":80").is_err());
        assert!(Probe::http("http://127.0.0.1:26657/health").is_ok());
        assert!(Probe::http("127.0.0.1:26657").is_err());
        let e = Probe::output_line("height=(").unwrap_err();
        assert!(e.to_string().contains("not a valid regex"), "{e}");
        assert_eq!(
            Probe::http("http://127.0.0.1:1").unwrap().describe(),
            "http://127.0.0.1:1/ answering 2xx"
        );
    }

    #[test]
    fn an_output_line_makes_a_node_ready() {
        let r = Readiness::new(
            Probe::output_line("Started node").unwrap(),
            Duration::from_secs(60),
        );
        let mut child = GuardedChild::spawn(
            sh("sleep 0.2; echo 'I[..] Started node module=main'; exec sleep 600"),
            &r.spawn_options(SpawnOptions::default()),
        )
        .unwrap();
        let took = r.wait(&mut child, &AtomicBool::new(false));
        child.stop(Duration::from_secs(30));
        assert!(took.is_ok(), "{took:?}");
    }

    #[test]
    fn a_listening_port_and_a_2xx_answer_make_a_node_ready() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let r = Readiness::new(
            Probe::tcp(&addr.to_string()).unwrap(),
            Duration::from_secs(60),
        );
        assert!(r.wait_for(&AtomicBool::new(false), || None).is_ok());
        drop(listener);
        let addr = crate::http::tests::serve_once("204 No Content", "");
        let r = Readiness::new(
            Probe::http(&format!("http://{addr}/health")).unwrap(),
            Duration::from_secs(60),
        );
        assert!(r.wait_for(&AtomicBool::new(false), || None).is_ok());
    }

    #[test]
    fn a_node_that_is_never_ready_times_out_with_the_last_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = Readiness::new(
            Probe::tcp(&format!("127.0.0.1:{port}")).unwrap(),
            Duration::from_millis(300),
        );
        let mut child =
            GuardedChild::spawn(sh("exec sleep 600"), &SpawnOptions::default()).unwrap();
        let e = r.wait(&mut child, &AtomicBool::new(false)).unwrap_err();
        child.stop(Duration::from_secs(30));
        match &e {
            NotReady::Timeout { probe, last, .. } => {
                assert_eq!(probe, &format!("TCP 127.0.0.1:{port} accepting"));
                assert!(last.to_lowercase().contains("refused"), "{last}");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().starts_with("not ready within 0."), "{e}");
    }

    #[test]
    fn a_node_that_exits_or_a_stop_ends_the_wait() {
        let r = Readiness::new(
            Probe::output_line("never").unwrap(),
            Duration::from_secs(60),
        );
        let mut child = GuardedChild::spawn(
            sh("echo starting; exit 4"),
            &r.spawn_options(SpawnOptions::default()),
        )
        .unwrap();
        let e = r.wait(&mut child, &AtomicBool::new(false)).unwrap_err();
        assert!(
            matches!(&e, NotReady::Exited(s) if s.contains('4')),
            "{e:?}"
        );
        let stopped = child.stop(Duration::from_secs(1));
        assert_eq!(stopped.last_lines, ["starting"]);
        assert_eq!(
            r.wait_for(&AtomicBool::new(true), || None),
            Err(NotReady::Stopped)
        );
    }
}
