//! `dyno compare`: is the new release faster or slower than the last one, under which
//! workload, and is the difference real? This crate measures; the judge (dyno-judge)
//! decides.
//!
//! A comparison file ([`ComparisonFile`], parsed and checked by [`config`]) names two or
//! more subjects (commands that start a node, git revisions to build, or clusters; the
//! first is the baseline) and fixed-rate workloads. A session ([`session`]) runs every
//! subject once per workload per round, in an order shuffled every round ([`runner`]);
//! each execution ([`ProcessExecutor`]) starts the node fresh, waits until it is ready
//! and the warm-up is over, samples its process tree from /proc once a second
//! ([`sampler`]), scrapes its Prometheus metrics ([`prometheus`]), reads its JSON lines
//! ([`jsonl`]) and its load generator's output ([`load`]), then stops it (SIGINT,
//! SIGKILL after the grace period). Each execution is stored as it ends, in the judge's
//! stored form; an interrupted comparison is continued ([`resume`]). With a precision
//! target the session asks the judge's stopping rule after every round whether to go
//! on.
//!
//! Judging (the paired t-test on per-round ratios by default, Holm's correction within
//! the primary and the secondary family, the noise band, stated power) is dyno-judge's,
//! which reads the stored executions and knows nothing of processes.
//! [`SyntheticExecutor`] runs the judge's seeded synthetic executions, so the whole
//! pipeline is tested without processes:
//!
//! ```
//! use dyno_compare::session::{CompareSession, Event};
//! use dyno_compare::{ComparisonFile, SyntheticExecutor};
//! use dyno_judge::judged::JudgeRequest;
//! use dyno_judge::Verdict;
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
//! let mut events = |_: Event<'_>| {};
//! let mut session =
//!     CompareSession::begin(cfg, "cmp.toml".as_ref(), None, false, "dyno test".into(), &mut events)
//!         .unwrap();
//! let mut node = SyntheticExecutor::new(7);
//! node.slowdown.insert("v2".into(), 1.15); // 15% more CPU per transaction
//! let outcome = session.run(None, &mut node, &AtomicBool::new(false), &[], &mut events).unwrap();
//! let judged = outcome.measured().judge(&JudgeRequest::default(), Vec::new()).unwrap();
//! let cpu = judged.judgement.verdicts.iter().find(|v| v.metric.name == "cpu_percent").unwrap();
//! assert_eq!(cpu.verdict(), Verdict::Regression);
//! ```
// The unsafe process calls live in dyno-proc.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bounds;
pub mod cluster_run;
pub mod cluster_subject;
pub mod config;
pub mod declared;
pub mod digest;
pub mod events;
pub mod execution;
pub mod executor;
pub mod gitbuild;
pub mod jsonl;
pub mod load;
pub mod mock;
pub mod overrides;
pub mod pinning;
pub mod placeholder;
pub mod prometheus;
pub mod readiness;
pub mod resume;
pub mod runner;
pub mod sampler;
pub mod session;
pub mod slot;
pub mod spec;

pub use cluster_subject::ClusterSubject;
pub use config::ConfigError;
pub use execution::{Execution, Outcome, Series, SeriesKind};
pub use executor::{Executor, ProcessExecutor};
pub use mock::SyntheticExecutor;
pub use runner::{run_rounds, schedule, Ending, Slot};
pub use spec::{ComparisonFile, OnFailure, SubjectSpec, WorkloadSpec};
