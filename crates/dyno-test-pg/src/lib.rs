//! A throwaway PostgreSQL server for tests: `initdb` in a temporary directory, the server
//! listening on a Unix socket in that directory only (no TCP port, so no clash), trust
//! authentication except for the role `pwuser` (password, for login tests). Stopped and
//! deleted by `Drop`, also when a test fails. `initdb` refuses to run as root, so under
//! root the server runs as the `postgres` user.
//!
//! Shared by dyno-store's tests and fleet bench and by the dyno CLI tests, as a
//! dev-dependency only. A server that cannot start is a skip, not a failure: the test
//! says why on standard error (the one place this crate prints, as a skipped test must).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running throwaway server.
pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// `(uid, gid)` to run the server as, when the tests run as root.
    run_as: Option<(u32, u32)>,
    child: Option<Child>,
}

/// The directory of `initdb`, `postgres` and `psql`, or `None` (with the reason).
fn bindir() -> Result<PathBuf, String> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && dir.join("initdb").exists() {
            return Ok(dir);
        }
    }
    // Debian's server package without the dev package: /usr/lib/postgresql/N/bin.
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no pg_config and no /usr/lib/postgresql".to_string())?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| "no initdb under /usr/lib/postgresql".into())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// uid and gid of the `postgres` user from /etc/passwd.
fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("postgres:"))?;
    let f: Vec<&str> = line.split(':').collect();
    Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?))
}

impl PgServer {
    /// Starts a server, or returns `None` after printing why PostgreSQL is not available
    /// (the caller skips its test). Panics when PostgreSQL is there but fails to start.
    pub fn start() -> Option<PgServer> {
        let bin = match bindir() {
            Ok(b) => b,
            Err(why) => {
                eprintln!("note: PostgreSQL not found ({why}); skipping this PostgreSQL test");
                return None;
            }
        };
        let run_as = if is_root() {
            match postgres_user() {
                Some(u) => Some(u),
                None => {
                    eprintln!("note: running as root and no postgres user; skipping");
                    return None;
                }
            }
        } else {
            None
        };
        // The server user must reach the directory: under root, TMPDIR may be private.
        let mut builder = tempfile::Builder::new();
        builder.prefix("dyno-pg");
        let dir = match run_as {
            Some(_) => builder.tempdir_in("/tmp"),
            None => builder.tempdir(),
        }
        .unwrap();
        let mut server = PgServer {
            dir,
            bin,
            run_as,
            child: None,
        };
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(server.dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args([
                "-U",
                "dyno",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(
            server.data().join("pg_hba.conf"),
            "local all pwuser scram-sha-256\nlocal all all trust\n",
        )
        .unwrap();
        server.start_again();
        server.psql(
            "postgres",
            "CREATE ROLE pwuser LOGIN PASSWORD 'right-password'",
        );
        Some(server)
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.run_as {
            c.uid(uid).gid(gid);
        }
        c.current_dir(self.dir.path());
        c
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory holding the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts the server (again, after [`PgServer::stop`]) and waits until it accepts
    /// connections.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "server already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .unwrap();
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(self.dir.path().join("server.log"), Some(uid), Some(gid))
                .unwrap();
        }
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .arg("-k")
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=", "-c", "fsync=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=60"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .arg("-h")
                .arg(self.dir.path())
                .args(["-U", "dyno", "-d", "postgres", "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                panic!("postgres exited with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres not ready: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (fast shutdown: open connections are closed) and waits for it.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = dyno_proc::signal_process(child.id(), dyno_proc::Signal::Int);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// A URL for database `db` as user `dyno` over the socket.
    pub fn url(&self, db: &str) -> String {
        self.url_as("dyno", None, db)
    }

    /// A URL for database `db` as `user` with an optional password.
    pub fn url_as(&self, user: &str, password: Option<&str>, db: &str) -> String {
        let host: String = self
            .dir
            .path()
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .map(|&b| {
                if b.is_ascii_alphanumeric() || b"._-".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let pw = password.map(|p| format!(":{p}")).unwrap_or_default();
        format!("postgresql://{user}{pw}@{host}/{db}?sslmode=disable")
    }

    /// Runs SQL with psql as the superuser `dyno`; panics on failure; returns stdout
    /// (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .arg("-h")
            .arg(self.dir.path())
            .args([
                "-U",
                "dyno",
                "-d",
                db,
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(["-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Creates database `name` and returns its URL.
    pub fn database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(name)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}
