//! The PostgreSQL backend: one shared server holding the runs of a fleet of machines.
//!
//! The schema is the SQLite one (same migration list, PostgreSQL dialect). What differs is
//! how writers survive a server that goes away: every write is one transaction run by
//! [`Pg::transact`], which reconnects with exponential backoff and runs the whole
//! transaction again when the connection drops, for up to [`RECONNECT_LIMIT`]. A retried
//! transaction must not store anything twice when the first attempt did commit but its
//! acknowledgement was lost, so every write carries a key decided before the first
//! attempt: a new run its UUID, a batch of samples its batch UUID (recorded in
//! `sample_batches` in the same transaction), a copied run its UUID.

mod read;
mod write;

use crate::error::StoreError;
use crate::schema::{Found, MIGRATIONS, SCHEMA_VERSION};
use crate::url::{PgUrl, SslMode};
use postgres::{Client, Transaction};
use postgres_native_tls::MakeTlsConnector;
use std::cell::RefCell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a write keeps reconnecting to a server that went away before giving up.
pub(crate) const RECONNECT_LIMIT: Duration = Duration::from_secs(60);

/// First pause between reconnect attempts; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Advisory lock key taken while migrating ("dyno" in ASCII), so two dynos opening a new
/// database at once migrate it once.
const MIGRATION_LOCK: i64 = 0x6479_6e6f;

/// A connection to a PostgreSQL store. Interior mutability because the store's read
/// methods take `&self` (the client needs `&mut` for every query); a `Store` is used by
/// one thread at a time.
pub(crate) struct Pg {
    client: RefCell<Client>,
    config: postgres::Config,
    tls: Option<MakeTlsConnector>,
    /// The URL with the password hidden, as a path for [`StoreError`]'s path variants.
    pub(crate) shown: PathBuf,
    pub(crate) reconnect_limit: Duration,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg").field("url", &self.shown).finish()
    }
}

