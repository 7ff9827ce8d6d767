//! SVG plots drawn with plotters and returned as strings.
//!
//! Each plot is a small builder: give it a title, the metric(s) it shows and the data,
//! then call `render_svg`. Values are in the metric's base unit; tick labels are formatted
//! with [`dyno_model::format_value`] and axis labels carry the unit symbol. Empty input
//! or a NaN/infinite value is an error, never a panic or a NaN in the SVG.
//!
//! Text is emitted as SVG `<text>` elements with the generic `sans-serif` family: plotters
//! is built without its `ttf` feature, so no font file is read and the viewer picks the
//! font. Text widths used for layout are estimates, which is why margins are generous.

mod boxplot;
mod cdf;
mod frame;
mod scatter;
mod timeseries;
mod trend;

pub use boxplot::BoxPlot;
pub use cdf::CdfPlot;
pub use scatter::{Interval, ScatterPlot, ScatterPoint};
pub use timeseries::{TimeSeries, TimeSeriesPlot};
pub use trend::{ChangeKind, ChangeMark, TrendPlot};

use crate::ReportError;
use dyno_model::{Metric, Unit};
use plotters::prelude::*;
use std::ops::Range;

/// Width and height of a plot in pixels (SVG user units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotSize {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Default for PlotSize {
    fn default() -> Self {
        PlotSize {
            width: 800,
            height: 480,
        }
    }
}

/// A labelled set of values: the samples of one subject, or one latency distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend or axis label.
    pub label: String,
    /// Values in the metric's base unit.
    pub values: Vec<f64>,
}

/// Colour-blind-safe palette (Okabe and Ito), in the order series are drawn.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// The colour of the `i`-th series.
pub(crate) fn series_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Whether the `i`-th series of a plot without its own legend is drawn dashed: the
/// palette's eight colours come round again from the ninth series, dashed (so nine to
/// sixteen series stay told apart), solid again from the seventeenth.
pub fn series_dashed(i: usize) -> bool {
    (i / PALETTE.len()) % 2 == 1
}

/// The colour plots draw the `i`-th series in (the palette repeats after eight), as a CSS
/// or SVG colour (`#0072B2`): for a legend a page draws itself beside a plot.
pub fn series_color_hex(i: usize) -> String {
    let RGBColor(r, g, b) = series_color(i);
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// One display scale for a whole axis: every tick in the same prefixed unit (never
/// `953.67 MiB/s` beside `1.02 GiB/s`), with the unit in the axis label and as many
/// decimals as it takes to tell neighbouring ticks apart.
///
/// Charts are built in axis units (values divided by [`AxisScale::to_axis`]), so that
/// plotters places its ticks at round numbers of the unit shown (1.00 GiB/s, not
/// 1e9 B/s = 0.93 GiB/s).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AxisScale {
    divisor: f64,
    suffix: &'static str,
    decimals: usize,
}

impl AxisScale {
    /// The scale for values of `unit` over `range` (in base units).
    pub(crate) fn new(unit: Unit, range: &Range<f64>) -> Self {
        let mag = range.start.abs().max(range.end.abs());
        let pick = |ladder: &[(f64, &'static str)]| {
            ladder
                .iter()
                .rev()
                .find(|(d, _)| mag >= *d)
                .copied()
                .unwrap_or(ladder[0])
        };
        const K: f64 = 1024.0;
        let (divisor, suffix) = match unit {
            Unit::BytesPerSecond => pick(&[
                (1.0, "B/s"),
                (K, "KiB/s"),
                (K * K, "MiB/s"),
                (K * K * K, "GiB/s"),
            ]),
            Unit::Bytes => pick(&[(1.0, "B"), (K, "KiB"), (K * K, "MiB"), (K * K * K, "GiB")]),
            Unit::PerSecond => pick(&[(1.0, "/s"), (1e3, "k/s"), (1e6, "M/s"), (1e9, "G/s")]),
            Unit::Seconds => pick(&[(1e-6, "µs"), (1e-3, "ms"), (1.0, "s")]),
            Unit::Nanoseconds => pick(&[(1.0, "ns"), (1e3, "µs"), (1e6, "ms")]),
            Unit::Percent => (1.0, "%"),
            Unit::Count => pick(&[(1.0, "count"), (1e3, "thousands"), (1e6, "millions")]),
        };
        // Ticks are about a tenth of the range apart; show one significant digit of that.
        let step = (range.end - range.start) / divisor / 10.0;
        let decimals = if step > 0.0 && step.is_finite() {
            (-step.log10().floor()).clamp(0.0, 4.0) as usize
        } else {
            2
        };
        AxisScale {
            divisor,
            suffix,
            decimals,
        }
    }

    /// A value in base units, in the unit the axis shows.
    pub(crate) fn to_axis(&self, value: f64) -> f64 {
        value / self.divisor
    }

    /// A range in base units, in the unit the axis shows.
    pub(crate) fn axis_range(&self, range: &Range<f64>) -> Range<f64> {
        self.to_axis(range.start)..self.to_axis(range.end)
    }

    /// The tick label of `v` (in axis units).
    pub(crate) fn tick(&self, v: f64) -> String {
        // Floating-point tick positions near zero come out as -1e-17: show them as 0.
        let v = if v.abs() < 0.5 * 10f64.powi(-(self.decimals as i32)) {
            0.0
        } else {
            v
        };
        format!("{v:.*}", self.decimals)
    }

    /// The axis description: the quantity and the unit its ticks are in.
    pub(crate) fn label(&self, name: &str) -> String {
        format!("{name} ({})", self.suffix)
    }

    /// The axis description for a metric.
    pub(crate) fn metric_label(&self, metric: &Metric) -> String {
        self.label(&metric.name)
    }
}

/// Fails on the first non-finite value of a series.
pub(crate) fn check_finite(plot: &str, series: &str, values: &[f64]) -> Result<(), ReportError> {
    match values.iter().find(|v| !v.is_finite()) {
        Some(&value) => Err(ReportError::NonFinite {
            plot: plot.to_string(),
            series: series.to_string(),
            value,
        }),
        None => Ok(()),
    }
}

/// The error for a plot with nothing to draw.
pub(crate) fn empty(plot: &str, what: &str) -> ReportError {
    ReportError::EmptyInput {
        plot: plot.to_string(),
        what: what.to_string(),
    }
}

/// A range covering `lo..hi` with a margin of `pad` of its width on each side; a single
/// value gets a range around it, so the axis never has zero width.
pub(crate) fn padded(lo: f64, hi: f64, pad: f64) -> Range<f64> {
    let width = hi - lo;
    if width > 0.0 {
        (lo - width * pad)..(hi + width * pad)
    } else {
        let half = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - half)..(hi + half)
    }
}

