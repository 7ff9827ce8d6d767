//! `[pgo]` of the study file: how profile-guided variants are trained, and whether the
//! training runs the measured benchmarks' own commands (which flatters PGO).

use crate::error::TuneError;
use crate::study_toml::{duration_value, Budget, Ctx, DEFAULT_BENCHMARK_TIMEOUT_S};
use serde::Deserialize;
use toml::Spanned;

/// `[pgo]`: the training of profile-guided variants.
#[derive(Debug, Clone, PartialEq)]
pub struct PgoSettings {
    /// Training command lines with `{bin}` for the instrumented binary (`training`). Empty:
    /// every benchmark's own command, once, so training and measured inputs are the same.
    pub training: Vec<Vec<String>>,
    /// A training command still going after this many seconds is killed and the variant
    /// fails (`timeout`, default [`DEFAULT_BENCHMARK_TIMEOUT_S`]).
    pub timeout_s: f64,
}

impl Default for PgoSettings {
    fn default() -> Self {
        PgoSettings {
            training: Vec::new(),
            timeout_s: DEFAULT_BENCHMARK_TIMEOUT_S,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPgo {
    training: Option<Vec<Spanned<Vec<String>>>>,
    timeout: Option<Spanned<Budget>>,
}

pub(crate) fn pgo_settings(
    cx: &Ctx,
    raw: Option<Spanned<RawPgo>>,
) -> Result<PgoSettings, TuneError> {
    let mut s = PgoSettings::default();
    let Some(raw) = raw else { return Ok(s) };
    let raw = raw.into_inner();
    for cmd in raw.training.into_iter().flatten() {
        let at = cmd.span().start;
        let cmd = cmd.into_inner();
        if cmd.is_empty() || !cmd.iter().any(|a| a.contains("{bin}")) {
            return Err(cx.err(
                at,
                "pgo `training`: each command is a list of arguments with {bin} where the instrumented binary goes, e.g. [\"{bin}\", \"--small-input\"]",
            ));
        }
        s.training.push(cmd);
    }
    if let Some(v) = raw.timeout {
        let at = v.span().start;
        s.timeout_s = duration_value(v.into_inner())
            .filter(|t| *t > 0.0)
            .ok_or_else(|| {
                cx.err(
                    at,
                    "pgo `timeout`: not a positive duration (e.g. \"90s\", \"30m\")",
                )
            })?;
    }
    Ok(s)
}
