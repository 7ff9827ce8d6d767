//! The fleet view: for one metric, the newest complete run of every machine in the
//! store (host name and CPU model), as `dyno results fleet` reads it.

use super::given;
use crate::markup::{answer_list, esc, figure, link, page, query, when, HtmlTable};
use crate::state::PageError;
use dyno_model::format_value;
use dyno_report::plot::{BoxPlot, PlotSize};
use dyno_store::{FleetQuery, Store};
use serde::Deserialize;

/// The fleet page's query parameters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FleetParams {
    metric: Option<String>,
    cpu: Option<String>,
    command: Option<String>,
}

/// The metric list (no metric given) or the fleet on one metric.
pub(crate) fn render(store: &Store, p: &FleetParams) -> Result<String, PageError> {
    let Some(metric) = given(&p.metric) else {
        return metric_list(store);
    };
    let q = FleetQuery {
        metric: metric.to_string(),
        cpu: given(&p.cpu).map(String::from),
        command: given(&p.command).map(String::from),
    };
    let fleet = store.fleet_runs(&q)?;
    let Some(m) = fleet.metric else {
        return Err(PageError::NotFound(format!(
            "No machine has a complete run that measured {metric:?}."
        )));
    };
    let mut table = HtmlTable::new(
        "fleet",
        &[
            ("CPU model", false),
            ("Host", false),
            ("Run", true),
            ("Started", false),
            ("n", true),
            ("Median", true),
        ],
    )
    .secondary(&["n"]);
    let mut plot = BoxPlot::new(format!("{} across the fleet", m.name), m.clone()).size(PlotSize {
        width: 900,
        height: (160 + 46 * fleet.machines.len() as u32).min(1400),
    });
    for r in &fleet.machines {
        let Some(sum) = dyno_stats::summarize(&r.samples) else {
            continue;
        };
        table.row(vec![
            esc(&r.cpu_model),
            link(
                &format!(
                    "/history{}",
                    query(&[("metric", Some(&m.name)), ("host", Some(&r.hostname))])
                ),
                &r.hostname,
            ),
            link(&format!("/runs/{}", r.run), &r.run.to_string()),
            when(r.started_at),
            sum.n.to_string(),
            esc(&format_value(sum.median, m.unit)),
        ]);
        plot = plot.subject(r.hostname.clone(), r.samples.clone());
    }
    let body = format!(
        "<p class=\"hint\">The newest complete run of each of {} machine{}, by CPU model.</p>\n{}{}",
        fleet.machines.len(),
        if fleet.machines.len() == 1 { "" } else { "s" },
        answer_list(&table.render()),
        figure(
            "fleet",
            &format!("{} ({}), every sample of each machine's newest run", m.name, m.unit.symbol()),
            plot.render_svg()
        )
    );
    Ok(page(&format!("Fleet: {}", m.name), "/fleet", &body))
}

fn metric_list(store: &Store) -> Result<String, PageError> {
    let names = store.metric_names()?;
    let mut body = String::from(
        "<p class=\"hint\">Pick a metric to see where every machine in the store stands on it.</p>\n<ul id=\"answer\">\n",
    );
    for n in &names {
        let href = format!("/fleet{}", query(&[("metric", Some(n))]));
        body.push_str(&format!("<li>{}</li>\n", link(&href, n)));
    }
    body.push_str("</ul>\n");
    if names.is_empty() {
        body.push_str("<p class=\"note\">No complete run is stored yet.</p>\n");
    }
    Ok(page("Fleet", "/fleet", &body))
}
