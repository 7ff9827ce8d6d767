//! The table model shared by every table format, and the renderer trait.
//!
//! A command builds one [`Table`]; the binary picks a [`TableRenderer`] for the output
//! format (terminal, Markdown, CSV, HTML). Renderers return strings and never print.

mod csv;
mod html;
mod markdown;
mod terminal;

pub use self::csv::CsvTable;
pub use self::html::HtmlTable;
pub use self::markdown::MarkdownTable;
pub use self::terminal::TerminalTable;

use serde::{Deserialize, Serialize};

/// Horizontal alignment of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// Text: names, labels.
    #[default]
    Left,
    /// Numbers, so that digits line up.
    Right,
    /// Short markers (verdicts, check marks).
    Center,
}

/// What a cell says about its value; renderers that can show colour use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Better, passed, improved.
    Good,
    /// Worse, failed, regressed.
    Bad,
    /// Doubtful: noisy, close to a threshold, measured on a suspicious setup.
    Warn,
    /// Highlighted without a judgement (e.g. the baseline row).
    Emphasis,
}

impl Status {
    /// The CSS class the HTML renderer and the report stylesheet use.
    pub fn css_class(self) -> &'static str {
        match self {
            Status::Good => "good",
            Status::Bad => "bad",
            Status::Warn => "warn",
            Status::Emphasis => "emph",
        }
    }
}

/// One table cell: its text, already formatted for people, and an optional status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The text shown.
    pub text: String,
    /// What the value means, for colouring.
    pub status: Option<Status>,
}

impl Cell {
    /// A plain cell.
    pub fn new(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            status: None,
        }
    }

    /// Sets the status (builder style).
    pub fn with_status(mut self, status: Status) -> Self {
        self.status = Some(status);
        self
    }

    /// Marks the cell [`Status::Good`].
    pub fn good(self) -> Self {
        self.with_status(Status::Good)
    }

    /// Marks the cell [`Status::Bad`].
    pub fn bad(self) -> Self {
        self.with_status(Status::Bad)
    }

    /// Marks the cell [`Status::Warn`].
    pub fn warn(self) -> Self {
        self.with_status(Status::Warn)
    }

    /// Marks the cell [`Status::Emphasis`].
    pub fn emphasis(self) -> Self {
        self.with_status(Status::Emphasis)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Cell::new(text)
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell::new(text)
    }
}

/// A column: its header and alignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Header text.
    pub header: String,
    /// Alignment of the header and cells.
    pub align: Align,
}

/// A table of formatted cells, independent of the output format.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Table {
    /// Title shown above the table (as a caption in HTML; omitted in CSV). May be empty.
    pub title: String,
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows; a row shorter than `columns` is padded with empty cells when rendered,
    /// and cells beyond the last column are dropped.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with a title.
    pub fn new(title: impl Into<String>) -> Self {
        Table {
            title: title.into(),
            ..Table::default()
        }
    }

    /// Adds a column (builder style).
    pub fn column(mut self, header: impl Into<String>, align: Align) -> Self {
        self.columns.push(Column {
            header: header.into(),
            align,
        });
        self
    }

    /// Appends a row.
    pub fn push_row<C: Into<Cell>>(&mut self, row: impl IntoIterator<Item = C>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    /// Appends a row (builder style).
    pub fn row<C: Into<Cell>>(mut self, row: impl IntoIterator<Item = C>) -> Self {
        self.push_row(row);
        self
    }

    /// The rows cut or padded to exactly one cell per column: what every renderer draws.
    pub fn normalized_rows(&self) -> impl Iterator<Item = Vec<&Cell>> + '_ {
        static EMPTY: Cell = Cell {
            text: String::new(),
            status: None,
        };
        let width = self.columns.len();
        self.rows.iter().map(move |row| {
            (0..width)
                .map(|i| row.get(i).unwrap_or(&EMPTY))
                .collect::<Vec<_>>()
        })
    }
}

/// Renders a [`Table`] into one output format. Implementations return the complete text
/// and do no I/O.
pub trait TableRenderer {
    /// The rendered table.
    fn render(&self, table: &Table) -> String;

    /// The rendered table as bytes, for writing to a file or stdout.
    fn render_bytes(&self, table: &Table) -> Vec<u8> {
        self.render(table).into_bytes()
    }
}

/// The table formats a command can be asked for (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableFormat {
    /// Boxed terminal table; `color` turns on ANSI colours for statuses.
    Terminal {
        /// Whether to colour cells by status.
        color: bool,
    },
    /// GitHub-flavoured Markdown pipe table.
    Markdown,
    /// RFC 4180 CSV.
    Csv,
    /// An HTML `<table>` fragment.
    Html,
}

impl TableFormat {
    /// Renders `table` in this format.
    pub fn render(self, table: &Table) -> String {
        match self {
            TableFormat::Terminal { color } => TerminalTable { color }.render(table),
            TableFormat::Markdown => MarkdownTable.render(table),
            TableFormat::Csv => CsvTable.render(table),
            TableFormat::Html => HtmlTable.render(table),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The small table every renderer's snapshot test draws: alignments, a status per
    /// kind, a short row, and characters that each format must escape.
    pub(crate) fn sample() -> Table {
        Table::new("Blake2-256")
            .column("variant", Align::Left)
            .column("median", Align::Right)
            .column("verdict", Align::Center)
            .row([
                Cell::new("lto|fat"),
                Cell::new("1.20 GiB/s").good(),
                Cell::new("faster").good(),
            ])
            .row([
                Cell::new("o2, \"small\""),
                Cell::new("0.98 GiB/s").bad(),
                Cell::new("slower").bad(),
            ])
            .row([Cell::new("<official>").emphasis()])
    }

    #[test]
    fn rows_are_normalized_to_the_column_count() {
        let t = sample().row(["a", "b", "c", "d"]);
        let rows: Vec<_> = t.normalized_rows().collect();
        assert!(rows.iter().all(|r| r.len() == 3));
        assert_eq!(rows[2][1].text, "");
        assert_eq!(rows[3][2].text, "c");
    }

    #[test]
    fn formats_dispatch_to_their_renderer() {
        let t = sample();
        assert_eq!(TableFormat::Csv.render(&t), CsvTable.render(&t));
        assert_eq!(TableFormat::Markdown.render(&t), MarkdownTable.render(&t));
        assert_eq!(TableFormat::Html.render(&t), HtmlTable.render(&t));
        assert_eq!(
            TableFormat::Terminal { color: false }.render(&t),
            TerminalTable { color: false }.render(&t)
        );
    }
}
