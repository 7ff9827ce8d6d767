//! The request head a node's metrics endpoint reads from anyone who connects: its first
//! line, `GET /path HTTP/1.x`. Nothing may panic, and a path it accepts is one the routes
//! can take: it starts with `/` and holds no space or line break.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(path) = dyno_obs::endpoint::request_path(data) else {
        return;
    };
    assert!(path.starts_with('/'), "{path:?}");
    assert!(!path.contains([' ', '\n']), "{path:?}");
    assert!(path.len() < data.len());
});
