//! `dyno pipeline monitor`: attaches read-only to a pipeline's workspace and shows the
//! tile pane and the link pane, live (a TUI refreshed a few times a second) or once.
//!
//! The panes (counters with their change since the previous refresh, time shares over
//! that interval) are dyno-pipeline's ([`dyno_pipeline::monitor::panes`]); this module
//! attaches, and draws them live or prints them once.

use clap::{Args, ValueEnum};
use dyno_pipeline::monitor::panes;
use dyno_report::TableFormat;
use dyno_tango::Snapshot;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `dyno pipeline monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Workspace name (the layout's `workspace.name`).
    #[arg(long, default_value = "dyno", conflicts_with = "config")]
    name: String,
    /// Read the workspace name and directory from this file instead (a `pipeline run`
    /// layout or a `pipeline bench` config).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory holding the workspace (default /dev/shm).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print one snapshot (changes over one refresh interval) and exit.
    #[arg(long)]
    once: bool,
    /// Output format of --once.
    #[arg(long, value_enum, default_value = "table")]
    format: MonitorFormat,
    /// Refresh interval in milliseconds.
    #[arg(long, default_value = "500", value_parser = clap::value_parser!(u64).range(50..=60_000))]
    interval_ms: u64,
    /// Give up after waiting this many seconds for the pipeline to start (0 = wait forever).
    #[arg(long, default_value = "0")]
    wait: u64,
}

/// Formats of `--once`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MonitorFormat {
    /// Two tables.
    Table,
    /// The snapshot and its change as JSON.
    Json,
}

/// Runs the monitor.
pub fn run(a: MonitorArgs) -> anyhow::Result<ExitCode> {
    let path = match &a.config {
        Some(file) => dyno_pipeline::monitor::workspace_of(file)?,
        None => dyno_tango::workspace::workspace_path(&a.name, a.dir.as_deref()),
    };
    let ws = dyno_pipeline::monitor::attach(&path, a.wait, || {
        errln!(
            "waiting for a pipeline at {} (Ctrl-C to give up)",
            path.display()
        );
    })?;
    let interval = Duration::from_millis(a.interval_ms);
    if a.once || !std::io::stdout().is_terminal() {
        let prev = Snapshot::read(&ws);
        std::thread::sleep(interval);
        let cur = Snapshot::read(&ws);
        let delta = cur.delta(&prev);
        match a.format {
            MonitorFormat::Json => {
                let v = serde_json::json!({ "snapshot": cur, "delta": delta, "alive": cur.creator_alive });
                outln!("{}", serde_json::to_string_pretty(&v)?)?;
            }
            MonitorFormat::Table => {
                let color = crate::term::color_stdout();
                let (tiles, links) = panes(&cur, &delta);
                out!("{}", TableFormat::Terminal { color }.render(&tiles))?;
                out!("{}", TableFormat::Terminal { color }.render(&links))?;
            }
        }
        if killed(&ws, &cur) {
            // Its numbers are what a killed run left, not a pipeline at work.
            errln!("error: {}", dead_pipeline(&cur));
            return Ok(ExitCode::from(3));
        }
        return Ok(ExitCode::SUCCESS);
    }
    tui::run(&ws, interval)
}

/// Whether the workspace was left by a run killed outright: still marked ready (a clean
/// stop closes it) while its creator is gone.
fn killed(ws: &dyno_tango::Workspace, cur: &Snapshot) -> bool {
    !cur.creator_alive && ws.is_ready()
}

/// What a workspace whose creator is gone is: a killed or crashed run's.
fn dead_pipeline(cur: &Snapshot) -> String {
    format!(
        "the pipeline that made {} (pid {}) is gone, killed or crashed without closing it: its tiles are not running; the next `dyno pipeline run` removes the file",
        cur.workspace, cur.pid
    )
}

mod tui {
    //! The live view: ratatui over crossterm, `q`, Esc or Ctrl-C quits.

    use super::{dead_pipeline, killed, panes};
    use crossterm::event::{self, Event, KeyCode, KeyModifiers};
    use crossterm::terminal::{
        disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
    };
    use crossterm::ExecutableCommand;
    use dyno_report::{Status, Table};
    use dyno_tango::{Snapshot, Workspace};
    use ratatui::layout::{Constraint, Layout};
    use ratatui::style::{Color, Modifier, Style};
    use ratatui::text::Line;
    use ratatui::widgets::{Block, Borders, Cell, Row, Table as TuiTable};
    use std::process::ExitCode;
    use std::time::{Duration, Instant};

    /// Restores the terminal however the monitor ends.
    struct Screen;
    impl Drop for Screen {
        fn drop(&mut self) {
            let _ = disable_raw_mode();
            let _ = std::io::stdout().execute(LeaveAlternateScreen);
        }
    }

    fn widget(t: &Table) -> TuiTable<'static> {
        let header = Row::new(t.columns.iter().map(|c| c.header.clone()))
            .style(Style::default().add_modifier(Modifier::BOLD));
        let rows = t.rows.iter().map(|r| {
            Row::new(r.iter().map(|c| {
                let style = match c.status {
                    // NO_COLOR and --color never keep the live view monochrome too.
                    _ if !crate::term::color_stdout() => Style::default(),
                    Some(Status::Bad) => Style::default().fg(Color::Red),
                    Some(Status::Warn) => Style::default().fg(Color::Yellow),
                    Some(Status::Good) => Style::default().fg(Color::Green),
                    _ => Style::default(),
                };
                Cell::from(c.text.clone()).style(style)
            }))
        });
        let widths: Vec<Constraint> = t
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let widest = t
                    .rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.text.chars().count());
                Constraint::Length(widest.chain([c.header.len()]).max().unwrap_or(4) as u16)
            })
            .collect();
        TuiTable::new(rows, widths).header(header).block(
            Block::default()
                .borders(Borders::ALL)
                .title(t.title.clone()),
        )
    }

    pub fn run(ws: &Workspace, interval: Duration) -> anyhow::Result<ExitCode> {
        enable_raw_mode()?;
        std::io::stdout().execute(EnterAlternateScreen)?;
        let _screen = Screen;
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
        let mut prev = Snapshot::read(ws);
        let mut last = Instant::now();
        let mut frame = (Table::new("tiles"), Table::new("links"), String::new());
        let mut exited = false;
        let mut dead = false;
        loop {
            if !exited && last.elapsed() >= interval {
                let cur = Snapshot::read(ws);
                let delta = cur.delta(&prev);
                let (t, l) = panes(&cur, &delta);
                exited = !cur.creator_alive;
                dead = killed(ws, &cur);
                let status = if dead {
                    format!("{}; showing its last numbers. q quits", dead_pipeline(&cur))
                } else if exited {
                    format!(
                        "pipeline (pid {}) has stopped; showing its last numbers. q quits",
                        cur.pid
                    )
                } else {
                    format!(
                        "{}  pid {}  refresh {} ms  q quits",
                        cur.workspace,
                        cur.pid,
                        interval.as_millis()
                    )
                };
                frame = (t, l, status);
                prev = cur;
                last = Instant::now();
            }
            terminal.draw(|f| {
                let areas = Layout::vertical([
                    Constraint::Length(1),
                    Constraint::Length(frame.0.rows.len() as u16 + 3),
                    Constraint::Min(3),
                ])
                .split(f.area());
                f.render_widget(Line::from(frame.2.clone()), areas[0]);
                f.render_widget(widget(&frame.0), areas[1]);
                f.render_widget(widget(&frame.1), areas[2]);
            })?;
            if event::poll(Duration::from_millis(50))? {
                if let Event::Key(k) = event::read()? {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                        return Ok(if dead {
                            ExitCode::from(3)
                        } else {
                            ExitCode::SUCCESS
                        });
                    }
                }
            }
        }
    }
}
