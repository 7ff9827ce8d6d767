//! The live page's memory: each endpoint's TPS, height and adoption rate over the last
//! minutes (one point a scrape), plotted under the panel. Older points are dropped; a
//! server restart starts afresh (Prometheus and the Grafana dashboards keep history).

use super::view::TargetView;
use crate::markup::figure;
use dyno_model::{Direction, Metric, Unit};
use dyno_report::plot::{PlotSize, TimeSeriesPlot};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// One figure of one endpoint over time: `(seconds since the server started, value)`.
type Points = VecDeque<(f64, f64)>;

/// What is plotted: the figure's title, its metric, and how to read it off a view.
struct Figure {
    title: &'static str,
    metric: fn() -> Metric,
    read: fn(&TargetView) -> Option<f64>,
}

const FIGURES: [Figure; 3] = [
    Figure {
        title: "Transactions per second",
        metric: || Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter),
        read: |v| v.node.tps,
    },
    Figure {
        title: "Chain height",
        metric: || Metric::new("height", Unit::Count, Direction::HigherIsBetter),
        read: |v| v.node.height,
    },
    Figure {
        title: "Blocks adopted per second",
        metric: || Metric::new("adopted", Unit::PerSecond, Direction::HigherIsBetter),
        read: |v| v.node.adopted_rate,
    },
];

/// The last minutes of every endpoint's figures.
pub(crate) struct Recent {
    keep: f64,
    /// Per figure, per endpoint name.
    series: [BTreeMap<String, Points>; 3],
}

impl Recent {
    pub(crate) fn new(keep: Duration) -> Recent {
        Recent {
            keep: keep.as_secs_f64(),
            series: Default::default(),
        }
    }

    /// Adds the scrape at `t` (seconds since the server started) and forgets what is
    /// older than the kept span.
    pub(crate) fn push(&mut self, t: f64, views: &[TargetView]) {
        for (f, series) in FIGURES.iter().zip(&mut self.series) {
            for v in views {
                if let Some(x) = (f.read)(v).filter(|x| x.is_finite()) {
                    series.entry(v.name.clone()).or_default().push_back((t, x));
                }
            }
            for points in series.values_mut() {
                while points.front().is_some_and(|p| p.0 < t - self.keep) {
                    points.pop_front();
                }
            }
            series.retain(|_, p| !p.is_empty());
        }
    }

    /// The plots of the kept span (x: seconds before now), or nothing before two scrapes.
    pub(crate) fn render(&self) -> String {
        let now = self
            .series
            .iter()
            .flat_map(|s| s.values())
            .filter_map(|p| p.back().map(|b| b.0))
            .fold(f64::NEG_INFINITY, f64::max);
        let mut out = String::new();
        for (f, series) in FIGURES.iter().zip(&self.series) {
            if series.values().all(|p| p.len() < 2) {
                continue;
            }
            let mut plot = TimeSeriesPlot::new(f.title, (f.metric)())
                .time_axis("time before now")
                .size(PlotSize {
                    width: 560,
                    height: 260,
                });
            for (name, points) in series.iter().filter(|(_, p)| p.len() >= 2) {
                plot = plot.series(
                    name.clone(),
                    points.iter().map(|&(t, v)| (t - now, v)).collect(),
                );
            }
            let span = series
                .values()
                .filter_map(|p| Some(now - p.front()?.0))
                .fold(0.0, f64::max);
            out.push_str(&figure(
                "live-history",
                &format!(
                    "{}, the last {:.0} s (x: seconds before now; kept in memory for {:.0} minutes)",
                    f.title,
                    span,
                    self.keep / 60.0
                ),
                plot.render_svg(),
            ));
        }
        if out.is_empty() {
            return String::new();
        }
        format!(
            "<h2>The last minutes</h2>\n<div class=\"plots\">\n{}</div>\n",
            out
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::view::NodeView;

    fn view(name: &str, tps: f64) -> TargetView {
        TargetView {
            name: name.into(),
            error: None,
            tiles: Vec::new(),
            node: NodeView {
                tps: Some(tps),
                height: Some(tps / 100.0),
                ..NodeView::default()
            },
        }
    }

    #[test]
    fn the_last_minutes_are_kept_and_older_points_dropped() {
        let mut r = Recent::new(Duration::from_secs(10));
        assert_eq!(r.render(), "");
        for t in 0..30 {
            r.push(t as f64, &[view("a", 1000.0 + t as f64), view("b", 500.0)]);
        }
        let a = &r.series[0]["a"];
        assert_eq!(a.len(), 11, "{a:?}");
        assert_eq!(a.front().unwrap().0, 19.0);
        let html = r.render();
        assert_eq!(html.matches("<figure class=\"live-history\">").count(), 2);
        assert!(html.contains("the last 10 s"), "{html}");
        // No adoption rate was read: no third plot.
        assert!(!html.contains("Blocks adopted per second"));
    }
}
