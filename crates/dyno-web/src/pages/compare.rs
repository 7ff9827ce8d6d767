//! Comparisons: every `dyno compare` comparison in the store (its runs share a
//! comparison id in their settings), each with what it found and a link to its page.
//!
//! The verdicts are dyno-judge's, as `dyno compare report` judges them.

use super::comparison::outcome_cell;
use super::stored::comparisons;
use crate::markup::{answer_list, esc, link, page, when, HtmlTable};
use crate::state::PageError;
use dyno_store::Store;

/// The comparison list.
pub(crate) fn render(store: &Store) -> Result<String, PageError> {
    let comparisons = comparisons(store)?;
    let mut table = HtmlTable::new(
        "comparisons",
        &[
            ("Comparison", false),
            ("Outcome (primary metrics)", false),
            ("Subjects (baseline first)", false),
            ("Workloads", false),
            ("Executions", true),
            ("Started", false),
            ("Runs", false),
            ("File", false),
        ],
    )
    .secondary(&["Runs", "File"]);
    for c in &comparisons {
        let (first, last) = (c.first(), c.last());
        // A comparison that cannot be judged says why in its row; the list stays.
        let found = outcome_cell(store, c);
        table.row(vec![
            link(&c.href(), &c.id),
            found,
            esc(&c.subjects.join(", ")),
            esc(&c.workloads.join(", ")),
            format!("{} of {}", c.runs.len(), c.planned),
            when(c.started_at),
            format!(
                "{}..{}",
                link(&format!("/runs/{first}"), &first.to_string()),
                link(&format!("/runs/{last}"), &last.to_string())
            ),
            esc(&c.file),
        ]);
    }
    let body = if table.is_empty() {
        "<p class=\"note\">No comparison is stored: <code>dyno compare run FILE</code> makes \
         one.</p>\n"
            .to_string()
    } else {
        format!(
            "<p class=\"hint\">Each comparison is judged from its stored runs, as \
             <code>dyno compare report</code> judges it; the outcome counts its primary \
             metrics' verdicts.</p>\n{}",
            answer_list(&table.render())
        )
    };
    Ok(page("Comparisons", "/compare", &body))
}
