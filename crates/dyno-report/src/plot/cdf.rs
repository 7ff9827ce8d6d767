//! Empirical cumulative distribution functions of several series.

use super::frame::{self, Axis};
use super::{
    check_finite, empty, extent, padded, render, series_color, AxisScale, PlotSize, Series,
};
use crate::ReportError;
use dyno_model::Metric;
use plotters::prelude::*;

/// Above this many samples a series is drawn through evenly spaced order statistics
/// instead of every step, which keeps the SVG small without changing its shape visibly.
const MAX_STEPS: usize = 2000;

/// Empirical CDFs (fraction of samples at or below x) of several series of one metric,
/// e.g. the latency distributions of two releases.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::CdfPlot;
///
/// let latency = Metric::new("latency", Unit::Seconds, Direction::LowerIsBetter);
/// let svg = CdfPlot::new("Submit latency", latency)
///     .series("v1", vec![0.010, 0.012, 0.020])
///     .series("v2", vec![0.008, 0.009, 0.015])
///     .render_svg()
///     .unwrap();
/// assert!(svg.contains("v2"));
/// ```
#[derive(Debug, Clone)]
pub struct CdfPlot {
    title: String,
    metric: Metric,
    series: Vec<Series>,
    size: PlotSize,
}

/// The points of the step function of `values`: (x, fraction at or below x).
fn steps(values: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let frac = |i: usize| i as f64 / n as f64;
    if n <= MAX_STEPS {
        let mut points = Vec::with_capacity(2 * n);
        for (i, &x) in sorted.iter().enumerate() {
            points.push((x, frac(i)));
            points.push((x, frac(i + 1)));
        }
        points
    } else {
        let stride = n.div_ceil(MAX_STEPS / 2);
        let mut points: Vec<(f64, f64)> = (0..n)
            .step_by(stride)
            .map(|i| (sorted[i], frac(i + 1)))
            .collect();
        points.insert(0, (sorted[0], 0.0));
        if points.last().map(|p| p.1) != Some(1.0) {
            points.push((sorted[n - 1], 1.0));
        }
        points
    }
}

impl CdfPlot {
    /// A CDF plot of `metric` with no series yet.
    pub fn new(title: impl Into<String>, metric: Metric) -> Self {
        CdfPlot {
            title: title.into(),
            metric,
            series: Vec::new(),
            size: PlotSize::default(),
        }
    }

    /// Adds a series of samples (in the metric's base unit).
    pub fn series(mut self, label: impl Into<String>, values: Vec<f64>) -> Self {
        self.series.push(Series {
            label: label.into(),
            values,
        });
        self
    }

    /// Sets the size.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        if self.series.is_empty() {
            return Err(empty(&self.title, "no series"));
        }
        for s in &self.series {
            if s.values.is_empty() {
                return Err(empty(
                    &self.title,
                    &format!("series `{}` has no samples", s.label),
                ));
            }
            check_finite(&self.title, &s.label, &s.values)?;
        }
        let (lo, hi) = extent(self.series.iter().flat_map(|s| s.values.iter().copied()));
        let x_range = padded(lo, hi, 0.03);
        let scale = AxisScale::new(self.metric.unit, &x_range);

        render(&self.title, self.size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                70,
                Axis::scaled(&scale, &x_range, 8, scale.metric_label(&self.metric)),
                Axis::new(
                    0.0..1.02,
                    6,
                    |y| format!("{y:.1}"),
                    "fraction of samples ≤ x",
                ),
            )?;
            for (i, s) in self.series.iter().enumerate() {
                let points = steps(&s.values)
                    .into_iter()
                    .map(|(x, f)| (scale.to_axis(x), f));
                frame::draw_line(&mut chart, points, series_color(i), s.label.as_str())?;
            }
            frame::draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, polylines};
    use dyno_model::{Direction, Unit};

    fn latency() -> Metric {
        Metric::new("latency", Unit::Seconds, Direction::LowerIsBetter)
    }

    #[test]
    fn steps_climb_from_zero_to_one() {
        assert_eq!(
            steps(&[2.0, 1.0]),
            vec![(1.0, 0.0), (1.0, 0.5), (2.0, 0.5), (2.0, 1.0)]
        );
        let many: Vec<f64> = (0..10_000).map(f64::from).collect();
        let s = steps(&many);
        assert!(s.len() <= MAX_STEPS / 2 + 2);
        assert_eq!(s.first(), Some(&(0.0, 0.0)));
        assert_eq!(s.last(), Some(&(9999.0, 1.0)));
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn draws_one_curve_per_series_with_a_legend() {
        let svg = CdfPlot::new("Submit latency", latency())
            .series("v1", vec![0.010, 0.012, 0.020, 0.011])
            .series("v2", vec![0.008, 0.009, 0.015])
            .series("v3", vec![0.5])
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["Submit latency", "v1", "v2", "v3", "latency (ms)"]);
        // One polyline per curve and one per legend entry, in the series' colour.
        for i in 0..3 {
            assert_eq!(polylines(&svg, series_color(i)), 2, "series {i}");
        }
        assert!(svg.contains(">\n100\n<"), "ticks are in ms");
    }

    #[test]
    fn bad_input_is_an_error() {
        let none = CdfPlot::new("t", latency()).render_svg();
        assert!(matches!(none, Err(ReportError::EmptyInput { .. })));
        let hollow = CdfPlot::new("t", latency())
            .series("a", vec![])
            .render_svg();
        assert!(matches!(hollow, Err(ReportError::EmptyInput { .. })));
        let inf = CdfPlot::new("t", latency())
            .series("a", vec![f64::NEG_INFINITY])
            .render_svg();
        assert!(matches!(inf, Err(ReportError::NonFinite { .. })));
    }
}
