//! One module per page: each reads what it needs from the store and returns the HTML.

pub mod bisect;
pub(crate) mod cluster;
pub(crate) mod compare;
pub(crate) mod comparison;
pub(crate) mod fleet;
pub(crate) mod history;
pub(crate) mod pipeline;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod stored;
pub(crate) mod tune;

use dyno_model::RunStatus;

/// A run status, coloured by its CSS class.
pub(crate) fn status(s: RunStatus) -> String {
    format!("<span class=\"status-{0}\">{0}</span>", s.as_str())
}

/// A query parameter: `None` for absent or blank.
pub(crate) fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The finite samples of `metric` in `run`, in repetition order.
pub(crate) fn values(run: &dyno_store::StoredRun, metric: &str) -> Vec<f64> {
    run.samples
        .iter()
        .filter(|s| s.metric == metric && s.value.is_finite())
        .map(|s| s.value)
        .collect()
}
