//! A genesis file as `dyno node run` reads it: parse and checks, then (for a small one)
//! the load every node does and its leader schedule. Nothing may panic: bad input is an
//! error naming the key.
#![no_main]

use std::path::Path;

use dyno_node::genesis::GenesisFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(g) = GenesisFile::parse(Path::new("genesis.toml"), text) else {
        return;
    };
    // What `dyno node genesis` writes of it reads back as the same file.
    let again = GenesisFile::parse(Path::new("genesis.toml"), &g.to_toml()).unwrap();
    assert_eq!(again.hash(), g.hash());
    // Deriving keys costs ~20 us an account: only small files are loaded here.
    if g.accounts <= 64 {
        let loaded = g.load();
        for slot in [0, 1, 2, u64::MAX / 2, u64::MAX] {
            assert!(loaded.validator(loaded.leader(slot)).is_some());
            let _ = loaded.slot_start_ns(slot);
        }
        let _ = loaded.slot_at(u64::MAX);
    }
});
