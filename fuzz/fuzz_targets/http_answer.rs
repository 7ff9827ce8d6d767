//! An HTTP answer as dyno-proc's client reads it from an endpoint under test (metrics
//! scrapes, readiness probes): a status line, headers, a body. Nothing may panic; a
//! status it reads is the second word of the first line; the status line it reports
//! is short (it goes into messages).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(answer) = dyno_proc::http::parse_answer(data) else {
        return;
    };
    assert!(answer.status_line.chars().count() <= 200);
    let second = answer.status_line.split_whitespace().nth(1);
    assert_eq!(second.and_then(|c| c.parse::<u16>().ok()), Some(answer.status));
});
