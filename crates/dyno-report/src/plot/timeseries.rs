//! Time series of several series (CPU %, RSS) over the seconds of a run.

use super::frame::{self, Axis};
use super::{check_finite, empty, extent, padded, render, series_color, AxisScale, PlotSize};
use crate::ReportError;
use dyno_model::{Metric, Unit};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// One line of a time series plot.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    /// Legend label.
    pub label: String,
    /// `(seconds since the start, value in the metric's base unit)`, in time order.
    pub points: Vec<(f64, f64)>,
}

/// Values of one metric over time, one line per series, e.g. the CPU use of two nodes
/// during a run. Time is in seconds since the start of the run.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::TimeSeriesPlot;
///
/// let cpu = Metric::new("CPU", Unit::Percent, Direction::LowerIsBetter);
/// let svg = TimeSeriesPlot::new("Node CPU", cpu)
///     .series("v1", vec![(0.0, 10.0), (1.0, 55.0), (2.0, 60.0)])
///     .render_svg()
///     .unwrap();
/// assert!(svg.contains("CPU (%)"));
/// ```
#[derive(Debug, Clone)]
pub struct TimeSeriesPlot {
    title: String,
    metric: Metric,
    series: Vec<TimeSeries>,
    /// Shaded spans of time `(label, from, to)`, seconds (a fault while it held).
    windows: Vec<(String, f64, f64)>,
    size: PlotSize,
    /// What the time axis measures from (default "time since start").
    time_axis: String,
    /// Each series' colour, an index into the palette ([`super::series_color_hex`]).
    colors: Vec<usize>,
    /// Whether the legend is drawn in the plot's top right corner (the default), or left
    /// to the page (many series: a legend that size would hide the newest points).
    legend: bool,
}

/// Fill of a marked window: a light red under the lines.
const WINDOW_FILL: RGBColor = RGBColor(220, 50, 47);

impl TimeSeriesPlot {
    /// A time series plot of `metric` with no series yet.
    pub fn new(title: impl Into<String>, metric: Metric) -> Self {
        TimeSeriesPlot {
            title: title.into(),
            metric,
            series: Vec::new(),
            windows: Vec::new(),
            size: PlotSize::default(),
            time_axis: "time since start".into(),
            colors: Vec::new(),
            legend: true,
        }
    }

    /// Leaves the legend out (and the room above the lines it needs): the page shows one
    /// of its own, beside or under the plot, with [`super::series_color_hex`] swatches.
    pub fn without_legend(mut self) -> Self {
        self.legend = false;
        self
    }

    /// Adds a series drawn in the palette's colour `color` (see
    /// [`super::series_color_hex`]), so one subject keeps its colour across plots where
    /// some have no series of it.
    pub fn series_in_color(
        mut self,
        label: impl Into<String>,
        color: usize,
        points: Vec<(f64, f64)>,
    ) -> Self {
        self.series.push(TimeSeries {
            label: label.into(),
            points,
        });
        self.colors.push(color);
        self
    }

    /// Names the time axis (its unit is added): "time since start" unless set, e.g.
    /// "time before now" for a live plot whose times are negative.
    pub fn time_axis(mut self, label: impl Into<String>) -> Self {
        self.time_axis = label.into();
        self
    }

    /// Shades the span `from_s .. to_s` (seconds, as the points' time) under the lines,
    /// its label written at its top left: a fault window on an adoption-over-time plot.
    pub fn window(mut self, label: impl Into<String>, from_s: f64, to_s: f64) -> Self {
        self.windows.push((label.into(), from_s, to_s));
        self
    }

    /// Adds a series of `(seconds, value)` points, in the next colour of the palette.
    pub fn series(self, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        let color = self.series.len();
        self.series_in_color(label, color, points)
    }

    /// Sets the size.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    fn validate(&self) -> Result<(), ReportError> {
        if self.series.is_empty() {
            return Err(empty(&self.title, "no series"));
        }
        for s in &self.series {
            if s.points.is_empty() {
                return Err(empty(
                    &self.title,
                    &format!("series `{}` has no points", s.label),
                ));
            }
            let flat: Vec<f64> = s.points.iter().flat_map(|&(t, v)| [t, v]).collect();
            check_finite(&self.title, &s.label, &flat)?;
        }
        for (label, from, to) in &self.windows {
            check_finite(&self.title, label, &[*from, *to])?;
        }
        Ok(())
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        self.validate()?;
        let all = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let spans = self.windows.iter().flat_map(|(_, a, b)| [*a, *b]);
        let (t_lo, t_hi) = extent(all().map(|p| p.0).chain(spans));
        let (v_lo, v_hi) = extent(all().map(|p| p.1));
        // Resource use reads best against zero; only values below zero move the floor.
        // The top gets room for the legend, so it does not hide the lines.
        let floor = v_lo.min(0.0);
        let room = if self.legend { 0.2 } else { 0.0 };
        let y_range = floor..padded(floor, v_hi, 0.05).end + (v_hi - floor) * room;
        let t_range = padded(t_lo, t_hi, 0.02);
        let t_scale = AxisScale::new(Unit::Seconds, &t_range);
        let v_scale = AxisScale::new(self.metric.unit, &y_range);

