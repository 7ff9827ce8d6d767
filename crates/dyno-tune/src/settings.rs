//! The settings one variant is built with: a point of the study's matrix, and (with
//! every key optional) the shape of an `exclude` rule. Below both the study file and the
//! variants, which each read it.

use crate::profile::{Lto, OptLevel, Panic, Pgo, TargetCpu};
use serde::{Deserialize, Serialize};

/// The settings of one variant. `None` leaves a key to the project's own profile. (In
/// an [`Exclude`](crate::study::Exclude) rule, read from the study file, `None` matches any value.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Rustup toolchain; `None` = whatever `cargo` resolves to.
    pub toolchain: Option<String>,
    /// `-C target-cpu`.
    pub target_cpu: Option<TargetCpu>,
    /// `opt-level`.
    pub opt_level: Option<OptLevel>,
    /// `lto`.
    pub lto: Option<Lto>,
    /// `codegen-units`.
    pub codegen_units: Option<u32>,
    /// `panic`.
    pub panic: Option<Panic>,
    /// Extra RUSTFLAGS (`None` or `""` = none).
    pub rustflags: Option<String>,
    /// Profile-guided optimisation. Left out of the id's key when not set, so studies
    /// without a `pgo` dimension keep the ids (and stored results) they had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgo: Option<Pgo>,
}
