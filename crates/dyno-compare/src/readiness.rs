//! How a subject says it is up: `ready = { http = "http://127.0.0.1:26657/health" }`,
//! `{ tcp = "127.0.0.1:26657" }` or `{ log = "Started node" }` (a regex over its stdout
//! and stderr lines), with `timeout_s` (default 60). Without `ready`, a node is taken as
//! up when it starts. The warm-up counts from the moment it is ready; a node not ready
//! in time fails that execution with its last output lines.

use dyno_proc::{Probe, Readiness};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Seconds a node may take to become ready when the file does not say.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;

/// `ready` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReady {
    #[serde(default)]
    tcp: Option<String>,
    #[serde(default)]
    http: Option<String>,
    #[serde(default)]
    log: Option<String>,
    #[serde(default)]
    timeout_s: Option<f64>,
}

/// A validated readiness declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadySpec {
    /// What to wait for.
    pub probe: ProbeSpec,
    /// How long to wait.
    pub timeout_s: f64,
}

/// The probe as declared (turned into a [`dyno_proc::Probe`] when run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeSpec {
    /// `host:port` accepting TCP connections.
    Tcp(String),
    /// An `http://` URL answering 2xx.
    Http(String),
    /// A regex matching a line of the node's output.
    Log(String),
}

impl RawReady {
    /// Checks the declaration; errors are `(key under ready, message)`.
    pub(crate) fn validate(&self) -> Result<ReadySpec, (String, String)> {
        let probe = match (&self.tcp, &self.http, &self.log) {
            // A slot's `{port:NAME}` is known only when it runs: checked with a stand-in.
            (Some(a), None, None) => {
                Probe::tcp(&crate::placeholder::stand_in(a))
                    .map_err(|why| ("tcp".to_string(), why.to_string()))?;
                ProbeSpec::Tcp(a.clone())
            }
            (None, Some(u), None) => {
                Probe::http(&crate::placeholder::stand_in(u))
                    .map_err(|why| ("http".to_string(), why.to_string()))?;
                ProbeSpec::Http(u.clone())
            }
            (None, None, Some(re)) => {
                Probe::output_line(re).map_err(|why| ("log".to_string(), why.to_string()))?;
                ProbeSpec::Log(re.clone())
            }
            _ => {
                return Err((
                    "ready".into(),
                    "give exactly one of `tcp`, `http` or `log`".into(),
                ))
            }
        };
        let timeout_s = self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        let timeout_s =
            crate::bounds::within(timeout_s, &crate::bounds::READY_TIMEOUT_S, "seconds")
                .map_err(|why| ("timeout_s".to_string(), why))?;
        Ok(ReadySpec { probe, timeout_s })
    }
}

impl ReadySpec {
    /// The probe to run (validated when the file was read, so it cannot fail here but
    /// for a regex or URL edited in a stored run).
    pub fn readiness(&self) -> Result<Readiness, dyno_proc::ProbeError> {
        let (probe, timeout) = self.probe_and_timeout()?;
        Ok(Readiness::new(probe, timeout))
    }

    /// The probe and how long it may take, for a caller that looks at several nodes in
    /// turn.
    pub fn probe_and_timeout(&self) -> Result<(Probe, Duration), dyno_proc::ProbeError> {
        let probe = match &self.probe {
            ProbeSpec::Tcp(a) => Probe::tcp(a)?,
            ProbeSpec::Http(u) => Probe::http(u)?,
            ProbeSpec::Log(re) => Probe::output_line(re)?,
        };
        Ok((probe, Duration::from_secs_f64(self.timeout_s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<ReadySpec, (String, String)> {
        toml::from_str::<RawReady>(text).unwrap().validate()
    }

    #[test]
    fn one_probe_with_a_timeout() {
        let r = check("http = \"http://127.0.0.1:26657/health\"\ntimeout_s = 30").unwrap();
        assert_eq!(
            (r.probe, r.timeout_s),
            (
                ProbeSpec::Http("http://127.0.0.1:26657/health".into()),
                30.0
            )
        );
        assert_eq!(
            check("tcp = \"127.0.0.1:1\"").unwrap().timeout_s,
            DEFAULT_TIMEOUT_S
        );
        assert_eq!(
            check("log = \"Started\"").unwrap().probe,
            ProbeSpec::Log("Started".into())
        );
        assert_eq!(check("").unwrap_err().0, "ready");
        assert_eq!(check("tcp = \"a:1\"\nlog = \"x\"").unwrap_err().0, "ready");
        assert_eq!(check("http = \"https://x:1/\"").unwrap_err().0, "http");
        let e = check("log = \"height=(\"").unwrap_err();
        assert_eq!(e.0, "log");
        assert!(e.1.contains("not a valid regex"), "{}", e.1);
        assert_eq!(check("tcp = \"127.0.0.1\"").unwrap_err().0, "tcp");
        assert_eq!(
            check("tcp = \"a:1\"\ntimeout_s = 0").unwrap_err().0,
            "timeout_s"
        );
    }
}
