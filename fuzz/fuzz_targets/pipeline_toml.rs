//! A pipeline bench config and a tile layout as `dyno pipeline` reads them. Nothing may
//! panic: bad input is an error naming line and key.
#![no_main]

use dyno_pipeline::config::BenchConfig;
use dyno_tango::config::LayoutConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = BenchConfig::from_toml(text, "bench.toml");
    let _ = LayoutConfig::from_toml(text, "layout.toml");
});
