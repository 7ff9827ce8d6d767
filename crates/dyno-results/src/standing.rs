//! `dyno results fleet` from the store: the fleet's newest runs of a metric made into a
//! [`FleetReport`], the machine or run it places, and the table, the standing line and the
//! HTML page people read.

use crate::fleet::{FleetFilter, FleetReference, FleetReport, FleetStanding, Passes};
use crate::run_docs::median_of;
use crate::ResultsError;
use dyno_model::{format_value, Direction};
use dyno_report::plot::BoxPlot;
use dyno_report::{Align, Cell, HtmlReport, Section, Table, TableFormat};
use dyno_store::{FleetQuery, RunId, Store};
use std::path::Path;

/// Which machine the report places (`--run`, `--host`, or the machine dyno runs on).
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// A run in the store, wherever it ran.
    Run(RunId),
    /// The machine with this host name; an error when it has no complete run.
    Host(String),
    /// The machine dyno runs on (host name and CPU model as probed); no standing when it
    /// has no complete run.
    ThisHost {
        /// Its host name.
        hostname: String,
        /// Its CPU model.
        cpu_model: String,
    },
}

impl FleetReport {
    /// The fleet of `query`'s metric in `store`, every machine judged against `reference`
    /// by `meets` (a value and the stored metric's direction: does it meet the minimum?),
    /// and where `place` stands in it.
    pub fn from_store(
        store: &Store,
        query: &FleetQuery,
        reference: Option<FleetReference>,
        meets: Option<&dyn Fn(f64, Direction) -> bool>,
        place: &Place,
    ) -> Result<FleetReport, ResultsError> {
        let fleet = store.fleet_runs(query)?;
        let command = query.command.clone().unwrap_or_default();
        let Some(metric) = fleet.metric.clone() else {
            return Err(ResultsError::NoFleet {
                metric: query.metric.clone(),
                store: store.path().to_path_buf(),
                command,
                cpu: query
                    .cpu
                    .as_ref()
                    .map(|c| format!(" with a CPU model containing {c:?}"))
                    .unwrap_or_default(),
            });
        };
        let filter = FleetFilter {
            command,
            cpu: query.cpu.clone(),
        };
        let direction = metric.direction;
        let passes_fn = |v: f64| meets.is_some_and(|m| m(v, direction));
        let passes: Passes = meets.map(|_| &passes_fn as &dyn Fn(f64) -> bool);
        let mut report = FleetReport::new(metric, &fleet, filter, reference, passes);
        report.standing = report.standing_of(store, place, passes)?;
        Ok(report)
    }

    /// Where `place` stands; `None` when it is this host and it has no complete run.
    fn standing_of(
        &self,
        store: &Store,
        place: &Place,
        passes: Passes,
    ) -> Result<Option<FleetStanding>, ResultsError> {
        let metric = &self.measured.name;
        let (source, hostname, cpu) = match place {
            Place::Run(id) => {
                let run = store.run(*id).map_err(ResultsError::Run)?;
                let Some(value) = median_of(&run, metric) else {
                    return Err(ResultsError::RunWithout {
                        run: *id,
                        metric: metric.clone(),
                    });
                };
                let host = run.info.host;
                return Ok(Some(self.place(
                    "run",
                    host.hostname,
                    host.cpu_model,
                    *id,
                    value,
                    passes,
                )));
            }
            Place::Host(h) => ("hostname", h.clone(), None),
            Place::ThisHost {
                hostname,
                cpu_model,
            } => ("this host", hostname.clone(), Some(cpu_model.as_str())),
        };
        match self.machine(&hostname, cpu) {
            Some(s) => Ok(Some(self.place(
                source,
                s.hostname.clone(),
                s.cpu_model.clone(),
                s.run_id,
                s.value,
                passes,
            ))),
            None if matches!(place, Place::Host(_)) => Err(ResultsError::HostWithout {
                host: hostname,
                metric: metric.clone(),
            }),
            None => Ok(None),
        }
    }

