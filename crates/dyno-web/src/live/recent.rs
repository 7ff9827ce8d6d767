//! The live page's memory: each endpoint's TPS, height and blocks adopted over the last
//! minutes (one point a scrape), plotted under the panel. Older points are dropped; a
//! server restart starts afresh (Prometheus and the Grafana dashboards keep history).
//!
//! The plots carry no legend of their own: with ten endpoints a legend in the corner
//! covers the newest seconds. One legend table under them names every endpoint with its
//! colour (the same in every plot) and its newest figures. Blocks adopted per second is
//! the rate over the last [`ADOPTION_WINDOW_S`] seconds: a block every few slots would
//! otherwise read as spikes of one between seconds of zero.

use super::view::TargetView;
use crate::markup::{esc, figure, HtmlTable};
use dyno_model::{Direction, Metric, Unit};
use dyno_report::plot::{series_color_hex, series_dashed, PlotSize, TimeSeriesPlot};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// One figure of one endpoint over time: `(seconds since the server started, value)`.
type Points = VecDeque<(f64, f64)>;

/// Seconds the adoption rate is taken over.
pub(crate) const ADOPTION_WINDOW_S: f64 = 10.0;

/// What is plotted: the figure's title, its metric, how to read it off a view, and
/// whether the value read is a counter plotted as its rate over a trailing window.
struct Figure {
    title: &'static str,
    metric: fn() -> Metric,
    read: fn(&TargetView) -> Option<f64>,
    rate_over_s: Option<f64>,
}

const FIGURES: [Figure; 3] = [
    Figure {
        title: "Transactions per second",
        metric: || Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter),
        read: |v| v.node.tps,
        rate_over_s: None,
    },
    Figure {
        title: "Chain height",
        metric: || Metric::new("height", Unit::Count, Direction::HigherIsBetter),
        read: |v| v.node.height,
        rate_over_s: None,
    },
    Figure {
        title: "Blocks adopted per second",
        metric: || Metric::new("adopted", Unit::PerSecond, Direction::HigherIsBetter),
        read: |v| v.node.adopted,
        rate_over_s: Some(ADOPTION_WINDOW_S),
    },
];

/// The last minutes of every endpoint's figures.
pub(crate) struct Recent {
    keep: f64,
    /// Per figure, per endpoint name.
    series: [BTreeMap<String, Points>; 3],
    /// Endpoint names in the order first seen (the order they were given): each keeps
    /// its colour, whichever plots it is in.
    order: Vec<String>,
}

/// The rate of a counter's points over the trailing `window_s` seconds, one value per
/// point whose window reaches back at least half its length (a rate over the first
/// second or two would be a spike again); a counter that went down (the endpoint
/// restarted) starts afresh there.
pub(crate) fn trailing_rate(points: &Points, window_s: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &(t, v)) in points.iter().enumerate() {
        if i > 0 && v < points[i - 1].1 {
            start = i;
        }
        while start < i && points[start].0 < t - window_s {
            start += 1;
        }
        let (t0, v0) = points[start];
        if start < i && t - t0 >= window_s / 2.0 {
            out.push((t, (v - v0) / (t - t0)));
        }
    }
    out
}

impl Recent {
    pub(crate) fn new(keep: Duration) -> Recent {
        Recent {
            keep: keep.as_secs_f64(),
            series: Default::default(),
            order: Vec::new(),
        }
    }

