//! The values of the matrix dimensions, each a type of its own so that spellings that mean
//! different things to cargo (`lto = false` and `lto = "off"`) can never be confused.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Cargo's `lto` profile key. Four values, four different builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lto {
    /// `lto = false`, the release default: "thin-local" LTO within each crate's codegen units.
    ThinLocal,
    /// `lto = "off"`: no LTO at all, not even thin-local.
    Off,
    /// `lto = "thin"`: ThinLTO across the whole dependency graph.
    Thin,
    /// `lto = "fat"` (also `true`): full LTO across the whole dependency graph.
    Fat,
}

impl Lto {
    /// The exact string cargo expects in `CARGO_PROFILE_<NAME>_LTO`.
    pub fn cargo_value(self) -> &'static str {
        match self {
            Lto::ThinLocal => "false",
            Lto::Off => "off",
            Lto::Thin => "thin",
            Lto::Fat => "fat",
        }
    }

    /// The line to paste into a `[profile.*]` section.
    pub fn toml_value(self) -> &'static str {
        match self {
            Lto::ThinLocal => "false",
            Lto::Off => "\"off\"",
            Lto::Thin => "\"thin\"",
            Lto::Fat => "\"fat\"",
        }
    }

    /// Short label: `lto-false`, `lto-off`, `thin`, `fat`.
    pub fn label(self) -> &'static str {
        match self {
            Lto::ThinLocal => "lto-false",
            Lto::Off => "lto-off",
            Lto::Thin => "thin",
            Lto::Fat => "fat",
        }
    }
}

impl<'de> Deserialize<'de> for Lto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Lto;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"false, "off", "thin" or "fat""#)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lto, E> {
                Ok(if v { Lto::Fat } else { Lto::ThinLocal })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lto, E> {
                match v {
                    "off" => Ok(Lto::Off),
                    "thin" => Ok(Lto::Thin),
                    "fat" => Ok(Lto::Fat),
                    "false" => Err(E::custom(
                        r#"lto "false" is ambiguous: write false (thin-local) or "off" (none)"#,
                    )),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Lto {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Lto::ThinLocal => s.serialize_bool(false),
            other => s.serialize_str(other.cargo_value()),
        }
    }
}

/// Cargo's `opt-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OptLevel {
    /// 0..=3.
    Level(u8),
    /// `"s"`: optimise for size.
    S,
    /// `"z"`: optimise for size, harder.
    Z,
}

impl OptLevel {
    /// The string cargo expects in `CARGO_PROFILE_<NAME>_OPT_LEVEL`.
    pub fn cargo_value(self) -> String {
        match self {
            OptLevel::Level(n) => n.to_string(),
            OptLevel::S => "s".into(),
            OptLevel::Z => "z".into(),
        }
    }

    /// The TOML value for a profile section.
    pub fn toml_value(self) -> String {
        match self {
            OptLevel::Level(n) => n.to_string(),
            OptLevel::S => "\"s\"".into(),
            OptLevel::Z => "\"z\"".into(),
        }
    }

    /// Short label: `o3`, `os`.
    pub fn label(self) -> String {
        format!("o{}", self.cargo_value())
    }
}

impl<'de> Deserialize<'de> for OptLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = OptLevel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"0, 1, 2, 3, "s" or "z""#)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<OptLevel, E> {
                match v {
                    0..=3 => Ok(OptLevel::Level(v as u8)),
                    _ => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<OptLevel, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OptLevel, E> {
                match v {
                    "s" => Ok(OptLevel::S),
                    "z" => Ok(OptLevel::Z),
                    "0" | "1" | "2" | "3" => Ok(OptLevel::Level(v.as_bytes()[0] - b'0')),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for OptLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            OptLevel::Level(n) => s.serialize_u8(*n),
            other => s.serialize_str(&other.cargo_value()),
        }
    }
}

/// `-C target-cpu`: not passed, `native`, or a named CPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetCpu {
    /// No `-C target-cpu` flag: the target's generic CPU.
    None,
    /// `-C target-cpu=native`: the CPU of the building machine.
    Native,
    /// A named CPU (`znver4`, `alderlake`...).
    Named(String),
}

impl TargetCpu {
    /// The flag value, `None` when no flag is passed.
    pub fn flag(&self) -> Option<&str> {
        match self {
            TargetCpu::None => None,
            TargetCpu::Native => Some("native"),
            TargetCpu::Named(n) => Some(n),
        }
    }

    /// Short label: `generic`, `native`, the CPU name.
    pub fn label(&self) -> &str {
        self.flag().unwrap_or("generic")
    }
}

impl<'de> Deserialize<'de> for TargetCpu {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let valid = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        match s.as_str() {
            "none" => Ok(TargetCpu::None),
            "native" => Ok(TargetCpu::Native),
            _ if valid => Ok(TargetCpu::Named(s)),
            _ => Err(de::Error::custom(format!(
                "target_cpu {s:?} is not a CPU name (use \"none\", \"native\" or a name like \"znver4\")"
            ))),
        }
    }
}