/// Why one attempt of a transaction failed.
pub(crate) enum Fail {
    /// The server or the connection: retried when transient.
    Pg(postgres::Error),
    /// The request itself is wrong (unknown run, metric conflict...): never retried.
    Store(StoreError),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

/// True for failures that reconnecting and retrying can cure: a closed connection, an I/O
/// error, a server shutting down or starting up, a serialisation failure or deadlock.
fn transient(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01");
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

impl Pg {
    /// Connects to `url` and checks (and unless `read_only`, creates or migrates) its
    /// schema.
    pub(crate) fn open(url: &str, read_only: bool) -> Result<Pg, StoreError> {
        let parsed = PgUrl::parse(url)?;
        let shown = parsed.shown.clone();
        let bad = |detail: String| StoreError::BadUrl {
            url: shown.clone(),
            detail,
        };
        let mut config: postgres::Config = parsed
            .client_url
            .parse()
            .map_err(|e: postgres::Error| bad(e.to_string()))?;
        if config.get_password().is_none() {
            // libpq's convention; it also lets a parent pass the password to children
            // without putting it on their command lines.
            if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
                config.password(pw.as_encoded_bytes());
            }
        }
        if config.get_user().is_none() {
            if let Some(user) = std::env::var("PGUSER")
                .ok()
                .or_else(|| std::env::var("USER").ok())
                .filter(|u| !u.is_empty())
            {
                config.user(&user);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let tls = tls_connector(&parsed, &bad)?;
        config.ssl_mode(match parsed.ssl_mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        let client = connect(&config, &tls).map_err(|e| connect_error(&shown, e))?;
        let pg = Pg {
            client: RefCell::new(client),
            config,
            tls,
            shown: PathBuf::from(shown),
            reconnect_limit: RECONNECT_LIMIT,
        };
        let found = pg.transact(|tx| Ok(inspect(tx)?))?;
        let version = crate::schema::check(found, &pg.shown)?;
        if read_only {
            return match found {
                Found::Empty => Err(StoreError::Missing {
                    path: pg.shown.clone(),
                }),
                _ if version == SCHEMA_VERSION => Ok(pg),
                // A dyno store of an older schema, as SQLite says it: reading does not
                // migrate, `dyno results migrate` does.
                _ => Err(StoreError::Older {
                    path: pg.shown.clone(),
                    found: version,
                    known: SCHEMA_VERSION,
                }),
            };
        }
        if version < SCHEMA_VERSION {
            pg.transact(|tx| migrate(tx, &pg.shown))?;
        }
        Ok(pg)
    }

    /// Runs `op` in one transaction and commits it, reconnecting and running it again
    /// while the failure is transient, for up to `reconnect_limit`.
    pub(crate) fn transact<T>(
        &self,
        mut op: impl FnMut(&mut Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            let attempt = {
                let mut client = self.client.borrow_mut();
                (|| -> Result<T, Fail> {
                    let mut tx = client.transaction()?;
                    let value = op(&mut tx)?;
                    tx.commit()?;
                    Ok(value)
                })()
            };
            let detail = match attempt {
                Ok(v) => return Ok(v),
                Err(Fail::Store(e)) => return Err(e),
                Err(Fail::Pg(e)) if !transient(&e) => return Err(self.error(e)),
                Err(Fail::Pg(e)) => e.to_string(),
            };
            // Reconnect until it works or the limit passes.
            let mut detail = detail;
            loop {
                if started.elapsed() >= self.reconnect_limit {
                    return Err(StoreError::ServerLost {
                        url: self.url(),
                        waited_s: started.elapsed().as_secs_f64(),
                        source: std::io::Error::new(std::io::ErrorKind::ConnectionAborted, detail),
                    });
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
                match connect(&self.config, &self.tls) {
                    Ok(c) => {
                        *self.client.borrow_mut() = c;
                        break;
                    }
                    Err(e) => detail = e.to_string(),
                }
            }
        }
    }

    /// A read-only snapshot transaction for reads that must not be retried half-way
    /// (exports stream what they read).
    pub(crate) fn client(&self) -> std::cell::RefMut<'_, Client> {
        self.client.borrow_mut()
    }

    /// The URL with the password hidden.
    pub(crate) fn url(&self) -> String {
        self.shown.to_string_lossy().into_owned()
    }

    /// Maps a PostgreSQL error on this store.
    pub(crate) fn error(&self, e: postgres::Error) -> StoreError {
        let detail = match e.as_db_error() {
            Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        StoreError::Postgres {
            url: self.url(),
            detail,
            source: e,
        }
    }
}

fn connect(
    config: &postgres::Config,
    tls: &Option<MakeTlsConnector>,
) -> Result<Client, postgres::Error> {
    match tls {
        Some(tls) => config.connect(tls.clone()),
        None => config.connect(postgres::NoTls),
    }
}

/// Tells a refused login from a server that cannot be reached.
fn connect_error(url: &str, e: postgres::Error) -> StoreError {
    let url = url.to_string();
    let detail = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    let login = e.as_db_error().is_some_and(|db| {
        let code = db.code().code();
        code.starts_with("28") || code == "3D000" || code == "42501"
    }) || detail.contains("password");
    if login {
        StoreError::Login { url, detail }
    } else {
        StoreError::Unreachable { url, detail }
    }
}

/// The TLS connector `sslmode` asks for (`None` for `disable`).
fn tls_connector(
    url: &PgUrl,
    bad: &dyn Fn(String) -> StoreError,
) -> Result<Option<MakeTlsConnector>, StoreError> {
    let mut builder = native_tls::TlsConnector::builder();
    match url.ssl_mode {
        SslMode::Disable => return Ok(None),
        // libpq's prefer and require encrypt without checking who answers.
        SslMode::Prefer | SslMode::Require => {
            builder
                .danger_accept_invalid_certs(true)
                .danger_accept_invalid_hostnames(true);
        }
        SslMode::VerifyCa => {
            builder.danger_accept_invalid_hostnames(true);
        }
        SslMode::VerifyFull => {}
    }
    if let Some(path) = &url.root_cert {
        let pem = std::fs::read(path).map_err(|e| bad(format!("sslrootcert={path}: {e}")))?;
        let cert = native_tls::Certificate::from_pem(&pem)
            .map_err(|e| bad(format!("sslrootcert={path}: {e}")))?;
        builder.add_root_certificate(cert);
    }
    let connector = builder
        .build()
        .map_err(|e| bad(format!("cannot set up TLS: {e}")))?;
    Ok(Some(MakeTlsConnector::new(connector)))
}

/// Classifies the database (its current schema) without writing to it.
fn inspect(tx: &mut Transaction<'_>) -> Result<Found, postgres::Error> {
    let tables: i64 = tx
        .query_one(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
            &[],
        )?
        .get(0);
    if tables == 0 {
        return Ok(Found::Empty);
    }
    let has_meta: bool = tx
        .query_one("SELECT to_regclass('dyno_meta') IS NOT NULL", &[])?
        .get(0);
    if !has_meta {
        return Ok(Found::Foreign);
    }
    let rows = tx.query(
        "SELECT key, value FROM dyno_meta WHERE key IN ('magic', 'schema_version')",
        &[],
    )?;
    let get = |k: &str| {
        rows.iter()
            .find(|r| r.get::<_, &str>(0) == k)
            .map(|r| r.get::<_, String>(1))
    };
    if get("magic").as_deref() != Some(crate::schema::MAGIC) {
        return Ok(Found::Foreign);
    }
    match get("schema_version").and_then(|v| v.parse().ok()) {
        Some(v) => Ok(Found::Store(v)),
        None => Ok(Found::Foreign),
    }
}

/// Brings the database up to [`SCHEMA_VERSION`] under an advisory lock (DDL is
/// transactional in PostgreSQL: a failed migration leaves nothing behind).
fn migrate(tx: &mut Transaction<'_>, shown: &std::path::Path) -> Result<(), Fail> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    // Another dyno may have migrated while we waited for the lock.
    let from = crate::schema::check(inspect(tx)?, shown)?;
    for (version, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.batch_execute(step.postgres)?;
        if version == 0 {
            tx.execute(
                "INSERT INTO dyno_meta (key, value) VALUES ('magic', $1)",
                &[&crate::schema::MAGIC],
            )?;
        }
    }
    tx.execute(
        "INSERT INTO dyno_meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&SCHEMA_VERSION.to_string()],
    )?;
    Ok(())
}
