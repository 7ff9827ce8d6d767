//! A metric's history: one point per run (its median, with an interval), in run order,
//! with the change points found in it marked.

use super::frame::{self, Axis};
use super::{check_finite, empty, extent, padded, render, series_color, AxisScale, PlotSize};
use crate::ReportError;
use dyno_model::{format_timestamp, Metric};
use plotters::prelude::*;

/// The colour of a strong change point.
const STRONG: RGBColor = RGBColor(180, 35, 24);
/// The colour of a weak change point.
const WEAK: RGBColor = RGBColor(213, 134, 0);

/// One run's value in a history plot.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    /// When the run started, seconds since the Unix epoch (labels the x axis).
    pub started_at: f64,
    /// The run's value (usually the median of its samples), in the metric's base unit.
    pub value: f64,
    /// An interval around the value (e.g. the median's 95% CI), drawn as an error bar.
    pub interval: Option<(f64, f64)>,
}

/// The history of one metric: a point per run, in the order the runs started, joined
/// by a thin line, each with its interval, and a dashed vertical line before every run
/// at which a change point was found: red for a strong one, amber for a weak one.
///
/// The x axis is the run's position in the history, labelled with its start date: runs
/// are often hours apart and then months, and an axis in time would squeeze the first
/// ones into one spot.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::{HistoryPlot, HistoryPoint};
///
/// let m = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
/// let point = |t: f64, v: f64| HistoryPoint { started_at: t, value: v, interval: None };
/// let svg = HistoryPlot::new("Blake2256 on bench-01", m)
///     .point(point(1.79e9, 1.0e9))
///     .point(point(1.79e9 + 3600.0, 1.2e9))
///     .change_point(1, true)
///     .render_svg()
///     .unwrap();
/// assert_eq!(svg.matches("<circle").count(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct HistoryPlot {
    title: String,
    metric: Metric,
    points: Vec<HistoryPoint>,
    change_points: Vec<(usize, bool)>,
    size: PlotSize,
}

impl HistoryPlot {
    /// An empty history of `metric`.
    pub fn new(title: impl Into<String>, metric: Metric) -> Self {
        HistoryPlot {
            title: title.into(),
            metric,
            points: Vec::new(),
            change_points: Vec::new(),
            size: PlotSize::default(),
        }
    }

    /// Adds the next run's point (points are drawn in the order they are added).
    pub fn point(mut self, point: HistoryPoint) -> Self {
        self.points.push(point);
        self
    }

    /// Marks a change point: the level changes from point `index` on (0 < index < points);
    /// `strong` when it is significant at the strict level. Indexes outside that range
    /// are ignored.
    pub fn change_point(mut self, index: usize, strong: bool) -> Self {
        self.change_points.push((index, strong));
        self
    }

    /// Sets the size.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    fn validate(&self) -> Result<(), ReportError> {
        if self.points.is_empty() {
            return Err(empty(&self.title, "no runs"));
        }
        for (i, p) in self.points.iter().enumerate() {
            let (lo, hi) = p.interval.unwrap_or((p.value, p.value));
            let series = format!("run {}", i + 1);
            check_finite(&self.title, &series, &[p.started_at, p.value, lo, hi])?;
            if lo > hi {
                return Err(ReportError::BadInterval {
                    plot: self.title.clone(),
                    series,
                    low: lo,
                    high: hi,
                });
            }
        }
        Ok(())
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        self.validate()?;
        let ends = self.points.iter().flat_map(|p| {
            let (lo, hi) = p.interval.unwrap_or((p.value, p.value));
            [lo, hi, p.value]
        });
        let (v_lo, v_hi) = extent(ends);
        let y_range = padded(v_lo, v_hi, 0.1);
        let v_scale = AxisScale::new(self.metric.unit, &y_range);
        let n = self.points.len();
        let x_range = -0.5..(n as f64 - 0.5);
        let tick = |x: &f64| self.tick_label(*x);
        let color = series_color(0);