    /// Adds the scrape at `t` (seconds since the server started) and forgets what is
    /// older than the kept span.
    pub(crate) fn push(&mut self, t: f64, views: &[TargetView]) {
        for v in views {
            if !self.order.contains(&v.name) {
                self.order.push(v.name.clone());
            }
        }
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

    /// Endpoint `name`'s blocks adopted per second over the last [`ADOPTION_WINDOW_S`].
    pub(crate) fn adoption_rate(&self, name: &str) -> Option<f64> {
        let points = self.series[2].get(name)?;
        trailing_rate(points, ADOPTION_WINDOW_S).last().map(|p| p.1)
    }

    /// The palette index of endpoint `name`.
    fn color(&self, name: &str) -> usize {
        self.order.iter().position(|n| n == name).unwrap_or(0)
    }

    /// What figure `f` plots of each endpoint: its points, or their trailing rate.
    fn plotted(&self, f: usize) -> BTreeMap<&str, Vec<(f64, f64)>> {
        self.series[f]
            .iter()
            .map(|(name, points)| {
                let shown = match FIGURES[f].rate_over_s {
                    Some(w) => trailing_rate(points, w),
                    None => points.iter().copied().collect(),
                };
                (name.as_str(), shown)
            })
            .filter(|(_, p)| p.len() >= 2)
            .collect()
    }

    /// The plots of the kept span (x: seconds before now) and their legend, or nothing
    /// before two scrapes.
    pub(crate) fn render(&self) -> String {
        let now = self
            .series
            .iter()
            .flat_map(|s| s.values())
            .filter_map(|p| p.back().map(|b| b.0))
            .fold(f64::NEG_INFINITY, f64::max);
        let mut out = String::new();
        let mut newest: BTreeMap<&str, [Option<f64>; 3]> = BTreeMap::new();
        for (i, f) in FIGURES.iter().enumerate() {
            let shown = self.plotted(i);
            if shown.is_empty() {
                continue;
            }
            let mut plot = TimeSeriesPlot::new(f.title, (f.metric)())
                .time_axis("time before now")
                .without_legend()
                .size(PlotSize {
                    width: 560,
                    height: 260,
                });
            for (name, points) in &shown {
                newest.entry(name).or_default()[i] = points.last().map(|p| p.1);
                let points = points.iter().map(|&(t, v)| (t - now, v)).collect();
                plot = plot.series_in_color(*name, self.color(name), points);
            }
            let span = shown
                .values()
                .filter_map(|p| Some(now - p.first()?.0))
                .fold(0.0, f64::max);
            let over = match f.rate_over_s {
                Some(w) => format!(", each point over the {w:.0} s before it"),
                None => String::new(),
            };
            out.push_str(&figure(
                "live-history",
                &format!(
                    "{}{over}, the last {:.0} s (x: seconds before now; kept in memory for {:.0} minutes)",
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
        // The legend takes the grid's next cell, beside the last plot.
        format!(
            "<h2>The last minutes</h2>\n<div class=\"plots\">\n{out}<div class=\"legend\">\n{}</div>\n</div>\n",
            self.legend(&newest)
        )
    }

    /// The plots' legend: each endpoint's colour and its newest plotted figures.
    fn legend(&self, newest: &BTreeMap<&str, [Option<f64>; 3]>) -> String {
        let mut t = HtmlTable::new(
            "live-legend",
            &[
                ("Endpoint", false),
                ("TPS", true),
                ("Height", true),
                ("Adopted/s (10 s)", true),
            ],
        );
        let num = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
        for name in &self.order {
            let Some(v) = newest.get(name.as_str()) else {
                continue;
            };
            let color = self.color(name);
            // A solid square, or for the palette's second round a dashed line as plotted.
            let mark = if series_dashed(color) {
                format!(
                    "<line x1=\"0\" y1=\"7\" x2=\"22\" y2=\"7\" stroke=\"{}\" \
                     stroke-width=\"3\" stroke-dasharray=\"6 4\"/>",
                    series_color_hex(color)
                )
            } else {
                format!(
                    "<rect width=\"22\" height=\"14\" rx=\"2\" fill=\"{}\"/>",
                    series_color_hex(color)
                )
            };
            let swatch = format!(
                "<svg class=\"swatch\" width=\"22\" height=\"14\" aria-hidden=\"true\">{mark}</svg> "
            );
            t.row(vec![
                swatch + &esc(name),
                num(v[0], 0),
                num(v[1], 0),
                num(v[2], 2),
            ]);
        }
        t.render()
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
        // No adoption was read: no third plot.
        assert!(!html.contains("Blocks adopted per second"));
    }

    #[test]
    fn ten_endpoints_get_a_legend_outside_the_plots_each_in_its_own_colour() {
        let mut r = Recent::new(Duration::from_secs(600));
        let names: Vec<String> = (0..10).map(|i| format!("node-{i}")).collect();
        for t in 0..5 {
            let views: Vec<TargetView> = names
                .iter()
                .enumerate()
                .map(|(i, n)| view(n, 100.0 * i as f64 + t as f64))
                .collect();
            r.push(t as f64, &views);
        }
        let html = r.render();
        let plots = &html[..html.find("<table").expect("a legend table")];
        for n in &names {
            assert!(!plots.contains(n.as_str()), "{n} is named inside a plot");
        }
        let legend = &html[html.find("<table class=\"live-legend\">").unwrap()..];
        for (i, n) in names.iter().enumerate().take(8) {
            let row = format!("fill=\"{}\"/></svg> {n}</td>", series_color_hex(i));
            assert!(legend.contains(&row), "{row}: {legend}");
        }
        // The ninth and tenth share the first two's colours, dashed.
        let row = "stroke-dasharray=\"6 4\"/></svg> node-9</td>";
        assert!(legend.contains(row), "{row}: {legend}");
        // node-9's newest TPS (900 + 4).
        assert!(legend.contains("<td class=\"num\">904</td>"), "{legend}");
    }

    #[test]
    fn blocks_adopted_per_second_is_the_rate_over_the_last_ten_seconds() {
        // A block every third second: per second the rate would read 1, 0, 0, 1, 0, 0...
        let points: Points = (0..40).map(|t| (t as f64, (t / 3) as f64)).collect();
        let rate = trailing_rate(&points, ADOPTION_WINDOW_S);
        assert_eq!(rate.len(), 35, "every point from the fifth second on");
        for &(t, r) in rate.iter().filter(|p| p.0 >= 10.0) {
            assert!((r - 1.0 / 3.0).abs() < 0.1, "at {t} s: {r}");
        }
        // A counter that went back to zero (the node restarted) starts afresh.
        let restarted: Points = [(0.0, 5.0), (1.0, 6.0), (2.0, 0.0), (3.0, 1.0)].into();
        assert_eq!(trailing_rate(&restarted, 2.0), vec![(1.0, 1.0), (3.0, 1.0)]);
    }
}