/// Smallest and largest of the values (which must be finite and non-empty).
pub(crate) fn extent(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

/// Draws into an SVG string: `draw` gets the root area, already filled white.
pub(crate) fn render<F>(title: &str, size: PlotSize, draw: F) -> Result<String, ReportError>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<(), ReportError>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (size.width, size.height)).into_drawing_area();
        let result = root
            .fill(&WHITE)
            .map_err(msg)
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(msg));
        result.map_err(|e| match e {
            ReportError::Draw { message, .. } => ReportError::Draw {
                plot: title.to_string(),
                message,
            },
            other => other,
        })?;
    }
    Ok(svg)
}

/// A chart with two numeric axes on the SVG backend, as every plot here draws on.
pub(crate) type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Converts any plotters error into a [`ReportError::Draw`]; [`render`] names the plot.
pub(crate) fn msg<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Draw {
        plot: String::new(),
        message: e.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks that `svg` is one `<svg>` element whose tags balance, holds no NaN, and
    /// contains every label.
    pub(crate) fn assert_well_formed(svg: &str, labels: &[&str]) {
        assert!(svg.starts_with("<svg"), "starts with <svg: {}", &svg[..40]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(
            !svg.contains("NaN") && !svg.contains("=\"inf") && !svg.contains("-inf"),
            "no NaN/inf"
        );
        let mut stack: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("tag closes") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name.trim()), "balanced tags");
            } else {
                let name = tag.split_whitespace().next().unwrap_or_default();
                stack.push(name.to_string());
            }
        }
        assert!(stack.is_empty(), "unclosed tags: {stack:?}");
        for label in labels {
            assert!(
                svg.contains(&format!(">{label}<")) || svg.contains(&format!(">\n{label}\n<")),
                "label {label:?} appears as text"
            );
        }
    }

    /// Number of `<polyline>` elements stroked in `color` (series lines and their legend
    /// marks; grid lines are grey).
    pub(crate) fn polylines(svg: &str, color: RGBColor) -> usize {
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        svg.split("<polyline")
            .skip(1)
            .filter(|p| p.split('>').next().unwrap_or_default().contains(&stroke))
            .count()
    }

    /// Number of occurrences of `needle` in `svg`.
    pub(crate) fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn ranges_never_collapse() {
        assert_eq!(padded(0.0, 10.0, 0.1), -1.0..11.0);
        assert_eq!(padded(5.0, 5.0, 0.1), 4.5..5.5);
        assert_eq!(padded(0.0, 0.0, 0.1), -1.0..1.0);
    }

    #[test]
    fn one_scale_per_axis() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        let s = AxisScale::new(Unit::BytesPerSecond, &(0.9 * gib..1.3 * gib));
        let ticks = (s.tick(s.to_axis(0.95 * gib)), s.tick(s.to_axis(1.2 * gib)));
        assert_eq!(ticks, ("0.95".into(), "1.20".into()));
        assert_eq!(s.label("Blake2256"), "Blake2256 (GiB/s)");
        let s = AxisScale::new(Unit::Seconds, &(0.0..0.045));
        assert_eq!(s.axis_range(&(0.0..0.045)), 0.0..45.0);
        assert_eq!(
            (s.tick(15.0), s.label("latency")),
            ("15".into(), "latency (ms)".into())
        );
        let s = AxisScale::new(Unit::Percent, &(-5.0..105.0));
        assert_eq!((s.tick(-1e-15), s.tick(60.0)), ("0".into(), "60".into()));
        let s = AxisScale::new(Unit::Count, &(0.0..0.0));
        assert_eq!(
            (s.tick(3.0), s.label("n")),
            ("3.00".into(), "n (count)".into())
        );
    }
}