        render(&self.title, self.size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                90,
                Axis::new(x_range, n.min(8), tick, "run (start date, UTC)"),
                Axis::scaled(&v_scale, &y_range, 7, v_scale.metric_label(&self.metric)),
            )?;
            let at = |i: usize, v: f64| (i as f64, v_scale.to_axis(v));
            let (y0, y1) = (v_scale.to_axis(y_range.start), v_scale.to_axis(y_range.end));
            for &(c, strong) in self.change_points.iter().filter(|c| c.0 > 0 && c.0 < n) {
                let x = c as f64 - 0.5;
                let color = if strong { STRONG } else { WEAK };
                let dashed = dashes(x, y0, y1, 24);
                chart
                    .draw_series(
                        dashed
                            .into_iter()
                            .map(|seg| PathElement::new(seg, color.stroke_width(2))),
                    )
                    .map_err(super::msg)?;
            }
            let line = self.points.iter().enumerate().map(|(i, p)| at(i, p.value));
            chart
                .draw_series(LineSeries::new(line, color.mix(0.5).stroke_width(1)))
                .map_err(super::msg)?;
            for (i, p) in self.points.iter().enumerate() {
                if let Some((lo, hi)) = p.interval {
                    chart
                        .draw_series([PathElement::new(vec![at(i, lo), at(i, hi)], color)])
                        .map_err(super::msg)?;
                }
            }
            let marks = self.points.iter().enumerate();
            chart
                .draw_series(marks.map(|(i, p)| Circle::new(at(i, p.value), 5, color.filled())))
                .map_err(super::msg)?;
            Ok(())
        })
    }

    /// The label of x position `x`: the start date of the run there, if `x` is one.
    fn tick_label(&self, x: f64) -> String {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        match self.points.get(i as usize) {
            // `2026-11-25T13:40:00Z` -> `11-25 13:40`
            Some(p) => {
                let full = format_timestamp(p.started_at);
                format!("{} {}", &full[5..10], &full[11..16])
            }
            None => String::new(),
        }
    }
}

/// A vertical line at `x` from `y0` to `y1` as `n` dashes (every other piece drawn).
fn dashes(x: f64, y0: f64, y1: f64, n: usize) -> Vec<Vec<(f64, f64)>> {
    let step = (y1 - y0) / (2 * n) as f64;
    (0..n)
        .map(|k| {
            let a = y0 + step * (2 * k) as f64;
            vec![(x, a), (x, a + step)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, count};
    use dyno_model::{Direction, Unit};

    fn metric() -> Metric {
        Metric::new("Sr25519Verify", Unit::PerSecond, Direction::HigherIsBetter)
    }

    fn point(i: usize, v: f64) -> HistoryPoint {
        HistoryPoint {
            started_at: 1_795_000_000.0 + 3600.0 * i as f64,
            value: v,
            interval: Some((v * 0.98, v * 1.02)),
        }
    }

    #[test]
    fn one_mark_per_run_and_one_dashed_line_per_change_point() {
        let mut plot = HistoryPlot::new("history", metric());
        for (i, v) in [100.0, 101.0, 99.0, 150.0, 151.0].into_iter().enumerate() {
            plot = plot.point(point(i, v));
        }
        let svg = plot
            .change_point(3, true)
            .change_point(1, false)
            .change_point(0, true)
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["history", "Sr25519Verify (/s)"]);
        assert_eq!(count(&svg, "<circle"), 5);
        // 24 dashes per change point inside the range; the one at 0 is ignored.
        assert_eq!(count(&svg, "stroke=\"#B42318\""), 24);
        assert_eq!(count(&svg, "stroke=\"#D58600\""), 24);
        // The first run's start date labels its tick.
        let first = format_timestamp(1_795_000_000.0);
        assert!(svg.contains(&format!("{} {}", &first[5..10], &first[11..16])));
    }

    #[test]
    fn bad_input_is_an_error() {
        let none = HistoryPlot::new("h", metric()).render_svg();
        assert!(matches!(none, Err(ReportError::EmptyInput { .. })));
        let nan = HistoryPlot::new("h", metric())
            .point(point(0, f64::NAN))
            .render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
        let mut backwards = point(0, 1.0);
        backwards.interval = Some((2.0, 1.0));
        let backwards = HistoryPlot::new("h", metric())
            .point(backwards)
            .render_svg();
        assert!(matches!(backwards, Err(ReportError::BadInterval { .. })));
    }
}
