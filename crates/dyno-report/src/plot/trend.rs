//! A metric's history, one point per run, with its change points marked: what
//! `dyno results trend --format html` draws.

use super::frame::{self, Axis};
use super::{check_finite, empty, extent, padded, render, series_color, AxisScale, PlotSize};
use crate::ReportError;
use dyno_model::Metric;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// The colour of the mean level between change points.
const LEVEL: RGBColor = RGBColor(68, 68, 68);

/// What a marked change point did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A strong change point in the worse direction.
    Regression,
    /// A strong change point in the better direction.
    Improvement,
    /// A weak change point, either way.
    Weak,
}

impl ChangeKind {
    /// How change point `c` is marked: weak ones grey whatever they did, strong ones by
    /// whether they made the metric worse in direction `better`.
    pub fn of(c: &dyno_stats::ChangePoint, better: dyno_stats::Better) -> ChangeKind {
        match (c.strength, c.is_regression(better)) {
            (dyno_stats::Strength::Weak, _) => ChangeKind::Weak,
            (_, true) => ChangeKind::Regression,
            (_, false) => ChangeKind::Improvement,
        }
    }

    fn color(self) -> RGBColor {
        match self {
            ChangeKind::Regression => RGBColor(213, 94, 0),
            ChangeKind::Improvement => RGBColor(0, 158, 115),
            ChangeKind::Weak => RGBColor(150, 150, 150),
        }
    }

    fn legend(self) -> &'static str {
        match self {
            ChangeKind::Regression => "regression",
            ChangeKind::Improvement => "improvement",
            ChangeKind::Weak => "weak change",
        }
    }
}

/// A change point to mark: the index of the first value of the new level.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeMark {
    /// Index into the values (`1..len`).
    pub index: usize,
    /// What it did.
    pub kind: ChangeKind,
    /// Text beside the mark (a run id, a change in percent).
    pub label: String,
}

/// The values of one metric over a history of runs, in run order, with a vertical line at
/// each change point and the mean level between strong change points. The x axis counts
/// runs (1 = the oldest shown), so uneven gaps in time do not squeeze the points.
///
/// ```
/// use dyno_model::{Direction, Metric, Unit};
/// use dyno_report::plot::{ChangeKind, TrendPlot};
///
/// let tps = Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter);
/// let values = vec![100.0, 101.0, 99.0, 100.0, 90.0, 91.0, 89.0, 90.0];
/// let svg = TrendPlot::new("tps over 8 runs", tps, values)
///     .mark(4, ChangeKind::Regression, "run 5: -10%")
///     .render_svg()
///     .unwrap();
/// assert!(svg.contains("run 5: -10%"));
/// ```
#[derive(Debug, Clone)]
pub struct TrendPlot {
    title: String,
    metric: Metric,
    values: Vec<f64>,
    marks: Vec<ChangeMark>,
    size: PlotSize,
}

impl TrendPlot {
    /// A plot of `values` (oldest first, in the metric's base unit) with no marks yet.
    pub fn new(title: impl Into<String>, metric: Metric, values: Vec<f64>) -> Self {
        TrendPlot {
            title: title.into(),
            metric,
            values,
            marks: Vec::new(),
            size: PlotSize {
                width: 960,
                height: 480,
            },
        }
    }

    /// Marks a change point at `index`.
    pub fn mark(mut self, index: usize, kind: ChangeKind, label: impl Into<String>) -> Self {
        self.marks.push(ChangeMark {
            index,
            kind,
            label: label.into(),
        });
        self
    }

    /// Sets the size.
    pub fn size(mut self, size: PlotSize) -> Self {
        self.size = size;
        self
    }

    fn validate(&self) -> Result<(), ReportError> {
        if self.values.is_empty() {
            return Err(empty(&self.title, "no values"));
        }
        check_finite(&self.title, &self.metric.name, &self.values)?;
        match self.marks.iter().find(|m| m.index >= self.values.len()) {
            Some(m) => Err(empty(
                &self.title,
                &format!("mark `{}` at {} is past the last value", m.label, m.index),
            )),
            None => Ok(()),
        }
    }

    /// The mean level between strong change points: `(first, last, mean)` in run order.
    fn levels(&self) -> Vec<(usize, usize, f64)> {
        let mut cuts: Vec<usize> = self
            .marks
            .iter()
            .filter(|m| m.kind != ChangeKind::Weak)
            .map(|m| m.index)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut bounds = vec![0];
        bounds.extend(cuts);
        bounds.push(self.values.len());
        bounds
            .windows(2)
            .filter(|w| w[1] > w[0])
            .map(|w| {
                let stretch = &self.values[w[0]..w[1]];
                (
                    w[0],
                    w[1] - 1,
                    stretch.iter().sum::<f64>() / stretch.len() as f64,
                )
            })
            .collect()
    }

