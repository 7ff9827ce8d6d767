//! Reading what other programs write, within bounds: a line cap for every reader of a
//! child's output or a log file, and a body cap for every answer read whole.
//!
//! A program that writes without newlines (`cat /dev/zero`) would otherwise make one
//! line of everything it writes, and dyno would hold it all. [`BoundedLines`] keeps the
//! first [`MAX_LINE_BYTES`] of a line, drops the rest up to the next newline and counts
//! what it dropped ([`Dropped`]), so the caller can say so and go on. The sizes are far
//! above anything a real node writes: a node's log line is a few hundred bytes, a metrics
//! page of a big node a few MB.

use std::io::{BufRead, ErrorKind};

/// The longest line kept (64 KiB); the rest of a longer line is dropped and counted.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The largest answer or file window read whole (a metrics page, a load's or a node's
/// JSON lines over one measured window): 64 MiB.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// What a bounded reader dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Lines that were longer than the cap and cut.
    pub cut_lines: u64,
    /// Bytes dropped from those lines.
    pub bytes: u64,
}

impl Dropped {
    /// Nothing dropped.
    pub fn is_empty(&self) -> bool {
        self.cut_lines == 0 && self.bytes == 0
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Dropped) {
        self.cut_lines += other.cut_lines;
        self.bytes += other.bytes;
    }

    /// "3 lines over 64 KiB cut, 1.2 GB dropped", for a note; `None` when nothing was.
    pub fn describe(&self) -> Option<String> {
        (!self.is_empty()).then(|| {
            format!(
                "{} line{} over {} KiB cut, {} dropped",
                self.cut_lines,
                if self.cut_lines == 1 { "" } else { "s" },
                MAX_LINE_BYTES / 1024,
                bytes(self.bytes)
            )
        })
    }
}

