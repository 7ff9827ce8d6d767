//! Box plots of one metric per subject, best subject first.

use super::frame::{self, Axis};
use super::{
    check_finite, empty, extent, msg, padded, render, series_color, AxisScale, Chart, PlotSize,
    Series,
};
use crate::ReportError;
use dyno_model::{Direction, Metric};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// Fill of the inter-quartile boxes; tests count boxes by it.
const BOX_FILL: RGBColor = RGBColor(166, 206, 227);
/// Colour of the baseline reference line.
const BASELINE: RGBColor = RGBColor(213, 94, 0);
/// Half the height of a box, in category units (one subject per unit).
const BOX_HALF: f64 = 0.25;

/// Horizontal box plots of one metric, one per subject, sorted by median with the best
/// subject on top (the metric's [`Direction`] decides what best means).
///
/// Boxes span the quartiles with a line at the median; whiskers reach the most extreme
/// samples within 1.5 IQR of the box (Tukey). Every raw sample is drawn over its box,
/// jittered vertically by a fixed sequence so that equal values stay visible and the
/// output is the same on every run. An optional baseline (e.g. the official build's
/// median) is a vertical reference line.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::BoxPlot;
///
/// let metric = Metric::new("import time", Unit::Seconds, Direction::LowerIsBetter);
/// let svg = BoxPlot::new("Block import", metric)
///     .subject("new", vec![1.1, 1.2, 1.15])
///     .subject("old", vec![1.4, 1.5, 1.45])
///     .render_svg()
///     .unwrap();
/// assert!(svg.contains("new") && svg.contains("old"));
/// ```
#[derive(Debug, Clone)]
pub struct BoxPlot {
    title: String,
    metric: Metric,
    subjects: Vec<Series>,
    baseline: Option<(String, f64)>,
    size: PlotSize,
}

/// What one box draws, computed from a subject's samples.
struct BoxStats<'a> {
    label: &'a str,
    values: &'a [f64],
    q1: f64,
    median: f64,
    q3: f64,
    whisker_lo: f64,
    whisker_hi: f64,
}

impl<'a> BoxStats<'a> {
    fn of(series: &'a Series) -> Option<Self> {
        let s = dyno_stats::summarize(&series.values)?;
        let iqr = s.q3 - s.q1;
        let (lo_fence, hi_fence) = (s.q1 - 1.5 * iqr, s.q3 + 1.5 * iqr);
        let inside = series
            .values
            .iter()
            .copied()
            .filter(|v| (lo_fence..=hi_fence).contains(v));
        let (whisker_lo, whisker_hi) = extent(inside);
        Some(BoxStats {
            label: &series.label,
            values: &series.values,
            q1: s.q1,
            median: s.median,
            q3: s.q3,
            whisker_lo: whisker_lo.min(s.q1),
            whisker_hi: whisker_hi.max(s.q3),
        })
    }
}

/// Vertical jitter of the `j`-th point of a box: a golden-ratio sequence, spread over
/// most of the box height, deterministic so that plots are reproducible.
fn jitter(j: usize) -> f64 {
    let u = (j as f64 * 0.618_033_988_749_895).fract();
    (u - 0.5) * 1.6 * BOX_HALF
}

/// Draws one box at height `y`: quartile box, whiskers, median and jittered samples.
fn draw_box(
    chart: &mut Chart<'_, '_>,
    b: &BoxStats<'_>,
    y: f64,
    point_color: RGBColor,
    scale: &AxisScale,
) -> Result<(), ReportError> {
    let a = |v: f64| scale.to_axis(v);
    let line = BLACK.stroke_width(1);
    let corners = [(a(b.q1), y - BOX_HALF), (a(b.q3), y + BOX_HALF)];
    chart
        .draw_series([
            Rectangle::new(corners, BOX_FILL.filled()),
            Rectangle::new(corners, line),
        ])
        .map_err(msg)?;
    let cap = BOX_HALF / 2.0;
    let (lo, hi) = (a(b.whisker_lo), a(b.whisker_hi));
    chart
        .draw_series([
            PathElement::new(vec![(lo, y), (a(b.q1), y)], line),
            PathElement::new(vec![(a(b.q3), y), (hi, y)], line),
            PathElement::new(vec![(lo, y - cap), (lo, y + cap)], line),
            PathElement::new(vec![(hi, y - cap), (hi, y + cap)], line),
            PathElement::new(
                vec![(a(b.median), y - BOX_HALF), (a(b.median), y + BOX_HALF)],
                BLACK.stroke_width(3),
            ),
        ])
        .map_err(msg)?;
    let color = point_color.mix(0.7).filled();
    chart
        .draw_series(
            b.values
                .iter()
                .enumerate()
                .map(|(j, &v)| Circle::new((a(v), y + jitter(j)), 3, color)),
        )
        .map_err(msg)?;
    Ok(())
}

