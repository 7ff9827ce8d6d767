//! Log extractors: a node's own log lines mapped to propagation events by regex rules.
//!
//! A node that does not write dyno's event log (any node but the reference node) still
//! logs when it receives, fetches and commits a block. The cluster file's `[extract]`
//! table gives one regex per event (`forged`, `received`, `fetched`, `adopted`); each
//! names the block by a `height` or a `block` group and may carry its time in a `ts`
//! group, read with the table's `time_format`. Without a `ts` group a line's time is the
//! moment dyno read it. The node is the node whose log the line is in.
//!
//! The events feed the same analysis as the reference node's ([`crate::propagation`]).
//! A rule set that gives no `forged` rule has no forging time: a block's reference time
//! is then its first sighting anywhere (the proposer sees its own proposal first), and
//! every metric whose events no rule provides is reported as not available.

use crate::events::{Event, EventKind};
use regex::Regex;

/// The events a rule can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleEvent {
    /// The block was made on this node.
    Forged,
    /// First notice of the block (a header, a proposal).
    Received,
    /// The whole block is here.
    Fetched,
    /// The block is part of this node's chain.
    Adopted,
}

impl RuleEvent {
    /// Every rule event, in the order of the `[extract]` keys.
    pub const ALL: [RuleEvent; 4] = [
        RuleEvent::Forged,
        RuleEvent::Received,
        RuleEvent::Fetched,
        RuleEvent::Adopted,
    ];

    /// The key in `[extract]`.
    pub fn key(self) -> &'static str {
        match self {
            RuleEvent::Forged => "forged",
            RuleEvent::Received => "received",
            RuleEvent::Fetched => "fetched",
            RuleEvent::Adopted => "adopted",
        }
    }
}

/// A time format: a small strftime subset, checked when the cluster file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeFormat {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(char),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// `%.f`: a dot and 1 to 9 digits of a second.
    Fraction,
    /// `%s`: Unix seconds.
    Epoch,
}

/// Why a line a rule matched gives no event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The `height` group is no whole number.
    #[error("{rule}: height {text:?} is not a whole number")]
    Height {
        /// The rule's key.
        rule: &'static str,
        /// The text captured.
        text: String,
    },
    /// The `ts` group does not fit `time_format`.
    #[error("{rule}: time {text:?} does not fit time_format")]
    Time {
        /// The rule's key.
        rule: &'static str,
        /// The text captured.
        text: String,
    },
    /// No `ts` group, and the line was not read as it was written.
    #[error("{rule}: the rule has no (?P<ts>...) group, so its time is when the line is read, which only `dyno cluster run` knows")]
    NoTime {
        /// The rule's key.
        rule: &'static str,
    },
}

/// The directives [`TimeFormat`] knows, for error messages.
pub const TIME_DIRECTIVES: &str = "%Y %m %d %H %M %S %.f %s %%";

/// Why a time format is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeFormatError {
    /// A `%` directive the parser does not know.
    #[error("unknown directive %{0} (known: {TIME_DIRECTIVES})")]
    UnknownDirective(String),
    /// Neither `%s` nor a whole civil date and time.
    #[error("{0:?} does not fix a moment: give %s, or all of %Y %m %d %H %M %S")]
    NoMoment(String),
}

