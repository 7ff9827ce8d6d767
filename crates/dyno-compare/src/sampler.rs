//! The /proc sampler, from [`dyno_proc::sampler`] (where `dyno cluster` reaches it too),
//! with what compare derives from its samples: spans of seconds at high CPU use
//! ([`cpu_spans`], shared with `dyno cluster`'s per-slot spans).
//!
//! The tree sampled is the node's spawned process and all its descendants; see
//! [`dyno_proc::sampler`] for what is read and how processes that come and go are counted.

pub use dyno_proc::procfs::{
    clock_ticks_per_second, own_cpu_seconds, own_thread_cpu_ns, parse_io, parse_stat, parse_status,
    StatFields, StatusFields,
};
pub use dyno_proc::sampler::*;
