//! Prometheus / OpenMetrics text as dyno reads endpoints other people write: dyno-obs's
//! reader (the node's own metrics, tests, `dyno serve`) and `dyno compare`'s scraper of a
//! node under test. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = dyno_obs::read::parse_exposition(&text);
    let all = dyno_compare::prometheus::parse_text(&text, &[]);
    for s in &all {
        assert!(!s.series.is_empty());
    }
});
