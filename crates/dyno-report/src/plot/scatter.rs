//! Scatter plots of two metrics with error boxes and the Pareto front.

use super::frame::{self, Axis};
use super::{check_finite, empty, extent, msg, padded, render, AxisScale, Chart, PlotSize};
use crate::ReportError;
use dyno_model::Metric;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// Colour of ordinary subjects.
const SUBJECT: RGBColor = RGBColor(0, 114, 178);
/// Colour of Pareto-optimal subjects and the front line; tests count Pareto points by it.
const PARETO: RGBColor = RGBColor(213, 94, 0);

/// An estimate with its uncertainty: typically a confidence interval around a median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// The point estimate.
    pub mid: f64,
    /// Upper end.
    pub high: f64,
}

impl Interval {
    /// An interval `low..=high` around `mid`.
    pub fn new(low: f64, mid: f64, high: f64) -> Self {
        Interval { low, mid, high }
    }

    /// A point without uncertainty.
    pub fn point(value: f64) -> Self {
        Interval::new(value, value, value)
    }
}

/// One subject in a scatter plot.
#[derive(Debug, Clone, PartialEq)]
pub struct ScatterPoint {
    /// Subject label, written next to the point.
    pub label: String,
    /// Value of the x metric.
    pub x: Interval,
    /// Value of the y metric.
    pub y: Interval,
    /// Whether the subject is on the Pareto front (the caller decides; see dyno-stats).
    pub pareto: bool,
}

impl ScatterPoint {
    /// A subject that is not on the Pareto front.
    pub fn new(label: impl Into<String>, x: Interval, y: Interval) -> Self {
        ScatterPoint {
            label: label.into(),
            x,
            y,
            pareto: false,
        }
    }

    /// Marks the subject as on (or off) the Pareto front.
    pub fn pareto(mut self, on_front: bool) -> Self {
        self.pareto = on_front;
        self
    }
}

/// Draws a subject's error box, and error bars through its estimate: the bars stay
/// visible when one interval has no width and the box collapses to a line.
fn draw_error_box(
    chart: &mut Chart<'_, '_>,
    p: &ScatterPoint,
    x_scale: &AxisScale,
    y_scale: &AxisScale,
) -> Result<(), ReportError> {
    let ax = |v: f64| x_scale.to_axis(v);
    let ay = |v: f64| y_scale.to_axis(v);
    let color = if p.pareto { PARETO } else { SUBJECT };
    let corners = [(ax(p.x.low), ay(p.y.low)), (ax(p.x.high), ay(p.y.high))];
    chart
        .draw_series([
            Rectangle::new(corners, color.mix(0.12).filled()),
            Rectangle::new(corners, color.mix(0.6).stroke_width(1)),
        ])
        .map_err(msg)?;
    let (x, y) = (ax(p.x.mid), ay(p.y.mid));
    let bar = color.stroke_width(1);
    chart
        .draw_series([
            PathElement::new(vec![(ax(p.x.low), y), (ax(p.x.high), y)], bar),
            PathElement::new(vec![(x, ay(p.y.low)), (x, ay(p.y.high))], bar),
        ])
        .map_err(msg)?;
    Ok(())
}

/// Two metrics per subject, each point with an error box spanning its x and y intervals
/// (and error bars through the estimate), Pareto-optimal subjects highlighted and joined
/// by a line in x order.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::{Interval, ScatterPlot, ScatterPoint};
///
/// let size = Metric::new("binary size", Unit::Bytes, Direction::LowerIsBetter);
/// let speed = Metric::new("tx/s", Unit::PerSecond, Direction::HigherIsBetter);
/// let svg = ScatterPlot::new("Size vs speed", size, speed)
///     .point(
///         ScatterPoint::new("lto", Interval::point(9e6), Interval::new(990.0, 1e3, 1010.0))
///             .pareto(true),
///     )
///     .point(ScatterPoint::new(
///         "o2",
///         Interval::point(12e6),
///         Interval::new(900.0, 950.0, 990.0),
///     ))
///     .render_svg()
///     .unwrap();
/// assert!(svg.contains("lto"));
/// ```
#[derive(Debug, Clone)]
pub struct ScatterPlot {
    title: String,
    x_metric: Metric,
    y_metric: Metric,
    points: Vec<ScatterPoint>,
    size: PlotSize,
}

impl ScatterPlot {
    /// A scatter plot of `y_metric` against `x_metric` with no points yet.
    pub fn new(title: impl Into<String>, x_metric: Metric, y_metric: Metric) -> Self {
        ScatterPlot {
            title: title.into(),
            x_metric,
            y_metric,
            points: Vec::new(),
            size: PlotSize::default(),
        }
    }

    /// Adds a subject.
    pub fn point(mut self, point: ScatterPoint) -> Self {
        self.points.push(point);
        self
    }

