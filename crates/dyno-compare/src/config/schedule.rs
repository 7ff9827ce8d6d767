//! How a round runs its subjects, as the file writes it: `schedule`, `windows_per_start`
//! and `max_disturbance`, checked (and `--schedule` applied over the file).
//!
//! ```toml
//! schedule = "side_by_side"   # or "interleaved" (the default)
//! windows_per_start = 1       # consecutive windows per start of the nodes (default 1)
//! max_disturbance = "10%"     # other work, % of one core, above which a start is run
//!                             # again (interleaved, or side by side with `cpus`); "off"
//!                             # never (the default)
//! ```

use crate::spec::{ComparisonFile, Schedule, SubjectSpec};

/// Parses `max_disturbance` as the file writes it: a percentage of one core in (0, 100%]
/// (`"10%"`, or a fraction such as `0.1`), or `"off"`. `Ok(None)` is off.
pub fn parse_max_disturbance(value: &toml::Value) -> Result<Option<f64>, String> {
    let pct = match value {
        toml::Value::String(s) if s.trim() == "off" => return Ok(None),
        toml::Value::String(s) => {
            let Some(number) = s.trim().strip_suffix('%') else {
                return Err(format!(
                    "`{s}` is not a share of one core: write a percentage such as \"10%\", or \"off\""
                ));
            };
            number
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("`{s}` is not a percentage such as \"10%\""))?
        }
        toml::Value::Float(f) => f * 100.0,
        toml::Value::Integer(i) => *i as f64 * 100.0,
        other => {
            return Err(format!(
                "{other} is not a share of one core: write a percentage such as \"10%\", or \"off\""
            ))
        }
    };
    if pct > 0.0 && pct <= 100.0 {
        Ok(Some(pct))
    } else {
        Err(format!(
            "{} is not in (0%, 100%] of one core (\"off\" never runs an execution again)",
            value
        ))
    }
}

/// `windows_per_start` as written: at least 1 and at most 1000.
pub fn check_windows_per_start(n: i64) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| format!("{n} is not a number of windows: give 1 or more (at most 1000)"))
}

/// `schedule` as written.
pub fn parse_schedule(text: &str) -> Result<Schedule, String> {
    Schedule::parse(text).ok_or_else(|| format!("`{text}` is not `interleaved` or `side_by_side`"))
}

/// What a schedule asks of the subjects: side by side, no cluster (a cluster is many
/// nodes of its own) and `cpus` on every subject or none (the crossover swaps the sets);
/// several windows per start, no cluster. `Err((key, why))`.
pub fn check_subjects(
    schedule: Schedule,
    windows_per_start: u32,
    subjects: &[SubjectSpec],
) -> Result<(), (String, String)> {
    if let Some(i) = subjects.iter().position(|s| s.cluster.is_some()) {
        if schedule == Schedule::SideBySide {
            return Err((
                "schedule".into(),
                format!("subject `{}` is a cluster, which runs one at a time: side by side is for process subjects (leave `schedule` out)", subjects[i].name),
            ));
        }
        if windows_per_start > 1 {
            return Err((
                "windows_per_start".into(),
                format!("subject `{}` is a cluster, which measures one window per start (leave `windows_per_start` out)", subjects[i].name),
            ));
        }
    }
    if schedule == Schedule::SideBySide {
        let pinned = subjects.iter().filter(|s| s.cpus.is_some()).count();
        if pinned > 0 && pinned < subjects.len() {
            let i = subjects.iter().position(|s| s.cpus.is_none()).unwrap_or(0);
            return Err((
                format!("subject[{i}].cpus"),
                "side by side swaps the subjects' CPU sets every round: give every subject `cpus`, or none".into(),
            ));
        }
    }
    Ok(())
}

impl ComparisonFile {
    /// Applies `--schedule` over the file's `schedule`; `Err` names the flag.
    pub fn apply_schedule(&mut self, schedule: Option<&str>) -> Result<(), String> {
        let Some(text) = schedule else {
            return Ok(());
        };
        let s = parse_schedule(text).map_err(|e| format!("--schedule: {e}"))?;
        check_subjects(s, self.windows_per_start, &self.subjects)
            .map_err(|(_, why)| format!("--schedule: {why}"))?;
        self.schedule = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disturbance_limit_is_a_share_of_one_core_or_off() {
        let v = |s: &str| -> toml::Value {
            toml::from_str::<toml::Table>(&format!("p = {s}")).unwrap()["p"].clone()
        };
        assert_eq!(parse_max_disturbance(&v("\"10%\"")), Ok(Some(10.0)));
        assert_eq!(parse_max_disturbance(&v("\"100%\"")), Ok(Some(100.0)));
        assert_eq!(parse_max_disturbance(&v("0.25")), Ok(Some(25.0)));
        assert_eq!(parse_max_disturbance(&v("\"off\"")), Ok(None));
        for bad in [
            "\"0%\"", "\"150%\"", "\"-1%\"", "\"ten\"", "2", "true", "\"10\"",
        ] {
            assert!(parse_max_disturbance(&v(bad)).is_err(), "{bad}");
        }
        assert_eq!(check_windows_per_start(3), Ok(3));
        assert!(check_windows_per_start(0).is_err());
        assert!(check_windows_per_start(-1).is_err());
        assert_eq!(parse_schedule("side_by_side"), Ok(Schedule::SideBySide));
        assert!(parse_schedule("side-by-side").is_err());
    }
}