impl BoxPlot {
    /// A box plot of `metric` with a title and no subjects yet.
    pub fn new(title: impl Into<String>, metric: Metric) -> Self {
        BoxPlot {
            title: title.into(),
            metric,
            subjects: Vec::new(),
            baseline: None,
            size: PlotSize::default(),
        }
    }

    /// Adds a subject and its samples (in the metric's base unit).
    pub fn subject(mut self, label: impl Into<String>, values: Vec<f64>) -> Self {
        self.subjects.push(Series {
            label: label.into(),
            values,
        });
        self
    }

    /// Draws a vertical reference line at `value`, labelled.
    pub fn baseline(mut self, label: impl Into<String>, value: f64) -> Self {
        self.baseline = Some((label.into(), value));
        self
    }

    /// Sets the size; the height also grows with the number of subjects.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    /// Validates the input and computes the boxes, best first.
    fn boxes(&self) -> Result<Vec<BoxStats<'_>>, ReportError> {
        if self.subjects.is_empty() {
            return Err(empty(&self.title, "no subjects"));
        }
        let mut boxes = Vec::with_capacity(self.subjects.len());
        for s in &self.subjects {
            check_finite(&self.title, &s.label, &s.values)?;
            let b = BoxStats::of(s).ok_or_else(|| {
                empty(
                    &self.title,
                    &format!("subject `{}` has no samples", s.label),
                )
            })?;
            boxes.push(b);
        }
        if let Some((label, value)) = &self.baseline {
            check_finite(&self.title, label, &[*value])?;
        }
        let direction = self.metric.direction;
        boxes.sort_by(|a, b| {
            let order = a.median.total_cmp(&b.median);
            match direction {
                Direction::HigherIsBetter => order.reverse(),
                Direction::LowerIsBetter => order,
            }
        });
        Ok(boxes)
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        let boxes = self.boxes()?;
        let n = boxes.len();
        let (lo, hi) = extent(
            boxes
                .iter()
                .flat_map(|b| b.values.iter().copied())
                .chain(self.baseline.iter().map(|(_, v)| *v)),
        );
        let x_range = padded(lo, hi, 0.05);
        // Subject i (0 = best) sits at y = n - 1 - i so the best is on top; a baseline
        // gets a strip above the boxes for its label.
        let y_top = n as f64 - 0.5 + if self.baseline.is_some() { 0.5 } else { 0.0 };
        let y_of = |i: usize| (n - 1 - i) as f64;
        let longest = boxes
            .iter()
            .map(|b| b.label.chars().count())
            .max()
            .unwrap_or(0);
        let label_width = (longest as u32 * 8 + 20).clamp(60, 320);
        let size = PlotSize {
            width: self.size.width,
            height: self.size.height.max(120 + 40 * n as u32),
        };
        let scale = AxisScale::new(self.metric.unit, &x_range);

        render(&self.title, size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                label_width,
                Axis::scaled(&scale, &x_range, 8, scale.metric_label(&self.metric)),
                Axis::unmarked(-0.5..y_top),
            )?;