/// Bytes for a message: `812 bytes`, `3.1 MB`, `2.5 GB` (decimal units).
pub fn bytes(n: u64) -> String {
    match n {
        0..=9_999 => format!("{n} bytes"),
        10_000..=999_999 => format!("{:.1} kB", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

/// Lines of a reader, each cut at a cap (see the module documentation).
#[derive(Debug)]
pub struct BoundedLines<R> {
    reader: R,
    max: usize,
    dropped: Dropped,
}

impl<R: BufRead> BoundedLines<R> {
    /// Lines of `reader` cut at [`MAX_LINE_BYTES`].
    pub fn new(reader: R) -> Self {
        Self::with_cap(reader, MAX_LINE_BYTES)
    }

    /// Lines of `reader` cut at `max` bytes.
    pub fn with_cap(reader: R, max: usize) -> Self {
        BoundedLines {
            reader,
            max,
            dropped: Dropped::default(),
        }
    }

    /// Reads the next line into `line` (cleared first; without its `\n` or `\r\n`):
    /// `Ok(true)` when there was one, `Ok(false)` at end of input. A line over the cap
    /// keeps its first bytes; the rest is read, dropped and counted.
    pub fn next_line(&mut self, line: &mut Vec<u8>) -> std::io::Result<bool> {
        line.clear();
        let mut any = false;
        let mut over = 0u64;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            let room = self.max.saturating_sub(line.len());
            let kept = room.min(chunk.len());
            line.extend_from_slice(&chunk[..kept]);
            over += (chunk.len() - kept) as u64;
            let used = chunk.len() + usize::from(newline.is_some());
            self.reader.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if line.last() == Some(&b'\r') && over == 0 {
            line.pop();
        }
        if over > 0 {
            self.dropped.cut_lines += 1;
            self.dropped.bytes += over;
        }
        Ok(any)
    }

    /// What was dropped so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }
}

/// Lines of a stream that arrives in pieces (a log file read as it grows): each complete
/// line is handed on; a line over the cap is skipped whole and counted (a cut line would
/// be misread), and the start of a line still being written waits, within the cap, for
/// its end.
#[derive(Debug)]
pub struct LineSplitter {
    partial: Vec<u8>,
    max: usize,
    /// The line being read is over the cap: the rest of it is dropped.
    cutting: bool,
    dropped: Dropped,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::with_cap(MAX_LINE_BYTES)
    }
}

impl LineSplitter {
    /// A splitter skipping lines over `max` bytes.
    pub fn with_cap(max: usize) -> Self {
        LineSplitter {
            partial: Vec::new(),
            max,
            cutting: false,
            dropped: Dropped::default(),
        }
    }

    /// Hands every line `bytes` completes to `line` (without its newline); stops at the
    /// first error `line` returns.
    pub fn push<E>(
        &mut self,
        mut bytes: &[u8],
        mut line: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let piece = &bytes[..newline.unwrap_or(bytes.len())];
            if !self.cutting && self.partial.len() + piece.len() > self.max {
                self.cutting = true;
                self.dropped.cut_lines += 1;
                self.dropped.bytes += self.partial.len() as u64;
                self.partial.clear();
            }
            if self.cutting {
                self.dropped.bytes += piece.len() as u64;
            } else {
                self.partial.extend_from_slice(piece);
            }
            let Some(at) = newline else { break };
            bytes = &bytes[at + 1..];
            let cut = std::mem::take(&mut self.cutting);
            let whole = std::mem::take(&mut self.partial);
            if !cut {
                line(&whole)?;
            }
        }
        Ok(())
    }

    /// Hands on the last line, when the stream ended without a newline.
    pub fn finish<E>(&mut self, line: impl FnOnce(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let whole = std::mem::take(&mut self.partial);
        if std::mem::take(&mut self.cutting) || whole.is_empty() {
            return Ok(());
        }
        line(&whole)
    }

    /// What was skipped so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }
}

/// The lines of `text` no longer than [`MAX_LINE_BYTES`], with what the longer ones were
/// (skipped whole: a cut JSON or sample line would not parse anyway).
pub fn short_lines(text: &str) -> (impl Iterator<Item = (usize, &str)>, Dropped) {
    let mut dropped = Dropped::default();
    for line in text.lines().filter(|l| l.len() > MAX_LINE_BYTES) {
        dropped.cut_lines += 1;
        dropped.bytes += line.len() as u64;
    }
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.len() <= MAX_LINE_BYTES);
    (lines, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn all(input: &[u8], cap: usize) -> (Vec<String>, Dropped) {
        // A tiny buffer, so lines span many fills.
        let mut r = BoundedLines::with_cap(BufReader::with_capacity(3, input), cap);
        let mut out = Vec::new();
        let mut line = Vec::new();
        while r.next_line(&mut line).unwrap() {
            out.push(String::from_utf8_lossy(&line).into_owned());
        }
        (out, r.dropped())
    }

    #[test]
    fn lines_over_the_cap_keep_their_start_and_count_the_rest() {
        let (lines, dropped) = all(b"short\r\n0123456789abc\nend", 8);
        assert_eq!(lines, ["short", "01234567", "end"]);
        assert_eq!(
            dropped,
            Dropped {
                cut_lines: 1,
                bytes: 5
            }
        );
        let (lines, dropped) = all(b"", 8);
        assert!(lines.is_empty() && dropped.is_empty());
        // A last line without a newline is a line; an empty line is one too.
        assert_eq!(all(b"\n\nx", 8).0, ["", "", "x"]);
    }

    #[test]
    fn output_without_newlines_is_held_to_the_cap() {
        let zeros = vec![0u8; 1 << 20];
        let (lines, dropped) = all(&zeros, MAX_LINE_BYTES);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), MAX_LINE_BYTES);
        assert_eq!(dropped.bytes, (1 << 20) - MAX_LINE_BYTES as u64);
        assert_eq!(
            dropped.describe().unwrap(),
            "1 line over 64 KiB cut, 983.0 kB dropped"
        );
    }

    #[test]
    fn a_splitter_joins_pieces_and_skips_lines_over_the_cap() {
        let mut s = LineSplitter::with_cap(4);
        let mut got = Vec::new();
        let mut take = |l: &[u8]| -> Result<(), ()> {
            got.push(String::from_utf8_lossy(l).into_owned());
            Ok(())
        };
        for piece in [&b"ab"[..], b"c\nlonger", b" still\nok\n", b"", b"tail"] {
            s.push(piece, &mut take).unwrap();
        }
        s.finish(&mut take).unwrap();
        assert_eq!(got, ["abc", "ok", "tail"]);
        assert_eq!(
            s.dropped(),
            Dropped {
                cut_lines: 1,
                bytes: 12
            }
        );
        // An error from the callback stops the pushing.
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"a\nb\n", |_| Err(7)), Err(7));
    }

    #[test]
    fn short_lines_skip_and_count_the_long_ones() {
        let long = "y".repeat(MAX_LINE_BYTES + 1);
        let text = format!("a\n{long}\nb\n");
        let (lines, dropped) = short_lines(&text);
        assert_eq!(lines.collect::<Vec<_>>(), [(0, "a"), (2, "b")]);
        assert_eq!(dropped.bytes, MAX_LINE_BYTES as u64 + 1);
    }
}
