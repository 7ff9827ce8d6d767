//! Colour on the terminal: `--color auto|always|never` (every command), NO_COLOR
//! (<https://no-color.org>: set and non-empty = no colour unless `--color always`), and
//! in `auto`, colour only where the stream is a terminal. And the one way a command checks
//! and writes a file a flag named, and says it wrote it.

use clap::ValueEnum;
use std::io::IsTerminal;
use std::sync::OnceLock;

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    /// Colour when the output is a terminal and NO_COLOR is not set.
    #[default]
    Auto,
    /// Always colour (even into a pipe, and despite NO_COLOR).
    Always,
    /// Never colour.
    Never,
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records the command line's choice (once, at start-up).
pub fn set_color_choice(c: ColorChoice) {
    let _ = CHOICE.set(c);
}

fn decide(choice: ColorChoice, no_color: Option<std::ffi::OsString>, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// Whether to colour what goes to standard output.
pub fn color_stdout() -> bool {
    decide(
        CHOICE.get().copied().unwrap_or_default(),
        std::env::var_os("NO_COLOR"),
        std::io::stdout().is_terminal(),
    )
}

/// The terminal's table format, coloured when standard output is (see [`color_stdout`]).
pub fn table_format() -> dyno_report::TableFormat {
    dyno_report::TableFormat::Terminal {
        color: color_stdout(),
    }
}

/// Writes `text` to `path` atomically (a failure names `flag` and the path), then says so
/// on stderr.
pub fn write_file(flag: &str, path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    dyno_report::write_atomic(path, text.as_bytes())
        .with_context(|| format!("{flag} {}", path.display()))?;
    errln!("wrote {}", path.display());
    Ok(())
}

/// Refuses, before any work, an output path `flag` names that cannot be written: a
/// directory, or a file in a directory that does not exist (exit 2, naming the flag).
pub fn check_output(flag: &str, path: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    match path {
        Some(p) => dyno_report::check_output(p).with_context(|| format!("{flag} {}", p.display())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_no_color_then_the_terminal() {
        let set = || Some("1".into());
        assert!(decide(ColorChoice::Always, set(), false));
        assert!(!decide(ColorChoice::Never, None, true));
        assert!(decide(ColorChoice::Auto, None, true));
        assert!(!decide(ColorChoice::Auto, set(), true));
        assert!(
            decide(ColorChoice::Auto, Some("".into()), true),
            "empty NO_COLOR is unset"
        );
        assert!(!decide(ColorChoice::Auto, None, false));
    }
}