impl Serialize for TargetCpu {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.flag().unwrap_or("none"))
    }
}

/// Cargo's `panic` strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Panic {
    /// Unwind the stack (the default).
    Unwind,
    /// Abort the process.
    Abort,
}

impl Panic {
    /// The string cargo expects.
    pub fn cargo_value(self) -> &'static str {
        match self {
            Panic::Unwind => "unwind",
            Panic::Abort => "abort",
        }
    }
}

/// Profile-guided optimisation of a variant: none, an LLVM profile (`-Cprofile-generate`,
/// a training run, `-Cprofile-use`), or that profile followed by BOLT on the linked binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pgo {
    /// `"off"`: an ordinary build.
    Off,
    /// `"on"`: instrumented build, training, merged profile, optimised build.
    On,
    /// `"on+bolt"`: as `On`, then `llvm-bolt` reorders the linked binary from a second,
    /// BOLT-instrumented training run.
    OnBolt,
}

impl Pgo {
    /// The study-file spelling.
    pub fn value(self) -> &'static str {
        match self {
            Pgo::Off => "off",
            Pgo::On => "on",
            Pgo::OnBolt => "on+bolt",
        }
    }

    /// `true` when the variant needs a training run.
    pub fn trains(self) -> bool {
        self != Pgo::Off
    }

    /// Short label: `pgo-off`, `pgo`, `pgo+bolt`.
    pub fn label(self) -> &'static str {
        match self {
            Pgo::Off => "pgo-off",
            Pgo::On => "pgo",
            Pgo::OnBolt => "pgo+bolt",
        }
    }
}

impl<'de> Deserialize<'de> for Pgo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "off" => Ok(Pgo::Off),
            "on" => Ok(Pgo::On),
            "on+bolt" => Ok(Pgo::OnBolt),
            _ => Err(de::Error::custom(format!(
                "pgo {s:?} is not one of \"off\", \"on\", \"on+bolt\""
            ))),
        }
    }
}

impl Serialize for Pgo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct One<T> {
        v: T,
    }

    fn parse<T: for<'de> Deserialize<'de>>(v: &str) -> Result<T, toml::de::Error> {
        toml::from_str::<One<T>>(&format!("v = {v}")).map(|o| o.v)
    }

    #[test]
    fn four_lto_values_stay_apart() {
        assert_eq!(parse::<Lto>("false"), Ok(Lto::ThinLocal));
        assert_eq!(parse::<Lto>("\"off\""), Ok(Lto::Off));
        assert_eq!(parse::<Lto>("\"thin\""), Ok(Lto::Thin));
        assert_eq!(parse::<Lto>("\"fat\""), Ok(Lto::Fat));
        assert_eq!(parse::<Lto>("true"), Ok(Lto::Fat));
        assert!(parse::<Lto>("\"false\"")
            .unwrap_err()
            .message()
            .contains("ambiguous"));
        assert!(parse::<Lto>("\"medium\"").is_err());
        let values: Vec<&str> = [Lto::ThinLocal, Lto::Off, Lto::Thin, Lto::Fat]
            .iter()
            .map(|l| l.cargo_value())
            .collect();
        assert_eq!(values, ["false", "off", "thin", "fat"]);
    }

    #[test]
    fn opt_levels() {
        assert_eq!(parse::<OptLevel>("3"), Ok(OptLevel::Level(3)));
        assert_eq!(parse::<OptLevel>("\"z\""), Ok(OptLevel::Z));
        assert_eq!(parse::<OptLevel>("\"2\""), Ok(OptLevel::Level(2)));
        assert!(parse::<OptLevel>("4").is_err());
        assert_eq!(OptLevel::S.toml_value(), "\"s\"");
    }

    #[test]
    fn target_cpus() {
        assert_eq!(parse::<TargetCpu>("\"none\""), Ok(TargetCpu::None));
        assert_eq!(parse::<TargetCpu>("\"native\""), Ok(TargetCpu::Native));
        assert_eq!(
            parse::<TargetCpu>("\"znver4\""),
            Ok(TargetCpu::Named("znver4".into()))
        );
        assert!(parse::<TargetCpu>("\"a b\"").is_err());
        assert_eq!(
            parse::<TargetCpu>("\"x86-64-v3\""),
            Ok(TargetCpu::Named("x86-64-v3".into()))
        );
    }

    #[test]
    fn pgo_values() {
        assert_eq!(parse::<Pgo>("\"off\""), Ok(Pgo::Off));
        assert_eq!(parse::<Pgo>("\"on\""), Ok(Pgo::On));
        assert_eq!(parse::<Pgo>("\"on+bolt\""), Ok(Pgo::OnBolt));
        assert!(parse::<Pgo>("true").is_err());
        assert!(parse::<Pgo>("\"bolt\"")
            .unwrap_err()
            .message()
            .contains("on+bolt"));
        assert!(Pgo::OnBolt.trains() && !Pgo::Off.trains());
    }
}