            let a = |v: f64| scale.to_axis(v);
            for (i, b) in boxes.iter().enumerate() {
                let y = y_of(i);
                draw_box(&mut chart, b, y, series_color(i), &scale)?;
                // Subject names are drawn by hand at each box's centre: a numeric axis
                // would place its ticks at "nice" values, not one per subject.
                let (px, py) = chart.backend_coord(&(a(x_range.start), y));
                root.draw(&Text::new(
                    b.label.to_string(),
                    (px - 8, py),
                    frame::mark_text(HPos::Right, VPos::Center),
                ))
                .map_err(msg)?;
            }

            if let Some((label, value)) = &self.baseline {
                let style = BASELINE.stroke_width(2);
                chart
                    .draw_series([PathElement::new(
                        vec![(a(*value), -0.5), (a(*value), n as f64 - 0.5)],
                        style,
                    )])
                    .map_err(msg)?;
                chart
                    .draw_series([Text::new(
                        label.clone(),
                        (a(*value), n as f64 - 0.25),
                        frame::mark_text(HPos::Center, VPos::Center).color(&BASELINE),
                    )])
                    .map_err(msg)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, count};
    use dyno_model::Unit;

    fn throughput() -> Metric {
        Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter)
    }

    fn plot(metric: Metric) -> BoxPlot {
        BoxPlot::new("Blake2-256", metric)
            .subject("slow", vec![1.0e9, 1.1e9, 1.05e9, 0.98e9])
            .subject("fast", vec![2.0e9, 2.1e9, 2.05e9, 1.9e9, 3.5e9])
            .subject("middle", vec![1.5e9, 1.6e9, 1.55e9])
    }

    #[test]
    fn draws_one_box_per_subject_and_every_sample() {
        let svg = plot(throughput())
            .baseline("official", 1.5e9)
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["Blake2-256", "slow", "fast", "middle", "official"]);
        assert_eq!(count(&svg, "fill=\"#A6CEE3\""), 3, "three boxes");
        assert_eq!(count(&svg, "<circle"), 12, "every sample is a point");
        assert!(
            svg.contains("Blake2256 (GiB/s)"),
            "axis label carries the unit"
        );
        assert!(
            svg.contains(">\n1.5\n<"),
            "ticks are round numbers of GiB/s"
        );
    }

    #[test]
    fn best_subject_is_on_top() {
        let y_of = |svg: &str, label: &str| -> i32 {
            let at = svg.find(&format!(">\n{label}\n<")).unwrap();
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let y = tag.split("y=\"").nth(1).unwrap().split('"').next().unwrap();
            y.parse().unwrap()
        };
        let svg = plot(throughput()).render_svg().unwrap();
        assert!(y_of(&svg, "fast") < y_of(&svg, "middle"));
        assert!(y_of(&svg, "middle") < y_of(&svg, "slow"));
        let mut lower = throughput();
        lower.direction = Direction::LowerIsBetter;
        let svg = plot(lower).render_svg().unwrap();
        assert!(y_of(&svg, "slow") < y_of(&svg, "middle"));
        assert!(y_of(&svg, "middle") < y_of(&svg, "fast"));
    }

    #[test]
    fn empty_or_non_finite_input_is_an_error() {
        let none = BoxPlot::new("t", throughput()).render_svg();
        assert!(matches!(none, Err(ReportError::EmptyInput { .. })));
        let hollow = BoxPlot::new("t", throughput())
            .subject("a", vec![])
            .render_svg();
        assert!(matches!(hollow, Err(ReportError::EmptyInput { .. })));
        let nan = BoxPlot::new("t", throughput())
            .subject("a", vec![1.0, f64::NAN])
            .render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
        let inf_baseline = plot(throughput()).baseline("b", f64::INFINITY).render_svg();
        assert!(matches!(inf_baseline, Err(ReportError::NonFinite { .. })));
    }

    #[test]
    fn a_single_constant_sample_still_draws() {
        let svg = BoxPlot::new("t", throughput())
            .subject("only", vec![5.0])
            .render_svg()
            .unwrap();
        assert_well_formed(&svg, &["only"]);
        assert_eq!(count(&svg, "<circle"), 1);
    }

    #[test]
    fn labels_are_escaped() {
        let svg = BoxPlot::new("t", throughput())
            .subject("<script>x</script>", vec![1.0, 2.0])
            .render_svg()
            .unwrap();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }
}
