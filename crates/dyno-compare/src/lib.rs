//! `dyno compare`: is the new release faster or slower than the last one, under which
//! workload, and is the difference real?
//!
//! A comparison file ([`ComparisonFile`]) names two or more subjects (commands that start a
//! node; the first is the baseline) and fixed-rate workloads. The runner ([`run_rounds`])
//! runs every subject once per workload per round, in an order shuffled every round;
//! each execution starts the node fresh, waits the warm-up, samples the process from
//! /proc once a second ([`sampler`]) and scrapes the node's own Prometheus metrics, then
//! stops it (SIGINT, SIGKILL after a grace period). Executions go to the results store as
//! they end ([`record`]); the verdicts ([`judge`]) are computed from stored samples: per
//! metric, the median across rounds, the ratio to the baseline with a bootstrap interval,
//! Mann-Whitney with Holm across every metric, and a noise band.
//!
//! An execution, its series and the [`Executor`] trait are the execution contract in
//! dyno-exec (below compare and cluster; re-exported here). [`session`] runs a
//! comparison; [`judged`] judges one (just run, or stored) for the report.
//! [`SyntheticExecutor`] makes seeded noisy executions so the whole pipeline is tested
//! without processes:
//!
//! ```
//! use dyno_compare::{judge, run_rounds, ComparisonFile, SyntheticExecutor};
//! use dyno_stats::{ComparisonSettings, Verdict};
//! use std::sync::atomic::AtomicBool;
//!
//! let file = r#"
//! rounds = 10
//! [[subject]]
//! name = "v1"
//! command = ["sh", "-c", "exec sleep 60"]
//! [[subject]]
//! name = "v2"
//! command = ["sh", "-c", "exec sleep 60"]
//! [[workload]]
//! name = "value"
//! rate = 1000
//! measure_s = 10
//! "#;
//! let cfg = ComparisonFile::parse(file, "cmp.toml".as_ref()).unwrap();
//! let mut node = SyntheticExecutor::new(7);
//! node.slowdown.insert("v2".into(), 1.15); // 15% more CPU per transaction
//! let mut executions = Vec::new();
//! run_rounds(&cfg, &mut node, &AtomicBool::new(false), |_, _, e| {
//!     executions.push(e.clone());
//!     Ok::<_, ()>(())
//! })
//! .unwrap();
//! let settings = ComparisonSettings { resamples: 1000, ..ComparisonSettings::default() };
//! let j = judge(&executions, &["v1".into(), "v2".into()], &settings);
//! let cpu = j.verdicts.iter().find(|v| v.metric.name == "cpu_percent").unwrap();
//! assert_eq!(cpu.verdict(), Verdict::Regression);
//! ```
// The unsafe process calls live in dyno-proc.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cluster_run;
pub mod cluster_subject;
pub mod config;
pub mod declared;
pub mod diagnose;
pub mod execution;
pub mod executor;
pub mod family;
pub mod gitbuild;
pub mod jsonl;
pub mod judged;
pub mod load;
pub mod mock;
pub mod noise;
pub mod pinning;
pub mod power;
pub mod precision;
pub mod prometheus;
pub mod readiness;
pub mod record;
pub mod report;
pub mod runner;
pub mod sampler;
pub mod session;
pub mod spec;
pub mod summary;
pub mod trials;
pub mod verdict;
pub mod view;
pub mod work;

pub use cluster_subject::ClusterSubject;
pub use config::ConfigError;
pub use execution::{Execution, Outcome, Series, SeriesKind};
pub use executor::{Executor, ProcessExecutor};
pub use mock::SyntheticExecutor;
pub use runner::{run_rounds, schedule, Ending, Slot};
pub use spec::{ComparisonFile, OnFailure, SubjectSpec, WorkloadSpec};
pub use verdict::{judge, Judgement, MetricVerdict};