    /// Renders the plot as an SVG document.
    pub fn render_svg(&self) -> Result<String, ReportError> {
        self.validate()?;
        let (lo, hi) = extent(self.values.iter().copied());
        let y_range = padded(lo, hi, 0.08);
        // Room at the top for the legend and the marks' labels.
        let y_range = y_range.start..y_range.end + (y_range.end - y_range.start) * 0.25;
        let x = |i: usize| i as f64 + 1.0;
        let x_range = padded(1.0, self.values.len() as f64, 0.02);
        let scale = AxisScale::new(self.metric.unit, &y_range);
        let top = scale.to_axis(y_range.end);
        render(&self.title, self.size, |root| {
            let mut chart = frame::chart(
                root,
                &self.title,
                90,
                Axis::new(
                    x_range.clone(),
                    10,
                    // Runs are whole numbers: a tick between two runs gets no label (a
                    // history of three runs read "1 2 2 2 3").
                    |v| {
                        if (v - v.round()).abs() < 1e-9 {
                            format!("{v:.0}")
                        } else {
                            String::new()
                        }
                    },
                    "run (oldest = 1)",
                ),
                Axis::scaled(&scale, &y_range, 7, scale.metric_label(&self.metric)),
            )?;
            let points: Vec<(f64, f64)> = self
                .values
                .iter()
                .enumerate()
                .map(|(i, &v)| (x(i), scale.to_axis(v)))
                .collect();
            frame::draw_line(
                &mut chart,
                points.iter().copied(),
                series_color(0),
                "per-run median",
            )?;
            let dot = series_color(0).filled();
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, dot)))
                .map_err(super::msg)?;
            let level = LEVEL.stroke_width(2);
            for (first, last, mean) in self.levels() {
                let y = scale.to_axis(mean);
                chart
                    .draw_series([PathElement::new(vec![(x(first), y), (x(last), y)], level)])
                    .map_err(super::msg)?;
            }
            self.draw_marks(&mut chart, top)
        })
    }

    fn draw_marks<'a, 'b: 'a>(
        &self,
        chart: &mut super::Chart<'a, 'b>,
        top: f64,
    ) -> Result<(), ReportError> {
        let mut in_legend = Vec::new();
        for m in &self.marks {
            // Between the last value of the old level and the first of the new.
            let at = m.index as f64 + 0.5;
            let style = m.kind.color().stroke_width(2);
            let bottom = chart.y_range().start;
            let drawn = chart
                .draw_series([PathElement::new(vec![(at, bottom), (at, top)], style)])
                .map_err(super::msg)?;
            if !in_legend.contains(&m.kind) {
                in_legend.push(m.kind);
                drawn
                    .label(m.kind.legend())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
            let text = frame::mark_text(HPos::Left, VPos::Top);
            chart
                .draw_series([Text::new(m.label.clone(), (at, top), text)])
                .map_err(super::msg)?;
        }
        frame::draw_legend(chart, SeriesLabelPosition::UpperLeft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{assert_well_formed, count, polylines};
    use dyno_model::{Direction, Unit};

    fn latency() -> Metric {
        Metric::new("latency", Unit::Seconds, Direction::LowerIsBetter)
    }

    fn step() -> Vec<f64> {
        (0..20)
            .map(|i| if i < 10 { 0.010 } else { 0.012 } + (i % 3) as f64 * 1e-4)
            .collect()
    }

    #[test]
    fn marks_and_levels_are_drawn() {
        let svg = TrendPlot::new("latency history", latency(), step())
            .mark(10, ChangeKind::Regression, "run 11: +20%")
            .mark(15, ChangeKind::Weak, "run 16")
            .render_svg()
            .unwrap();
        assert_well_formed(
            &svg,
            &[
                "latency history",
                "run 11: +20%",
                "run 16",
                "regression",
                "weak change",
                "per-run median",
                "latency (ms)",
                "run (oldest = 1)",
            ],
        );
        assert_eq!(
            count(&svg, "improvement"),
            0,
            "no legend entry without a mark"
        );
        // The series line and its legend mark; one vertical line and one legend mark per
        // kind.
        assert_eq!(polylines(&svg, series_color(0)), 2);
        assert_eq!(polylines(&svg, ChangeKind::Regression.color()), 2);
        assert_eq!(polylines(&svg, ChangeKind::Weak.color()), 2);
        // Two levels: before and after the strong change point (the weak one splits none).
        assert_eq!(polylines(&svg, LEVEL), 2);
    }

    #[test]
    fn a_short_history_labels_each_run_once() {
        let svg = TrendPlot::new("t", latency(), vec![0.93, 1.02, 1.12])
            .render_svg()
            .unwrap();
        // Each text element's content, trimmed.
        let texts: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit_once('>').map(|(_, text)| text.trim()))
            .collect();
        for run in ["1", "2", "3"] {
            let n = texts.iter().filter(|t| **t == run).count();
            assert_eq!(n, 1, "run {run} in {texts:?}");
        }
    }

    #[test]
    fn levels_split_at_strong_marks_only() {
        let plot = TrendPlot::new("t", latency(), vec![1.0, 1.0, 3.0, 3.0, 3.0])
            .mark(2, ChangeKind::Improvement, "a")
            .mark(4, ChangeKind::Weak, "b");
        assert_eq!(plot.levels(), vec![(0, 1, 1.0), (2, 4, 3.0)]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let none = TrendPlot::new("t", latency(), vec![]).render_svg();
        assert!(matches!(none, Err(ReportError::EmptyInput { .. })));
        let nan = TrendPlot::new("t", latency(), vec![1.0, f64::NAN]).render_svg();
        assert!(matches!(nan, Err(ReportError::NonFinite { .. })));
        let past = TrendPlot::new("t", latency(), vec![1.0, 2.0])
            .mark(2, ChangeKind::Weak, "x")
            .render_svg();
        assert!(matches!(past, Err(ReportError::EmptyInput { .. })));
    }
}
