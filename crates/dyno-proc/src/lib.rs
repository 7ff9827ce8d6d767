//! The process layer of dyno: the child processes it runs (nodes, load generators,
//! benchmarks), how it knows they are up, and what /proc says about them and the host.
//! `dyno compare`, `dyno cluster`, `dyno tune` and the tiles share it, so there
//! is one way to spawn, stop, probe and read a process.
//!
//! - [`GuardedChild`] ([`child`]): a child in its own process group that never outlives
//!   dyno, not even when dyno is SIGKILLed (parent-death signal plus a group guard);
//!   stopped with a signal, then SIGKILL after a grace period; its output's last lines
//!   kept, watched for a readiness line, copied to a log file or a callback.
//! - [`Readiness`] ([`ready`]): TCP port accepting, HTTP URL answering 2xx, or an output
//!   line matching a regex, with a timeout.
//! - [`ProcSampler`] ([`sampler`]): CPU, memory, faults, context switches, I/O and threads
//!   of one or many process trees, from /proc, about once a second.
//! - [`procfs`]: one parser of `/proc/PID/stat`, `status` and `io`, liveness, start times,
//!   the clock tick (`sysconf`), boot id, host name, host CPU time.
//! - [`reaper`]: dyno as the subreaper of what it starts; what escapes a child's group
//!   is ended, named and reaped when the child stops.
//! - [`signal`]: signals sent with kill(2), never by spawning `kill`.
//! - [`lines`]: the line and body caps of every reader of another program's output.
//! - [`http`]: the tiny loopback HTTP client used by metrics scrapes and probes.
//! - [`affinity`]: the CPUs a child and dyno's own thread run on (`sched_setaffinity`).
//! - [`busy`]: how busy the machine is and which processes make it so.
//! - [`host`]: the host fingerprint ([`dyno_model::Host`]) read from /proc and /sys, the
//!   filesystem of a directory, the online CPU list, how busy the CPUs are.
//! - [`limits`]: what the machine and the user allow (pid_max, threads-max,
//!   RLIMIT_NPROC, the cgroup's pids and memory limits, available memory) with what is
//!   in use, for a launcher that checks its plan before it starts anything.
//!
//! ```
//! use dyno_proc::{GuardedChild, Probe, ProcSampler, Readiness, SpawnOptions};
//! use std::process::Command;
//! use std::sync::atomic::AtomicBool;
//! use std::time::Duration;
//!
//! let mut cmd = Command::new("sh");
//! cmd.args(["-c", "echo 'node started'; yes > /dev/null"]);
//! let ready = Readiness::new(Probe::output_line("started$")?, Duration::from_secs(60));
//! let mut node = GuardedChild::spawn(cmd, &ready.spawn_options(SpawnOptions::default()))?;
//! ready.wait(&mut node, &AtomicBool::new(false))?;
//!
//! // One sampler can watch many trees (every node of a cluster, a load generator...).
//! let sampler = ProcSampler::many(&[node.pid()]);
//! let before = sampler.read_all().remove(0)?;
//! std::thread::sleep(Duration::from_millis(300));
//! let after = sampler.read_all().remove(0)?;
//! let sample = dyno_proc::sample_between(&before, &after, sampler.clk_tck());
//! assert!(sample.rss_bytes > 0.0);
//!
//! let stopped = node.stop(Duration::from_secs(30)); // SIGINT, SIGKILL after 30 s
//! assert_eq!(stopped.last_lines, ["node started"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// `unsafe` lives only in `sys` (a `pre_exec` hook, kill(2), sysconf).
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

pub mod affinity;
pub mod busy;
pub mod child;
pub mod host;
pub mod http;
pub mod limits;
pub mod lines;
pub mod procfs;
pub mod ready;
pub mod reaper;
pub mod sampler;
pub mod signal;
pub mod signal_wait;
#[allow(unsafe_code)]
mod sys;

pub use child::{GroupGuard, GuardedChild, LineSink, SpawnError, SpawnOptions, Stopped, Stream};
pub use http::{Endpoint, HttpError};
pub use procfs::{clock_ticks_per_second, liveness, start_ticks, Liveness};
pub use ready::{NotReady, Probe, ProbeError, Readiness};
pub use sampler::{
    sample_between, ProcReading, ProcSample, ProcSampler, ProcessCounters, ReadError,
};
pub use signal::{die_on_closed_pipe, signal_group, signal_process, Signal};
pub use signal_wait::SignalWaiter;
