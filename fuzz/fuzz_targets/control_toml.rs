//! A node's fault control file as the node re-reads it while it runs (what the cluster
//! launcher writes: link faults, clock skew, the test-only misbehaviour switch). A file
//! that parses gives faults the transport can apply without panicking.
#![no_main]

use std::path::Path;

use dyno_node::control::Control;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let peers = vec!["n1".to_string(), "n2".to_string()];
    let Ok(c) = Control::parse(Path::new("n0.control.toml"), text, &peers) else {
        return;
    };
    let _ = c.clock_skew_ns();
    for (_, fault) in c.faults(&peers) {
        let _ = fault.is_none();
    }
});