impl TimeFormat {
    /// Parses a format; the error says which directive is unknown or what is missing.
    pub fn parse(format: &str) -> Result<TimeFormat, TimeFormatError> {
        let mut parts = Vec::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                parts.push(Part::Literal(c));
                continue;
            }
            let part = match chars.next() {
                Some('Y') => Part::Year,
                Some('m') => Part::Month,
                Some('d') => Part::Day,
                Some('H') => Part::Hour,
                Some('M') => Part::Minute,
                Some('S') => Part::Second,
                Some('s') => Part::Epoch,
                Some('%') => Part::Literal('%'),
                Some('.') if chars.next() == Some('f') => Part::Fraction,
                other => {
                    return Err(TimeFormatError::UnknownDirective(
                        other.map_or(String::new(), String::from),
                    ))
                }
            };
            parts.push(part);
        }
        let has = |p: &Part| parts.contains(p);
        let civil = [
            Part::Year,
            Part::Month,
            Part::Day,
            Part::Hour,
            Part::Minute,
            Part::Second,
        ];
        if !has(&Part::Epoch) && !civil.iter().all(has) {
            return Err(TimeFormatError::NoMoment(format.to_string()));
        }
        Ok(TimeFormat { parts })
    }

    /// Unix nanoseconds of `text`, read as UTC; `None` when it does not fit the format.
    pub fn unix_ns(&self, text: &str) -> Option<u64> {
        let b = text.as_bytes();
        let mut at = 0;
        let number = |at: &mut usize, max: usize| -> Option<(u64, usize)> {
            let start = *at;
            while *at < b.len() && *at - start < max && b[*at].is_ascii_digit() {
                *at += 1;
            }
            let digits = *at - start;
            if digits == 0 {
                return None;
            }
            text[start..*at].parse().ok().map(|v| (v, digits))
        };
        let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut frac_ns) = (1970, 1, 1, 0, 0, 0, 0);
        let mut epoch = None;
        for part in &self.parts {
            match part {
                Part::Literal(c) => {
                    let mut buf = [0; 4];
                    let lit = c.encode_utf8(&mut buf).as_bytes();
                    if !b[at..].starts_with(lit) {
                        return None;
                    }
                    at += lit.len();
                }
                Part::Year => y = number(&mut at, 4)?.0,
                Part::Month => mo = number(&mut at, 2)?.0,
                Part::Day => d = number(&mut at, 2)?.0,
                Part::Hour => h = number(&mut at, 2)?.0,
                Part::Minute => mi = number(&mut at, 2)?.0,
                Part::Second => s = number(&mut at, 2)?.0,
                Part::Epoch => epoch = Some(number(&mut at, 12)?.0),
                Part::Fraction => {
                    if b.get(at) != Some(&b'.') {
                        return None;
                    }
                    at += 1;
                    let (v, digits) = number(&mut at, 9)?;
                    frac_ns = v * 10u64.pow(9 - digits as u32);
                }
            }
        }
        if at != b.len() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 {
            return None;
        }
        if mi > 59 || s > 60 {
            return None;
        }
        let secs = match epoch {
            Some(e) => e,
            None => {
                let days = days_from_civil(y as i64, mo as i64, d as i64);
                u64::try_from(days * 86_400).ok()? + h * 3600 + mi * 60 + s
            }
        };
        // Nanoseconds since 1970 in a u64 end in 2554: a later time is no time.
        secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// One event's rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The event it produces.
    pub event: RuleEvent,
    /// The regex, with a `height` or `block` group and maybe `ts`.
    pub regex: Regex,
}

/// A validated `[extract]` table.
#[derive(Debug, Clone)]
pub struct Extractors {
    /// One rule per event the node's log provides.
    pub rules: Vec<Rule>,
    /// How `ts` groups are read (`None`: no rule has one).
    pub time_format: Option<TimeFormat>,
    /// Whether blocks are named by the `block` group (else by `height`).
    pub by_block: bool,
}

impl Extractors {
    /// Validates rules (`(event, regex text)`) and the time format; each error is
    /// `(key, message)` for the cluster file to place.
    pub fn new(
        rules: &[(RuleEvent, &str)],
        time_format: Option<&str>,
    ) -> Result<Extractors, (String, String)> {
        let time_format = time_format
            .map(TimeFormat::parse)
            .transpose()
            .map_err(|m| ("extract.time_format".to_string(), m.to_string()))?;
        let mut out = Vec::new();
        for &(event, text) in rules {
            let key = format!("extract.{}", event.key());
            let regex = Regex::new(text).map_err(|e| (key.clone(), format!("bad regex: {e}")))?;
            let names: Vec<&str> = regex.capture_names().flatten().collect();
            if !names.contains(&"height") && !names.contains(&"block") {
                return Err((
                    key,
                    "needs a named group (?P<height>...) or (?P<block>...) naming the block".into(),
                ));
            }
            if names.contains(&"ts") && time_format.is_none() {
                return Err((
                    key,
                    "has a (?P<ts>...) group but [extract] gives no time_format to read it".into(),
                ));
            }
            out.push(Rule { event, regex });
        }
        if !out.iter().any(|r| r.event == RuleEvent::Adopted) {
            return Err((
                "extract.adopted".into(),
                "is required: adoption is what propagation is measured by".into(),
            ));
        }
        let with_block = |r: &&Rule| r.regex.capture_names().flatten().any(|n| n == "block");
        let by_block = out.iter().filter(with_block).count();
        if by_block != 0 && by_block != out.len() {
            let odd = out
                .iter()
                .find(|r| !with_block(r))
                .map_or("", |r| r.event.key());
            return Err((
                format!("extract.{odd}"),
                "names blocks by height while another rule uses (?P<block>...): every rule must name blocks the same way".into(),
            ));
        }
        Ok(Extractors {
            rules: out,
            time_format,
            by_block: by_block != 0,
        })
    }

