//! A tune study as `dyno tune run STUDY` reads it: project, matrix, baselines, benchmarks
//! with their extractors, run settings. Nothing may panic, and what parses keeps its
//! counts within their flags' bounds (`--jobs`, `--max-rounds`) and expands to variants.
#![no_main]

use std::path::Path;

use dyno_tune::{expand, Study, MAX_JOBS, MAX_ROUNDS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(study) = Study::parse(Path::new("/fuzz/study.toml"), text) else {
        return;
    };
    assert!((1..=MAX_JOBS as usize).contains(&study.run.jobs));
    assert!((1..=MAX_ROUNDS).contains(&study.run.max_rounds));
    assert!(study.run.min_rounds <= study.run.max_rounds);
    // Small matrices only: the expansion is the product of the dimensions.
    let m = &study.matrix;
    let size = [
        m.toolchain.len(),
        m.target_cpu.len(),
        m.opt_level.len(),
        m.lto.len(),
        m.codegen_units.len(),
        m.panic.len(),
        m.rustflags.len(),
        m.pgo.len(),
    ]
    .iter()
    .try_fold(1usize, |a, &n| a.checked_mul(n.max(1)));
    if size.is_some_and(|n| n <= 4096) {
        let _ = expand(m, &study.exclude, &study.project.profile);
    }
});
