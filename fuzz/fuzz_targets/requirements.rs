//! A requirements file as `dyno machine --requirements FILE` reads it: dyno's TOML format
//! (the first byte odd) or Substrate's `reference_hardware.json` (even). Nothing may panic,
//! and what parses asks for no more threads than `--parallel-cores` may (the bound that
//! stops `num_cores = 1e9` from starting a billion threads) and only positive minimums.
#![no_main]

use dyno_hw::requirements::MAX_PARALLEL_CORES;
use dyno_hw::RequirementSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&format, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let parsed = if format % 2 == 1 {
        RequirementSet::from_dyno_toml(text, "/fuzz/requirements.toml")
    } else {
        RequirementSet::from_substrate_json(text, "/fuzz/reference_hardware.json")
    };
    let Ok(set) = parsed else { return };
    assert!((1..=MAX_PARALLEL_CORES).contains(&set.parallel_cores()));
    for r in &set.requirements {
        assert!(r.num_cores.is_none_or(|n| (1..=MAX_PARALLEL_CORES).contains(&n)));
        assert!(r.minimum.is_finite() && r.minimum > 0.0, "{r:?}");
    }
});