    /// The report as `dyno results fleet` prints it in `format`: the table, then (but
    /// in CSV, which stays one table) where `place` stands.
    pub fn text(&self, format: TableFormat, place: &Place) -> String {
        let mut out = format.render(&self.table());
        if format != TableFormat::Csv {
            out += &format!("\n{}\n", self.standing_line(place));
        }
        out
    }

    /// One line saying where the placed machine stands, or (this host without a run) how
    /// to put it in the store.
    pub fn standing_line(&self, place: &Place) -> String {
        let metric = &self.measured;
        let Some(s) = &self.standing else {
            let hostname = match place {
                Place::ThisHost { hostname, .. } | Place::Host(hostname) => hostname.clone(),
                Place::Run(id) => format!("run {id}"),
            };
            return format!(
                "this host ({hostname}) has no complete `{}` run of {} in this store: push one with \
                 `dyno results push --to URL`",
                self.filter.command, metric.name
            );
        };
        format!(
            "{} {} ({}), run {}: {} = {}, percentile {:.0} among all machines, {:.0} among its CPU model{}",
            s.source,
            s.hostname,
            s.cpu_model,
            s.run_id,
            metric.name,
            format_value(s.value, metric.unit),
            s.percentile_all,
            s.percentile_cpu,
            match s.meets_minimum {
                Some(true) => ", meets the minimum",
                Some(false) => ", below the minimum",
                None => "",
            }
        )
    }

    /// The distribution per CPU model and over all machines, with the share meeting the
    /// reference minimum.
    pub fn table(&self) -> Table {
        let metric = &self.measured;
        let passing_title = match &self.reference {
            Some(FleetReference {
                set,
                minimum: Some(m),
                ..
            }) => format!("Meets {set} ({})", format_value(*m, metric.unit)),
            Some(FleetReference { set, .. }) => format!("Meets {set} (no minimum)"),
            None => "Meets minimum".into(),
        };
        let mut t = Table::new(format!(
            "{} per CPU model ({})",
            metric.name,
            metric.unit.symbol()
        ))
        .column("CPU model", Align::Left)
        .column("Machines", Align::Right)
        .column("Min", Align::Right)
        .column("Q1", Align::Right)
        .column("Median", Align::Right)
        .column("Q3", Align::Right)
        .column("Max", Align::Right)
        .column(passing_title, Align::Right);
        let f = |v: f64| format_value(v, metric.unit);
        for g in self.cpu_models.iter().chain(&self.overall) {
            t.push_row([
                Cell::new(g.label()),
                Cell::new(g.machines.to_string()),
                Cell::new(f(g.min)),
                Cell::new(f(g.q1)),
                Cell::new(f(g.median)),
                Cell::new(f(g.q3)),
                Cell::new(f(g.max)),
                Cell::new(
                    g.passing_share
                        .map(|p| format!("{:.0} %", p * 100.0))
                        .unwrap_or_else(|| "-".into()),
                ),
            ]);
        }
        t
    }

    /// A self-contained HTML page: the standing line, the table and a box plot per CPU
    /// model (with the reference minimum), for the fleet of the store at `store`.
    pub fn html(&self, place: &Place, store: &Path) -> String {
        let metric = &self.measured;
        let mut plot = BoxPlot::new(format!("{} per CPU model", metric.name), metric.clone());
        for g in &self.cpu_models {
            plot = plot.subject(
                format!("{} (n={})", g.label(), g.values.len()),
                g.values.clone(),
            );
        }
        if let Some(FleetReference {
            set,
            minimum: Some(m),
            ..
        }) = &self.reference
        {
            plot = plot.baseline(format!("{set} minimum"), *m);
        }
        let section = Section::new(format!("{} across the fleet", metric.name))
            .paragraph(self.standing_line(place))
            .table(self.table())
            .plot_result(
                "Each machine's median of its newest complete run; one box per CPU model",
                plot.render_svg(),
            );
        HtmlReport::new(format!("dyno fleet: {}", metric.name))
            .parameter("store", store.display().to_string())
            .parameter("command", self.filter.command.clone())
            .parameter(
                "CPU filter",
                self.filter.cpu.clone().unwrap_or_else(|| "all".into()),
            )
            .section(section)
            .render()
    }
}