        render(&self.title, self.size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                90,
                Axis::scaled(&t_scale, &t_range, 10, t_scale.label(&self.time_axis)),
                Axis::scaled(&v_scale, &y_range, 7, v_scale.metric_label(&self.metric)),
            )?;
            for (label, from, to) in &self.windows {
                let (a, b) = (t_scale.to_axis(*from), t_scale.to_axis(*to));
                let (lo, hi) = (v_scale.to_axis(y_range.start), v_scale.to_axis(y_range.end));
                chart
                    .draw_series([
                        Rectangle::new([(a, lo), (b, hi)], WINDOW_FILL.mix(0.12).filled()),
                        Rectangle::new([(a, lo), (b, hi)], WINDOW_FILL.mix(0.5)),
                    ])
                    .map_err(super::msg)?;
                chart
                    .draw_series([Text::new(
                        label.clone(),
                        (a, hi),
                        frame::mark_text(HPos::Left, VPos::Top),
                    )])
                    .map_err(super::msg)?;
            }
            for (i, s) in self.series.iter().enumerate() {
                let points = s
                    .points
                    .iter()
                    .map(|&(t, v)| (t_scale.to_axis(t), v_scale.to_axis(v)));
                let index = self.colors.get(i).copied().unwrap_or(i);
                let color = series_color(index);
                if !self.legend && super::series_dashed(index) {
                    frame::draw_dashed_line(&mut chart, points, color)?;
                } else {
                    frame::draw_line(&mut chart, points, color, s.label.as_str())?;
                }
            }
            if !self.legend {
                return Ok(());
            }
            frame::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, polylines};
    use dyno_model::Direction;

    fn rss() -> Metric {
        Metric::new("RSS", Unit::Bytes, Direction::LowerIsBetter)
    }

    #[test]
    fn draws_one_line_per_series_with_a_legend() {
        let ramp = |k: f64| {
            (0..30)
                .map(|s| (f64::from(s), k * 1e8 + f64::from(s) * 1e7))
                .collect()
        };
        let svg = TimeSeriesPlot::new("Node memory", rss())
            .series("node-a", ramp(1.0))
            .series("node-b", ramp(2.0))
            .render_svg()
            .unwrap();
        assert_well_formed(
            &svg,
            &[
                "Node memory",
                "node-a",
                "node-b",
                "RSS (MiB)",
                "time since start (s)",
            ],
        );
        assert_eq!(
            polylines(&svg, series_color(0)),
            2,
            "a line and its legend mark"
        );
        assert_eq!(
            polylines(&svg, series_color(1)),
            2,
            "a line and its legend mark"
        );
    }

    #[test]
    fn windows_are_shaded_under_the_lines_with_their_labels() {
        let svg = TimeSeriesPlot::new("Adoption", rss())
            .series("x", vec![(0.0, 1e6), (10.0, 2e6)])
            .window("partition", 3.0, 5.0)
            .window("restart n3", 7.0, 8.0)
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["partition", "restart n3"]);
        let fill = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            WINDOW_FILL.0, WINDOW_FILL.1, WINDOW_FILL.2
        );
        assert_eq!(svg.matches(&fill).count(), 2, "one shaded span per window");
        let nan = TimeSeriesPlot::new("t", rss())
            .series("a", vec![(0.0, 1.0)])
            .window("w", f64::NAN, 1.0)
            .render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
    }

    #[test]
    fn without_its_legend_a_plot_keeps_each_series_colour_and_names_none() {
        let ramp = |k: f64| (0..5).map(|s| (f64::from(s), k + f64::from(s))).collect();
        let svg = TimeSeriesPlot::new("TPS", rss())
            .without_legend()
            .series_in_color("node-3", 3, ramp(1.0))
            .series_in_color("node-9", 9, ramp(2.0))
            .render_svg()
            .unwrap();
        assert!(
            !svg.contains("node-3") && !svg.contains("node-9"),
            "no legend"
        );
        assert_eq!(polylines(&svg, series_color(3)), 1, "the line only");
        // The ninth series on comes round to the palette's colours again, dashed.
        assert!(polylines(&svg, series_color(9)) > 4, "dashes, not one line");
        assert!(svg.contains(&crate::plot::series_color_hex(9)));
        assert!(!crate::plot::series_dashed(3) && crate::plot::series_dashed(9));
        assert_eq!(
            crate::plot::series_color_hex(9),
            crate::plot::series_color_hex(1)
        );
        assert_eq!(crate::plot::series_color_hex(0), "#0072B2");
    }

    #[test]
    fn a_single_point_still_draws() {
        let svg = TimeSeriesPlot::new("t", rss())
            .series("x", vec![(0.0, 0.0)])
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["x"]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let none = TimeSeriesPlot::new("t", rss()).render_svg();
        assert!(matches!(none, Err(ReportError::EmptyInput { .. })));
        let hollow = TimeSeriesPlot::new("t", rss())
            .series("a", vec![])
            .render_svg();
        assert!(matches!(hollow, Err(ReportError::EmptyInput { .. })));
        let nan = TimeSeriesPlot::new("t", rss())
            .series("a", vec![(f64::NAN, 1.0)])
            .render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
    }
}
