//! A comparison file as `dyno compare` reads it: settings, subjects, workloads, metric
//! families. Nothing may panic: bad input is an error naming file, line and key.
#![no_main]

use std::path::Path;

use dyno_compare::ComparisonFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ComparisonFile::parse(text, Path::new("/fuzz/compare.toml"));
});
