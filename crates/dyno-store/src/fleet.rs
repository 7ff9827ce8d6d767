//! The fleet question's data: for one metric, the newest complete run of every machine
//! with the samples it measured. Statistics (medians, shares, percentiles) are the
//! caller's, computed from these samples.
//!
//! A *machine* is a host name with a CPU model: the stored host fingerprint also holds the
//! kernel, memory and filesystem, which change under one machine over time, and a machine
//! should count once in a distribution.

use crate::error::StoreError;
use crate::filter::{Dialect, Param, RunFilter, Sql};
use crate::query::decode_metric;
use crate::sqlite::Sqlite;
use crate::RunId;
use dyno_model::Metric;
use rusqlite::params;
use std::path::Path;

/// Which runs the fleet question looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetQuery {
    /// The metric (`Sr25519Verify`...).
    pub metric: String,
    /// Only CPU models containing this text (case-insensitive).
    pub cpu: Option<String>,
    /// Only runs of this command (`machine`...).
    pub command: Option<String>,
}

/// One machine's newest complete run that measured the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineRun {
    /// Host name.
    pub hostname: String,
    /// CPU model as the kernel reports it.
    pub cpu_model: String,
    /// The run (id in this store).
    pub run: RunId,
    /// The run's globally unique id.
    pub run_uuid: String,
    /// Start, seconds since the Unix epoch.
    pub started_at: f64,
    /// The run's samples of the metric (NaN samples left out), in repetition order.
    pub samples: Vec<f64>,
}

/// The answer to a [`FleetQuery`].
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRuns {
    /// The metric with its unit and direction (from the newest run); `None` when no
    /// machine measured it.
    pub metric: Option<Metric>,
    /// One entry per machine, ordered by CPU model then host name.
    pub machines: Vec<MachineRun>,
}

/// The newest complete run per machine that registered the metric and matches the
/// query's filters, in one dialect (the filters are [`Sql`]'s, as the run list's and the
/// history's). Columns: id, uuid, host name, CPU model, start, unit, direction.
pub(crate) fn newest_per_machine_sql(dialect: Dialect, query: &FleetQuery) -> Sql {
    let mut sql = Sql::new(
        dialect,
        "SELECT id, uuid, hostname, cpu_model, started_at, unit, direction FROM (
            SELECT r.id, r.uuid, h.hostname, h.cpu_model, r.started_at, m.unit, m.direction,
                   row_number() OVER (PARTITION BY h.hostname, h.cpu_model
                                      ORDER BY r.started_at DESC, r.id DESC) AS newest
            FROM runs r JOIN hosts h ON h.id = r.host_id
            JOIN run_metrics m ON m.run_id = r.id AND m.name = ",
    );
    let p = sql.bind(Param::Text(query.metric.clone()));
    sql.text.push_str(&p);
    sql.text.push_str(" WHERE r.status = 'complete'");
    sql.and_runs_match(&RunFilter {
        command: query.command.clone(),
        ..RunFilter::default()
    });
    if let Some(cpu) = &query.cpu {
        sql.and_contains("h.cpu_model", cpu, true);
    }
    sql.text
        .push_str(") ranked WHERE newest = 1 ORDER BY cpu_model, hostname");
    sql
}

/// The metric all machines' runs measured: one unit and direction, or
/// [`StoreError::MixedUnits`] (runs of dyno versions that disagree on the metric), since a
/// distribution over values in different units means nothing.
pub(crate) fn common_metric(
    store: &Path,
    name: &str,
    units: impl Iterator<Item = (String, String)>,
) -> Result<Option<Metric>, StoreError> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for u in units {
        if !seen.contains(&u) {
            seen.push(u);
        }
    }
    match seen.as_slice() {
        [] => Ok(None),
        [(unit, direction)] => decode_metric(store, name.to_string(), unit, direction).map(Some),
        _ => Err(StoreError::MixedUnits {
            metric: name.to_string(),
            units: seen
                .into_iter()
                .map(|(u, d)| format!("{u} ({d})"))
                .collect(),
        }),
    }
}

impl Sqlite {
    pub(crate) fn fleet_runs(&self, query: &FleetQuery) -> Result<FleetRuns, StoreError> {
        let sql = newest_per_machine_sql(Dialect::Sqlite, query);
        let mut stmt = self.conn.prepare(&sql.text).map_err(self.sql())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(sql.sqlite_params()), |r| {
                Ok((
                    MachineRun {
                        run: r.get(0)?,
                        run_uuid: r.get(1)?,
                        hostname: r.get(2)?,
                        cpu_model: r.get(3)?,
                        started_at: r.get(4)?,
                        samples: Vec::new(),
                    },
                    (r.get::<_, String>(5)?, r.get::<_, String>(6)?),
                ))
            })
            .map_err(self.sql())?;
        let rows = rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())?;
        let metric = common_metric(&self.path, &query.metric, rows.iter().map(|r| r.1.clone()))?;
        let mut machines: Vec<MachineRun> = rows.into_iter().map(|r| r.0).collect();
        let mut values = self
            .conn
            .prepare_cached(
                "SELECT value FROM samples WHERE run_id = ?1 AND metric = ?2
                 ORDER BY repetition, rowid",
            )
            .map_err(self.sql())?;
        for m in &mut machines {
            let vals = values
                .query_map(params![m.run, query.metric], |r| r.get::<_, Option<f64>>(0))
                .map_err(self.sql())?;
            for v in vals {
                m.samples.extend(v.map_err(self.sql())?);
            }
        }
        machines.retain(|m| !m.samples.is_empty());
        let metric = metric.filter(|_| !machines.is_empty());
        Ok(FleetRuns { metric, machines })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_the_next_placeholders() {
        let q = FleetQuery {
            metric: "M".into(),
            cpu: Some("epyc".into()),
            command: Some("machine".into()),
        };
        let sql = newest_per_machine_sql(Dialect::Postgres, &q);
        assert!(sql.text.contains("m.name = $1"));
        assert!(sql.text.contains("r.command = $2"));
        assert!(sql
            .text
            .contains("strpos(lower(h.cpu_model), lower($3)) > 0"));
        assert_eq!(sql.params.len(), 3);
        let lite = newest_per_machine_sql(Dialect::Sqlite, &q);
        assert!(lite
            .text
            .contains("instr(lower(h.cpu_model), lower(?3)) > 0"));
        let plain = newest_per_machine_sql(Dialect::Postgres, &FleetQuery::default());
        assert!(!plain.text.contains("$2") && plain.params.len() == 1);
    }
}
