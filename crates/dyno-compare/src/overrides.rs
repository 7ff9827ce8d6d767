//! A precision target as the file and the flags write it (`precision = "5%"`,
//! `--precision 5%`), and `dyno compare run`'s flags applied over the file's keys.

use crate::spec::{ComparisonFile, DEFAULT_MAX_MINUTES, DEFAULT_MAX_ROUNDS};
use dyno_judge::precision::percent;
use dyno_judge::Sequential;
use dyno_judge::TestKind;

/// Parses `precision` as the file writes it: `"5%"`, or a fraction such as `0.05`.
pub fn parse_precision(value: &toml::Value) -> Result<f64, String> {
    match value {
        toml::Value::String(s) => parse_precision_text(s),
        toml::Value::Float(f) => fraction(*f, &f.to_string()),
        toml::Value::Integer(i) => fraction(*i as f64, &i.to_string()),
        other => Err(format!(
            "{other} is not a precision: write a percentage such as \"5%\""
        )),
    }
}

/// Parses a precision given as text (`--precision 5%`, or `0.05`).
pub fn parse_precision_text(text: &str) -> Result<f64, String> {
    let t = text.trim();
    match t.strip_suffix('%') {
        Some(number) => {
            let pct: f64 = number
                .trim()
                .parse()
                .map_err(|_| format!("`{text}` is not a percentage such as \"5%\""))?;
            if pct > 0.0 && pct < 100.0 {
                Ok(pct / 100.0)
            } else {
                Err(format!("{text} is not in (0%, 100%)"))
            }
        }
        None => match t.parse::<f64>() {
            Ok(f) => fraction(f, text),
            Err(_) => Err(format!("`{text}` is not a percentage such as \"5%\"")),
        },
    }
}

fn fraction(f: f64, text: &str) -> Result<f64, String> {
    if f > 0.0 && f < 1.0 {
        Ok(f)
    } else {
        Err(format!(
            "{text} is not in (0, 1): write the precision as a percentage such as \"5%\""
        ))
    }
}

impl ComparisonFile {
    /// Applies `dyno compare run`'s flags to a parsed file: [`Self::apply_precision`],
    /// then `--rounds`, which a precision target refuses (the target decides the rounds;
    /// `--max-rounds` bounds them). `Err` names the flag at fault.
    pub fn apply_run_flags(
        &mut self,
        precision: Option<&str>,
        max_rounds: Option<u32>,
        max_minutes: Option<f64>,
        rounds: Option<u32>,
    ) -> Result<(), String> {
        self.apply_precision(precision, max_rounds, max_minutes)?;
        if let Some(r) = rounds {
            if self.sequential.is_some() {
                return Err("--rounds: the comparison has a precision target, which decides the rounds; bound them with --max-rounds".into());
            }
            self.rounds = r;
        }
        Ok(())
    }

    /// Applies `--precision`, `--max-rounds` and `--max-minutes` to a parsed file: a
    /// precision target makes the comparison sequential (the file's `test`, when it names
    /// another, is refused), and a budget needs a target. `Err` names the flag at fault.
    pub fn apply_precision(
        &mut self,
        precision: Option<&str>,
        max_rounds: Option<u32>,
        max_minutes: Option<f64>,
    ) -> Result<(), String> {
        let mut seq = self.sequential;
        if let Some(text) = precision {
            let p = parse_precision_text(text).map_err(|e| format!("--precision: {e}"))?;
            if p < self.noise_band {
                return Err(format!(
                    "--precision: {} is inside the noise band ({}%), which no verdict can go below",
                    percent(p),
                    self.noise_band * 100.0
                ));
            }
            if let Some(t) = self.test.filter(|t| *t != TestKind::Sequential) {
                return Err(format!(
                    "--precision: the file's `test = \"{}\"` cannot be looked at after every round; a precision target is judged by the sequential test (leave `test` out)",
                    t.name()
                ));
            }
            seq = Some(Sequential {
                precision: p,
                ..seq.unwrap_or(Sequential {
                    precision: p,
                    max_rounds: DEFAULT_MAX_ROUNDS,
                    max_minutes: DEFAULT_MAX_MINUTES,
                })
            });
        }
        let Some(mut s) = seq else {
            return match (max_rounds, max_minutes) {
                (Some(_), _) => Err("--max-rounds: a budget for a precision target: give --precision too (or `precision` in the file)".into()),
                (_, Some(_)) => Err("--max-minutes: a budget for a precision target: give --precision too (or `precision` in the file)".into()),
                _ => Ok(()),
            };
        };
        if let Some(r) = max_rounds {
            s.max_rounds =
                crate::bounds::count(i64::from(r), &(2..=*crate::bounds::ROUNDS.end()), "rounds")
                    .map_err(|why| format!("--max-rounds: not a budget: {why}"))?;
        }
        if let Some(m) = max_minutes {
            s.max_minutes = crate::bounds::within(m, &crate::bounds::MAX_MINUTES, "minutes")
                .map_err(|why| format!("--max-minutes: not a budget: {why}"))?;
        }
        self.sequential = Some(s);
        self.rounds = s.max_rounds;
        self.test = Some(TestKind::Sequential);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_are_percentages_in_the_open_unit_interval() {
        let v = |s: &str| -> toml::Value {
            toml::from_str::<toml::Table>(&format!("p = {s}")).unwrap()["p"].clone()
        };
        assert_eq!(parse_precision(&v("\"5%\"")), Ok(0.05));
        assert_eq!(parse_precision(&v("\" 2.5 %\"")), Ok(0.025));
        assert_eq!(parse_precision(&v("0.05")), Ok(0.05));
        for bad in [
            "\"0%\"", "\"100%\"", "\"-3%\"", "5", "1.0", "0", "\"five\"", "true",
        ] {
            assert!(parse_precision(&v(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            parse_precision_text("150%").unwrap_err(),
            "150% is not in (0%, 100%)"
        );
        assert_eq!(percent(12.0), "over 1000%");
        assert_eq!(percent(0.0512), "5.1%");
    }
}
