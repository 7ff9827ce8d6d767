//! `[extract]` rules (regexes and a time format a user writes for a node that does not
//! log dyno's events) applied to that node's log lines. The input's first line is the
//! time format, the second the `adopted` rule, the rest the log. Nothing may panic: a bad
//! rule or line is an error.
#![no_main]

use std::path::Path;

use dyno_cluster::extract::{Extractors, RuleEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let (Some(format), Some(rule)) = (lines.next(), lines.next()) else {
        return;
    };
    let log = lines.next().unwrap_or("");
    let format = (!format.is_empty()).then_some(format);
    let Ok(x) = Extractors::new(&[(RuleEvent::Adopted, rule)], format) else {
        return;
    };
    let _ = x.parse_log(Path::new("n0.out"), "n0", log);
    for line in log.lines().take(64) {
        let _ = x.line("n0", line, Some(1));
    }
});
