//! The frame every plot is drawn in: caption, numeric axes with their grid, and legend.
//!
//! Plots differ in what they draw inside the frame, not in the frame itself, so the house
//! look (fonts, grid colours, legend box, line width) is set here once.

use super::{msg, AxisScale, Chart};
use crate::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

/// Font of titles.
const TITLE_FONT: (&str, u32) = ("sans-serif", 26);
/// Font of axis descriptions.
const LABEL_FONT: (&str, u32) = ("sans-serif", 19);
/// Font of tick labels, legends and text next to marks.
const TICK_FONT: (&str, u32) = ("sans-serif", 17);
/// Major grid lines.
const GRID_BOLD: RGBColor = RGBColor(215, 219, 224);
/// Minor grid lines.
const GRID_LIGHT: RGBColor = RGBColor(242, 244, 246);
/// Height of the area under the x axis for its ticks and description.
const X_LABEL_AREA: u32 = 50;

/// One axis of a chart: its range in axis units, about how many ticks it has, how they
/// read, and what the axis shows.
pub(crate) struct Axis<'s> {
    range: Range<f64>,
    ticks: usize,
    tick_label: Box<dyn Fn(&f64) -> String + 's>,
    desc: Option<String>,
}

impl<'s> Axis<'s> {
    /// An axis over `range` with about `ticks` ticks, labelled by `tick_label` and
    /// described by `desc`.
    pub(crate) fn new(
        range: Range<f64>,
        ticks: usize,
        tick_label: impl Fn(&f64) -> String + 's,
        desc: impl Into<String>,
    ) -> Self {
        Axis {
            range,
            ticks,
            tick_label: Box::new(tick_label),
            desc: Some(desc.into()),
        }
    }

    /// An axis over `range` (in base units) that shows it in the unit of `scale`, with
    /// about `ticks` ticks, described by `desc`.
    pub(crate) fn scaled(
        scale: &'s AxisScale,
        range: &Range<f64>,
        ticks: usize,
        desc: impl Into<String>,
    ) -> Self {
        Axis::new(scale.axis_range(range), ticks, |v| scale.tick(*v), desc)
    }

    /// An axis with no ticks, grid lines or description, for a plot that labels the
    /// positions along it itself (the subjects of a box plot).
    pub(crate) fn unmarked(range: Range<f64>) -> Self {
        Axis {
            range,
            ticks: 0,
            tick_label: Box::new(|_| String::new()),
            desc: None,
        }
    }
}

/// Builds a chart on `root` with `title` above it, and draws its axes and grid. The area
/// left of the y axis is `y_label_width` wide: tick labels of some plots are wider than
/// others.
pub(crate) fn chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    y_label_width: u32,
    x: Axis<'_>,
    y: Axis<'_>,
) -> Result<Chart<'a, 'b>, ReportError> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, TITLE_FONT)
        .margin(15)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(y_label_width)
        .build_cartesian_2d(x.range, y.range)
        .map_err(msg)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(x.ticks)
        .y_labels(y.ticks)
        .x_label_formatter(&*x.tick_label)
        .y_label_formatter(&*y.tick_label)
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .axis_desc_style(LABEL_FONT)
        .label_style(TICK_FONT);
    if let Some(desc) = x.desc {
        mesh.x_desc(desc);
    }
    if let Some(desc) = y.desc {
        mesh.y_desc(desc);
    }
    // An axis without ticks has no grid lines across it either.
    if x.ticks == 0 {
        mesh.disable_x_mesh();
    }
    if y.ticks == 0 {
        mesh.disable_y_mesh();
    }
    mesh.draw().map_err(msg)?;
    Ok(chart)
}

/// Draws a line through `points` (in axis units) in `color`, and gives it an entry
/// `label` in the legend, marked by a short stretch of the same line.
pub(crate) fn draw_line(
    chart: &mut Chart<'_, '_>,
    points: impl IntoIterator<Item = (f64, f64)>,
    color: RGBColor,
    label: impl Into<String>,
) -> Result<(), ReportError> {
    let style = color.stroke_width(2);
    chart
        .draw_series(LineSeries::new(points, style))
        .map_err(msg)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    Ok(())
}

/// Draws `points` as a dashed line: the palette's second round of colours, told from
/// the first by the dashes (no legend entry: its page draws the legend).
pub(crate) fn draw_dashed_line(
    chart: &mut Chart<'_, '_>,
    points: impl IntoIterator<Item = (f64, f64)>,
    color: RGBColor,
) -> Result<(), ReportError> {
    let style = color.stroke_width(2);
    let points: Vec<(f64, f64)> = points.into_iter().collect();
    chart
        .draw_series(DashedLineSeries::new(points, 6, 4, style))
        .map_err(msg)?;
    Ok(())
}

/// Draws the legend of the lines drawn with [`draw_line`], in a box at `position`.
pub(crate) fn draw_legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    position: SeriesLabelPosition,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(TICK_FONT)
        .position(position)
        .draw()
        .map_err(msg)
}

/// The style of text a plot writes next to its marks: the tick font, anchored at
/// `(h, v)` of the text.
pub(crate) fn mark_text(h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from(TICK_FONT.into_font()).pos(Pos::new(h, v))
}