    /// Whether some rule produces `event`.
    pub fn provides(&self, event: RuleEvent) -> bool {
        self.rules.iter().any(|r| r.event == event)
    }

    /// Whether every rule reads its time from the line (else lines must be stamped when
    /// read, which only a live run can do).
    pub fn timed_in_line(&self) -> bool {
        self.rules
            .iter()
            .all(|r| r.regex.capture_names().flatten().any(|n| n == "ts"))
    }

    /// The event of one log line of `node`, if a rule matches it; `read_ns` is when the
    /// line was read, used by rules without a `ts` group. An error says what did not
    /// parse (the caller adds file and line).
    pub fn line(
        &self,
        node: &str,
        line: &str,
        read_ns: Option<u64>,
    ) -> Result<Option<Event>, LineError> {
        for rule in &self.rules {
            let Some(caps) = rule.regex.captures(line) else {
                continue;
            };
            let height = match caps.name("height") {
                Some(h) => Some(h.as_str().parse::<u64>().map_err(|_| LineError::Height {
                    rule: rule.event.key(),
                    text: h.as_str().to_string(),
                })?),
                None => None,
            };
            let block = match caps.name("block") {
                Some(b) => b.as_str().to_ascii_lowercase(),
                None => height.map(|h| h.to_string()).unwrap_or_default(),
            };
            let ts_ns = match (caps.name("ts"), &self.time_format) {
                (Some(ts), Some(format)) => {
                    format.unix_ns(ts.as_str()).ok_or_else(|| LineError::Time {
                        rule: rule.event.key(),
                        text: ts.as_str().to_string(),
                    })?
                }
                _ => read_ns.ok_or(LineError::NoTime {
                    rule: rule.event.key(),
                })?,
            };
            let slot = height.unwrap_or(0);
            let what = match rule.event {
                RuleEvent::Forged => EventKind::Forged { slot, block },
                RuleEvent::Received => EventKind::HeaderReceived { slot, block },
                RuleEvent::Fetched => EventKind::FetchCompleted { slot, block },
                RuleEvent::Adopted => EventKind::Adopted { slot, block },
            };
            return Ok(Some(Event {
                node: node.to_string(),
                ts_ns,
                what,
            }));
        }
        Ok(None)
    }

    /// The events of a whole log of `node` whose lines carry their times; `path` names
    /// the file in errors.
    pub fn parse_log(
        &self,
        path: &std::path::Path,
        node: &str,
        text: &str,
    ) -> Result<Vec<Event>, crate::ClusterError> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            out.extend(self.numbered_line(path, node, i + 1, line)?);
        }
        Ok(out)
    }

    /// Line `number` of the log at `path` of `node`, whose lines carry their times: the
    /// event it holds, if any; an error names the file and line.
    pub fn numbered_line(
        &self,
        path: &std::path::Path,
        node: &str,
        number: usize,
        line: &str,
    ) -> Result<Option<Event>, crate::ClusterError> {
        self.line(node, line, None)
            .map_err(|e| crate::ClusterError::Log {
                path: path.to_path_buf(),
                line: number,
                message: e.to_string(),
            })
    }

    /// The metric keys (as [`crate::propagation::Analysis::distributions`] names them)
    /// that this rule set cannot measure.
    pub fn unavailable(&self) -> Vec<String> {
        let forged = self.provides(RuleEvent::Forged);
        let received = self.provides(RuleEvent::Received);
        let fetched = self.provides(RuleEvent::Fetched);
        let mut out: Vec<String> = [
            "loop_start",
            "leadership_check",
            "ledger_ticking",
            "mempool_snapshot",
            "leadership_to_forged",
            "forged_to_announced",
            "slot_start_to_announced",
        ]
        .iter()
        .map(|k| format!("forging.{k}"))
        .collect();
        if !forged {
            out.push("forging.forged_to_self_adopted".into());
        }
        out.push("peer.notice_to_fetch".into());
        out.push("peer.fetch".into());
        out.push("peer.fetched_to_announced".into());
        if !received {
            out.push("peer.first_notice".into());
        }
        if !fetched {
            out.push("peer.fetched_to_adopted".into());
        }
        out.push("slot_start_lateness".into());
        out
    }
}

#[cfg(test)]
mod tests;
