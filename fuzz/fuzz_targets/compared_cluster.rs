//! The compared-cluster file a child `dyno cluster run --compared FILE` leaves for the
//! `dyno compare` that started it (`dyno.cluster.compared/1`), as the comparison reads it
//! back. Nothing may panic; what parses writes back to JSON that parses to the same run;
//! recording it into an execution never panics.
#![no_main]

use dyno_exec::{ComparedRun, Execution, COMPARED_SCHEMA};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(run) = ComparedRun::parse(text) else {
        return;
    };
    assert_eq!(run.schema, COMPARED_SCHEMA);
    let again = ComparedRun::parse(&run.to_json()).expect("what dyno wrote, it reads");
    assert_eq!(again, run);
    let mut exec = Execution::starting("s", "w", 1, vec!["cluster".into()]);
    let stopped = data.len() % 2 == 0;
    run.record(&mut exec, stopped);
});
