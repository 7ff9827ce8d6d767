//! Time series of several series (CPU %, RSS) over the seconds of a run.

use super::{
    check_finite, empty, extent, msg, padded, render, series_color, AxisScale, PlotSize, GRID_BOLD,
    GRID_LIGHT, LABEL_FONT, TICK_FONT, TITLE_FONT,
};
use crate::ReportError;
use dyno_model::{Metric, Unit};
use plotters::prelude::*;

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
    size: PlotSize,
}

impl TimeSeriesPlot {
    /// A time series plot of `metric` with no series yet.
    pub fn new(title: impl Into<String>, metric: Metric) -> Self {
        TimeSeriesPlot {
            title: title.into(),
            metric,
            series: Vec::new(),
            size: PlotSize::default(),
        }
    }

    /// Adds a series of `(seconds, value)` points.
    pub fn series(mut self, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        self.series.push(TimeSeries {
            label: label.into(),
            points,
        });
        self
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
        Ok(())
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        self.validate()?;
        let all = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let (t_lo, t_hi) = extent(all().map(|p| p.0));
        let (v_lo, v_hi) = extent(all().map(|p| p.1));
        // Resource use reads best against zero; only values below zero move the floor.
        // The top gets room for the legend, so it does not hide the lines.
        let floor = v_lo.min(0.0);
        let y_range = floor..padded(floor, v_hi, 0.05).end + (v_hi - floor) * 0.2;
        let t_range = padded(t_lo, t_hi, 0.02);
        let t_scale = AxisScale::new(Unit::Seconds, &t_range);
        let v_scale = AxisScale::new(self.metric.unit, &y_range);

        render(&self.title, self.size, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&self.title, TITLE_FONT)
                .margin(15)
                .x_label_area_size(50)
                .y_label_area_size(90)
                .build_cartesian_2d(t_scale.axis_range(&t_range), v_scale.axis_range(&y_range))
                .map_err(msg)?;
            chart
                .configure_mesh()
                .x_labels(10)
                .y_labels(7)
                .x_label_formatter(&|t| t_scale.tick(*t))
                .y_label_formatter(&|v| v_scale.tick(*v))
                .x_desc(t_scale.label("time since start"))
                .y_desc(v_scale.metric_label(&self.metric))
                .bold_line_style(GRID_BOLD)
                .light_line_style(GRID_LIGHT)
                .axis_desc_style(LABEL_FONT)
                .label_style(TICK_FONT)
                .draw()
                .map_err(msg)?;
            for (i, s) in self.series.iter().enumerate() {
                let color = series_color(i);
                chart
                    .draw_series(LineSeries::new(
                        s.points
                            .iter()
                            .map(|&(t, v)| (t_scale.to_axis(t), v_scale.to_axis(v))),
                        color.stroke_width(2),
                    ))
                    .map_err(msg)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(TICK_FONT)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(msg)
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
