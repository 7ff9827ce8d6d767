//! JSON lines other processes write: a node's event log as the cluster report reads it,
//! and a node's or load generator's observation lines as `dyno compare` reads them.
//! Nothing may panic: a bad line is an error naming its number.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = dyno_cluster::events::parse_log(Path::new("n0.jsonl"), &text) {
        assert!(e.to_string().contains("n0.jsonl"), "{e}");
    }
    let _ = dyno_compare::jsonl::parse(&text);
});
