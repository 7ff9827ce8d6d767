//! Standard output as docs/output.md promises it. Every table, document and line dyno
//! prints goes through [`out!`]/[`outln!`] or [`stdout`] (clippy's `print_stdout` lint
//! keeps `print!` out of the binary), so that:
//!
//! - a closed standard output (`dyno results list | head -1`) is not an error: dyno
//!   stops writing to it, finishes what it was doing and exits with the code it would
//!   have had; no message, no death by SIGPIPE (the Rust runtime ignores SIGPIPE, and
//!   dyno leaves it so: a process that owns children must not die between two writes);
//! - any other failure (`> /dev/full`) is an I/O error naming standard output, which
//!   the command returns: one line on stderr and exit 3 (a runtime failure).
//!
//! Standard error (progress, warnings, the final error) goes through [`errln!`] and
//! [`errout!`] (clippy's `print_stderr` lint keeps `eprintln!` out): a closed or failing
//! stderr is ignored, as there is nowhere left to say anything, and the command goes on
//! (`eprintln!` would panic there, in the middle of stopping a node).

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the reader of standard output has gone: later writes are dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints to standard output (as `print!` would); returns `std::io::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::print(format_args!($($arg)*))
    };
}

/// Prints a line to standard output (as `println!` would); returns `std::io::Result<()>`.
macro_rules! outln {
    () => {
        $crate::out::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints to standard error (as `eprint!` would), ignoring a closed or failing stderr.
macro_rules! errout {
    ($($arg:tt)*) => {
        $crate::out::print_err(format_args!($($arg)*))
    };
}

/// Prints a line to standard error (as `eprintln!` would), ignoring a closed or failing
/// stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::print_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes `args` to standard error, ignoring any failure.
pub fn print_err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Writes `args` to standard output and flushes it, so a failure is this call's.
pub fn print(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut out = stdout();
    out.write_fmt(args)?;
    out.flush()
}

/// Standard output as a writer, for commands that stream into it (an export, a
/// generated man page): its errors follow the rules of this module.
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

/// Locked standard output whose errors say so, and which swallows a closed pipe.
pub struct Stdout(std::io::StdoutLock<'static>);

impl Stdout {
    fn outcome<T>(&self, result: std::io::Result<T>, nothing: T) -> std::io::Result<T> {
        match result {
            Ok(v) => Ok(v),
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                CLOSED.store(true, Ordering::Relaxed);
                Ok(nothing)
            }
            Err(e) => Err(std::io::Error::new(
                e.kind(),
                format!("writing standard output: {e}"),
            )),
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if CLOSED.load(Ordering::Relaxed) {
            return Ok(buf.len());
        }
        let result = self.0.write(buf);
        self.outcome(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if CLOSED.load(Ordering::Relaxed) {
            return Ok(());
        }
        let result = self.0.flush();
        self.outcome(result, ())
    }
}
