//! Tables, SVG plots and self-contained HTML reports for dyno results.
//!
//! Every dyno command shows its results the same way, so the pieces live here:
//!
//! - [`Table`]: one table model (title, aligned columns, cells that may carry a
//!   [`Status`]) and one [`TableRenderer`] per output format: [`TerminalTable`]
//!   (comfy-table, UTF-8 borders, colour only when asked), [`MarkdownTable`] (GitHub pipe
//!   tables), [`CsvTable`] (RFC 4180) and [`HtmlTable`] (an HTML `<table>` fragment).
//! - [`plot`]: SVG plots drawn with plotters and returned as strings: box plots sorted by
//!   median ([`plot::BoxPlot`]), scatter plots with error boxes and a Pareto front
//!   ([`plot::ScatterPlot`]), empirical CDFs ([`plot::CdfPlot`]), time series
//!   ([`plot::TimeSeriesPlot`]) and a metric's history with its change points marked
//!   ([`plot::TrendPlot`]).
//! - [`HtmlReport`]: one self-contained HTML file (inline CSS, no scripts, no external
//!   fonts or URLs) holding run parameters, host facts, observations, tables and plots.
//!
//! Nothing here prints or touches files, except [`write_atomic`] and [`OutputFile`], which
//! write a finished report or export so that a reader never sees half of it, and never
//! replace a device, FIFO or symbolic link the path names (they are written through).
//!
//! ```
//! use dyno_model::{Direction, Metric, Unit};
//! use dyno_report::plot::BoxPlot;
//! use dyno_report::{Align, Cell, HtmlReport, Section, Table, TableRenderer, MarkdownTable};
//!
//! let mut table = Table::new("Blake2-256")
//!     .column("variant", Align::Left)
//!     .column("median", Align::Right);
//! table.push_row(vec![Cell::new("lto-fat"), Cell::new("1.20 GiB/s").good()]);
//! table.push_row(vec![Cell::new("official"), Cell::new("1.02 GiB/s")]);
//! assert!(MarkdownTable.render(&table).contains("| lto-fat | 1.20 GiB/s |"));
//!
//! let metric = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
//! let svg = BoxPlot::new("Blake2-256 throughput", metric)
//!     .subject("lto-fat", vec![1.2e9, 1.21e9, 1.19e9])
//!     .subject("official", vec![1.0e9, 1.02e9, 1.03e9])
//!     .baseline("official median", 1.02e9)
//!     .render_svg()
//!     .unwrap();
//! assert!(svg.starts_with("<svg"));
//!
//! let html = HtmlReport::new("dyno tune")
//!     .parameter("repetitions", "3")
//!     .section(Section::new("Throughput").table(table).plot("Blake2-256", svg))
//!     .render();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod escape;
mod format;
mod html;
pub mod plot;
mod table;
mod write;

pub use format::{format_p_clause, format_p_value, format_percent, format_when};
pub use html::{section_html, Block, HtmlReport, Section, Verdict};
pub use table::{
    Align, Cell, Column, CsvTable, HtmlTable, MarkdownTable, Status, Table, TableFormat,
    TableRenderer, TerminalTable,
};
pub use write::{check_output, write_atomic, OutputFile};

/// The stylesheet rules every HTML page of dyno starts with (colours, type, fact panels,
/// verdict badges, figures): the reports here and `dyno serve`'s pages add their own after
/// them, so the two read alike.
pub const BASE_STYLESHEET: &str = include_str!("style/base.css");

/// Escapes text for HTML element content and quoted attributes: the one escaping every
/// HTML dyno writes uses (the reports here, `dyno serve`'s pages).
pub fn escape_html(text: &str) -> String {
    escape::html(text)
}

/// What can go wrong while building a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A plot was asked for with nothing to draw.
    #[error("{plot}: nothing to plot ({what})")]
    EmptyInput {
        /// Which plot (its title).
        plot: String,
        /// What was empty.
        what: String,
    },
    /// A value was NaN or infinite; plotting it would hide the problem.
    #[error("{plot}: series `{series}` holds a non-finite value ({value})")]
    NonFinite {
        /// Which plot (its title).
        plot: String,
        /// Which series or subject.
        series: String,
        /// The offending value.
        value: f64,
    },
    /// An interval was given with its ends in the wrong order.
    #[error("{plot}: `{series}` has an interval whose low end {low} exceeds its high end {high}")]
    BadInterval {
        /// Which plot (its title).
        plot: String,
        /// Which subject.
        series: String,
        /// The low end.
        low: f64,
        /// The high end.
        high: f64,
    },
    /// plotters failed to draw.
    #[error("{plot}: drawing failed: {message}")]
    Draw {
        /// Which plot (its title).
        plot: String,
        /// plotters' message.
        message: String,
    },
    /// Writing a finished report failed.
    #[error("cannot write report to {path}: {source}")]
    Write {
        /// The destination.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
