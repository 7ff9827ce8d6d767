//! The comparisons stored: every `dyno compare` comparison's runs share a comparison id
//! in their settings. Read by the list of comparisons and by each comparison's page.

use crate::markup::query;
use crate::state::PageError;
use dyno_store::{RunFilter, RunId, Store};

/// One comparison as the list shows it.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) id: String,
    pub(crate) file: String,
    pub(crate) subjects: Vec<String>,
    pub(crate) workloads: Vec<String>,
    pub(crate) planned: u64,
    pub(crate) runs: Vec<RunId>,
    pub(crate) started_at: f64,
}

impl Comparison {
    /// Its first run.
    pub(crate) fn first(&self) -> RunId {
        self.runs.iter().min().copied().unwrap_or_default()
    }

    /// Its last run.
    pub(crate) fn last(&self) -> RunId {
        self.runs.iter().max().copied().unwrap_or_default()
    }

    /// Its page.
    pub(crate) fn href(&self) -> String {
        format!("/compare{}", query(&[("id", Some(&self.id))]))
    }
}

/// Every comparison in the store, newest first, from its runs' settings.
pub(crate) fn comparisons(store: &Store) -> Result<Vec<Comparison>, PageError> {
    let filter = RunFilter {
        command: Some("compare".into()),
        ..RunFilter::default()
    };
    let mut comparisons: Vec<Comparison> = Vec::new();
    for s in store.list_runs(&filter)? {
        let run = store.run(s.id)?;
        let meta = &run.info.settings["comparison"];
        let Some(id) = meta["id"].as_str() else {
            continue;
        };
        let names = |k: &str| -> Vec<String> {
            meta[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let i = match comparisons.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                let subjects = names("subjects");
                let workloads = names("workloads");
                let rounds = meta["rounds"].as_u64().unwrap_or(0);
                comparisons.push(Comparison {
                    id: id.to_string(),
                    file: meta["file"].as_str().unwrap_or_default().to_string(),
                    planned: rounds * (subjects.len() * workloads.len()) as u64,
                    subjects,
                    workloads,
                    started_at: s.started_at,
                    ..Comparison::default()
                });
                comparisons.len() - 1
            }
        };
        let c = &mut comparisons[i];
        c.runs.push(s.id);
        c.started_at = c.started_at.min(s.started_at);
    }
    Ok(comparisons)
}
