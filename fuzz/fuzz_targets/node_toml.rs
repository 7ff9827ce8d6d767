//! A node config as `dyno node run` reads it: parse (keys, peer addresses), then the
//! checks against a genesis (validators, latencies, bandwidths), then the link shapes
//! the node would build from it. Nothing may panic.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use dyno_node::config::NodeConfig;
use dyno_node::genesis::{Genesis, GenesisFile, Validator};
use libfuzzer_sys::fuzz_target;

fn genesis() -> &'static Genesis {
    static G: OnceLock<Genesis> = OnceLock::new();
    G.get_or_init(|| {
        GenesisFile {
            network: "fuzz".into(),
            seed: 1,
            accounts: 4,
            balance: 1,
            slot_ms: 400,
            genesis_time_ms: 0,
            max_block_txs: 100,
            validators: ["n1", "n2", "n3"]
                .iter()
                .map(|id| Validator { id: id.to_string(), stake: 1 })
                .collect(),
        }
        .load()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(loaded) = NodeConfig::parse(Path::new("/fuzz/n1.toml"), text.to_string()) else {
        return;
    };
    let g = genesis();
    if loaded.check(g).is_ok() {
        assert!(loaded.block_limit(g) <= g.file.max_block_txs as usize);
        for p in &loaded.config.peers {
            let _ = std::time::Duration::from_secs_f64(p.latency_ms / 1e3);
        }
    }
});
