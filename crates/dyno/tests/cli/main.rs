//! The `dyno` binary as users meet it, one test binary for every command (each test
//! binary links the whole workspace, which on two cores costs more than most tests run).
//! One module per command or concern; `harness` is what they share. Tests are threads of
//! this one process: a test that loads the machine for seconds takes a slot of
//! [`harness::heavy`] (two at most run at once) or runs [`harness::alone`] among them,
//! while light tests run beside them.
//!
//! `cargo test -p dyno --test cli compare::` runs one module's tests.

mod harness;

mod bisect;
mod cluster;
mod cluster_byzantine;
mod cluster_faults;
mod compare;
mod compare_cluster;
mod compare_side_by_side;
mod config_errors;
mod docs;
mod fleet;
mod flood;
mod grafana;
mod hostile;
mod lockouts;
mod machine;
mod machine_run;
mod node;
mod output;
mod outputs;
mod pipeline;
mod pipeline_bench;
mod prometheus;
mod runtime;
mod serve;
mod serve_browser;
mod serve_pages;
mod stdout;
mod trend;
mod tune;