    /// Sets the size.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    fn validate(&self) -> Result<(), ReportError> {
        if self.points.is_empty() {
            return Err(empty(&self.title, "no subjects"));
        }
        for p in &self.points {
            for i in [p.x, p.y] {
                check_finite(&self.title, &p.label, &[i.low, i.mid, i.high])?;
                if i.low > i.high {
                    return Err(ReportError::BadInterval {
                        plot: self.title.clone(),
                        series: p.label.clone(),
                        low: i.low,
                        high: i.high,
                    });
                }
            }
        }
        Ok(())
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        self.validate()?;
        let ends = |f: fn(&ScatterPoint) -> Interval| {
            extent(self.points.iter().flat_map(|p| {
                let i = f(p);
                [i.low, i.mid, i.high]
            }))
        };
        let (x_lo, x_hi) = ends(|p| p.x);
        let (y_lo, y_hi) = ends(|p| p.y);
        let (x_range, y_range) = (padded(x_lo, x_hi, 0.1), padded(y_lo, y_hi, 0.1));
        let x_scale = AxisScale::new(self.x_metric.unit, &x_range);
        let y_scale = AxisScale::new(self.y_metric.unit, &y_range);
        let mut front: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter(|p| p.pareto)
            .map(|p| (x_scale.to_axis(p.x.mid), y_scale.to_axis(p.y.mid)))
            .collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));

        render(&self.title, self.size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                90,
                Axis::scaled(&x_scale, &x_range, 7, x_scale.metric_label(&self.x_metric)),
                Axis::scaled(&y_scale, &y_range, 7, y_scale.metric_label(&self.y_metric)),
            )?;

            let ax = |v: f64| x_scale.to_axis(v);
            let ay = |v: f64| y_scale.to_axis(v);
            for p in &self.points {
                draw_error_box(&mut chart, p, &x_scale, &y_scale)?;
            }
            if front.len() > 1 {
                frame::draw_line(&mut chart, front.iter().copied(), PARETO, "Pareto front")?;
            }
            for p in &self.points {
                let (color, radius) = if p.pareto { (PARETO, 6) } else { (SUBJECT, 4) };
                chart
                    .draw_series([Circle::new(
                        (ax(p.x.mid), ay(p.y.mid)),
                        radius,
                        color.filled(),
                    )])
                    .map_err(msg)?;
                let (px, py) = chart.backend_coord(&(ax(p.x.mid), ay(p.y.mid)));
                root.draw(&Text::new(
                    p.label.clone(),
                    (px + 8, py - 4),
                    frame::mark_text(HPos::Left, VPos::Bottom),
                ))
                .map_err(msg)?;
            }
            if front.len() > 1 {
                frame::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, count};
    use dyno_model::{Direction, Unit};

    fn plot() -> ScatterPlot {
        let size = Metric::new("binary size", Unit::Bytes, Direction::LowerIsBetter);
        let speed = Metric::new("throughput", Unit::PerSecond, Direction::HigherIsBetter);
        ScatterPlot::new("Size vs speed", size, speed)
            .point(
                ScatterPoint::new(
                    "lto",
                    Interval::point(9e6),
                    Interval::new(990.0, 1e3, 1010.0),
                )
                .pareto(true),
            )
            .point(ScatterPoint::new(
                "o2",
                Interval::new(11.5e6, 12e6, 12.5e6),
                Interval::new(900.0, 950.0, 990.0),
            ))
            .point(
                ScatterPoint::new(
                    "small",
                    Interval::point(6e6),
                    Interval::new(700.0, 720.0, 760.0),
                )
                .pareto(true),
            )
    }

    #[test]
    fn draws_points_boxes_labels_and_front() {
        let svg = plot().render_svg().unwrap();
        assert_well_formed(
            &svg,
            &["Size vs speed", "lto", "o2", "small", "Pareto front"],
        );
        assert_eq!(count(&svg, "<circle"), 3, "one point per subject");
        let pareto_points = svg
            .split("<circle")
            .skip(1)
            .filter(|c| c.split('>').next().unwrap().contains("fill=\"#D55E00\""))
            .count();
        assert_eq!(pareto_points, 2, "both Pareto subjects are highlighted");
        let thick = "stroke=\"#D55E00\" stroke-width=\"2\"";
        assert_eq!(
            count(&svg, thick),
            2,
            "the front is a line, with its legend mark"
        );
        // Two error bars per subject, in the subject's colour.
        let bars = count(&svg, "stroke=\"#D55E00\" stroke-width=\"1\" points")
            + count(&svg, "stroke=\"#0072B2\" stroke-width=\"1\" points");
        assert_eq!(bars, 6);
        assert!(svg.contains("binary size (MiB)") && svg.contains("throughput (k/s)"));
    }

    #[test]
    fn bad_input_is_an_error() {
        let empty = ScatterPlot::new("t", plot().x_metric, plot().y_metric).render_svg();
        assert!(matches!(empty, Err(ReportError::EmptyInput { .. })));
        let nan = plot()
            .point(ScatterPoint::new(
                "n",
                Interval::point(f64::NAN),
                Interval::point(1.0),
            ))
            .render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
        let reversed = plot()
            .point(ScatterPoint::new(
                "r",
                Interval::new(2.0, 1.5, 1.0),
                Interval::point(1.0),
            ))
            .render_svg();
        assert!(matches!(reversed, Err(ReportError::BadInterval { .. })));
    }
}
