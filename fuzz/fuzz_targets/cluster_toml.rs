//! A cluster file as `dyno cluster check` and `run` read it: topology, regions, ports,
//! the fault schedule, `[extract]` rules. Nothing may panic; a file that parses gives a
//! connected topology over its nodes.
#![no_main]

use std::path::Path;

use dyno_cluster::ClusterSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = ClusterSpec::parse(Path::new("/fuzz/cluster.toml"), text) else {
        return;
    };
    assert!(!spec.nodes.is_empty());
    for f in &spec.faults {
        let _ = f.describe(&spec);
    }
});
