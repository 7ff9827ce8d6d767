//! Which runs a query selects ([`RunFilter`]) and its SQL, written once for both
//! dialects: the run list and the metric history select runs the same way on SQLite and
//! PostgreSQL.

/// Which runs [`Store::list_runs`](crate::Store::list_runs) returns. Every field left `None` matches all runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// Exact command name (`machine`, `tune`, `pipeline`, `compare`).
    pub command: Option<String>,
    /// Substring of the host name (case-sensitive).
    pub host: Option<String>,
    /// Substring of the subject name (case-sensitive).
    pub subject: Option<String>,
    /// Runs started at or after this time (seconds since the Unix epoch).
    pub since: Option<f64>,
    /// Runs started at or before this time (seconds since the Unix epoch).
    pub until: Option<f64>,
    /// At most this many runs (the newest).
    pub limit: Option<usize>,
}

/// The SQL dialect a query is spelled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite: `?N` parameters, `instr` for substrings.
    Sqlite,
    /// PostgreSQL: `$N` parameters, `strpos` for substrings.
    Postgres,
}

impl Dialect {
    /// How parameter `i` (1-based) is written.
    pub(crate) fn placeholder(self, i: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{i}"),
            Dialect::Postgres => format!("${i}"),
        }
    }

    /// A condition true when `haystack` contains `needle` (case-sensitive).
    fn contains(self, haystack: &str, needle: &str) -> String {
        match self {
            Dialect::Sqlite => format!("instr({haystack}, {needle}) > 0"),
            Dialect::Postgres => format!("strpos({haystack}, {needle}) > 0"),
        }
    }
}

/// A query parameter, before it becomes a backend's own value type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// A string.
    Text(String),
    /// A float.
    Real(f64),
    /// An integer.
    Int(i64),
}

/// SQL text being built with its parameters, numbered in the order they are added.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    pub dialect: Dialect,
    pub text: String,
    pub params: Vec<Param>,
}

impl Sql {
    /// `text` with no parameters yet.
    pub(crate) fn new(dialect: Dialect, text: &str) -> Self {
        Sql {
            dialect,
            text: text.to_string(),
            params: Vec::new(),
        }
    }

    /// Adds `param` and returns its placeholder.
    pub(crate) fn bind(&mut self, param: Param) -> String {
        self.params.push(param);
        self.dialect.placeholder(self.params.len())
    }

    /// Appends ` AND <cond>` for every field of `filter` that is set (its `limit` is the
    /// caller's). The query must name the runs `r`, their hosts `h` and subjects `su`.
    pub(crate) fn and_runs_match(&mut self, filter: &RunFilter) {
        if let Some(c) = &filter.command {
            let p = self.bind(Param::Text(c.clone()));
            self.text.push_str(&format!(" AND r.command = {p}"));
        }
        if let Some(h) = &filter.host {
            self.and_contains("h.hostname", h, false);
        }
        if let Some(s) = &filter.subject {
            self.and_contains("su.name", s, false);
        }
        if let Some(t) = filter.since {
            let p = self.bind(Param::Real(t));
            self.text.push_str(&format!(" AND r.started_at >= {p}"));
        }
        if let Some(t) = filter.until {
            let p = self.bind(Param::Real(t));
            self.text.push_str(&format!(" AND r.started_at <= {p}"));
        }
    }

    /// Appends ` AND <column contains text>`, ignoring case when `ignore_case`.
    pub(crate) fn and_contains(&mut self, column: &str, text: &str, ignore_case: bool) {
        let p = self.bind(Param::Text(text.to_string()));
        let cond = if ignore_case {
            self.dialect
                .contains(&format!("lower({column})"), &format!("lower({p})"))
        } else {
            self.dialect.contains(column, &p)
        };
        self.text.push_str(&format!(" AND {cond}"));
    }

    /// Appends ` LIMIT <n>` when a limit is given.
    pub(crate) fn limit(&mut self, limit: Option<usize>) {
        if let Some(n) = limit {
            let p = self.bind(Param::Int(i64::try_from(n).unwrap_or(i64::MAX)));
            self.text.push_str(&format!(" LIMIT {p}"));
        }
    }

    /// The parameters as rusqlite values.
    pub(crate) fn sqlite_params(&self) -> Vec<rusqlite::types::Value> {
        use rusqlite::types::Value;
        self.params
            .iter()
            .map(|p| match p {
                Param::Text(s) => Value::Text(s.clone()),
                Param::Real(x) => Value::Real(*x),
                Param::Int(i) => Value::Integer(*i),
            })
            .collect()
    }

    /// The parameters as postgres values.
    pub(crate) fn postgres_params(&self) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
        self.params
            .iter()
            .map(|p| -> Box<dyn postgres::types::ToSql + Sync> {
                match p {
                    Param::Text(s) => Box::new(s.clone()),
                    Param::Real(x) => Box::new(*x),
                    Param::Int(i) => Box::new(*i),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_set_field_binds_the_next_parameter() {
        let filter = RunFilter {
            command: Some("machine".into()),
            host: Some("bench".into()),
            subject: None,
            since: Some(10.0),
            until: None,
            limit: Some(3),
        };
        let mut pg = Sql::new(Dialect::Postgres, "WHERE m.name = $1");
        pg.bind(Param::Text("M".into()));
        pg.and_runs_match(&filter);
        assert_eq!(
            pg.text,
            "WHERE m.name = $1 AND r.command = $2 AND strpos(h.hostname, $3) > 0 \
             AND r.started_at >= $4"
        );
        assert_eq!(pg.params.len(), 4);
        let mut lite = Sql::new(Dialect::Sqlite, "WHERE 1 = 1");
        lite.and_runs_match(&filter);
        assert_eq!(
            lite.text,
            "WHERE 1 = 1 AND r.command = ?1 AND instr(h.hostname, ?2) > 0 \
             AND r.started_at >= ?3"
        );
        let mut none = Sql::new(Dialect::Sqlite, "x");
        none.and_runs_match(&RunFilter::default());
        assert_eq!((none.text.as_str(), none.params.len()), ("x", 0));
    }
}
