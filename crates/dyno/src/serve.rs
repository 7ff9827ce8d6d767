//! `dyno serve`: the results store in a browser (dyno-web), with the commands' own
//! reports plugged in, and live views of running pipelines and nodes.

use anyhow::Context as _;
use clap::Args;
use dyno_store::{Store, StoreError, StoredRun};
use dyno_web::WebError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `dyno serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    db: crate::db::DbArg,
    /// Where to listen: HOST:PORT, or a bare PORT on 127.0.0.1 (0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878", value_parser = parse_listen)]
    listen: SocketAddr,
    /// Allow --listen on an address other machines can reach; every page then needs the
    /// access key in --key-file (a browser asks for it once, a script sends
    /// `Authorization: Bearer KEY`).
    #[arg(long)]
    public: bool,
    /// The access key: a file holding one line of at least 16 characters, readable by
    /// you only (`chmod 600`). Required with --public; on loopback it guards the pages too.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate (PEM: the server's certificate, then its chain).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A host name a --public server answers to (repeatable), besides IP addresses,
    /// localhost and this machine's name: its DNS name, a reverse proxy's name.
    #[arg(long, value_name = "NAME")]
    server_name: Vec<String>,
    /// A Prometheus endpoint to show live at /live (repeatable): a pipeline's
    /// --metrics-listen, each node's metrics_listen. [NAME=]http://HOST:PORT/metrics.
    #[arg(long, value_name = "URL")]
    watch: Vec<String>,
}

pub(crate) fn parse_listen(spec: &str) -> Result<SocketAddr, String> {
    let spec = spec.trim();
    let full = match spec.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None if spec.chars().all(|c| c.is_ascii_digit()) => format!("127.0.0.1:{spec}"),
        None => spec.to_string(),
    };
    full.parse()
        .map_err(|_| format!("`{spec}` is not an address (use 127.0.0.1:7878 or 7878)"))
}

/// The commands' full reports besides a comparison's (which dyno-web gets from the
/// judge): `dyno compare bisect`'s report for its bisections, `dyno cluster report`'s
/// propagation report for cluster runs (while their node logs are still there), `dyno
/// results report`'s page (with a machine run's requirements) for the others.
struct CommandReports;

impl dyno_web::FullReport for CommandReports {
    fn report(&self, _store: &Store, run: &StoredRun) -> Result<Option<String>, WebError> {
        match run.info.command.as_str() {
            "cluster run" => dyno_cluster::stored::stored_html(run).map_err(failed),
            _ => Ok(crate::run_report::render(std::slice::from_ref(run))),
        }
        .map(Some)
    }

    fn answer(
        &self,
        _store: &Store,
        run: &StoredRun,
    ) -> Result<Option<dyno_report::Section>, WebError> {
        Ok(dyno_hw::stored_verdict_section(run))
    }

    fn bisect(&self, store: &Store, id: &str) -> Result<Option<dyno_web::BisectView>, WebError> {
        let Some(stored) = dyno_bisect::record::load(store, id).map_err(failed)? else {
            return Ok(None);
        };
        let json = dyno_bisect::BisectReport::of(&stored).json();
        serde_json::from_value(json).map(Some).map_err(failed)
    }
}

/// A report that cannot be made, as its page says: the error with its causes.
fn failed(e: impl Into<anyhow::Error>) -> WebError {
    WebError::Report(format!("{:#}", e.into()))
}

/// Starts `dyno serve` on a thread beside a command that runs a pipeline or a cluster
/// (`--serve ADDR`): the results store behind `db` and a live view of the `watch`
/// endpoints, until the command ends. Loopback only.
pub fn start_beside(
    listen: SocketAddr,
    db: &crate::db::DbArg,
    watch: Vec<String>,
) -> anyhow::Result<()> {
    let config = dyno_web::Config::new(db.path(), listen)
        .reports(Arc::new(CommandReports))
        .watch(watch)
        .log(Arc::new(|line: &str| errln!("{line}")));
    let server = dyno_web::Server::bind(config).map_err(|e| match e {
        e @ WebError::Bind { .. } => anyhow::Error::new(e).context(format!("--serve {listen}")),
        e => anyhow::anyhow!("--serve {listen}: {e}"),
    })?;
    errln!("live view: {}live", server.url());
    std::thread::Builder::new()
        .name("dyno-serve".into())
        .spawn(move || {
            if let Err(e) = server.run() {
                errln!("warning: --serve stopped: {e}");
            }
        })
        .context("starting --serve")?;
    Ok(())
}

/// Serves until interrupted.
pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let path = a.db.path();
    // A missing store is the user's mistake and stops here; a store that cannot be read
    // (corrupt, server down) is served anyway: its pages say what is wrong, and it may
    // come back.
    match Store::open_read_only(&path) {
        Err(e @ StoreError::Missing { .. }) => {
            anyhow::bail!(
                "{e}: no results yet? Run a dyno command first (`dyno machine`), or pass --db"
            )
        }
        // Serving cannot migrate it (serve never writes): say what does.
        Err(e @ StoreError::Older { .. }) => return Err(crate::db::classify(e)),
        Err(e) => errln!("warning: {e}; its pages will show the error"),
        Ok(_) => {}
    }
    let tls = a
        .tls_cert
        .zip(a.tls_key)
        .map(|(cert, key)| dyno_web::TlsPair { cert, key });
    let in_clear = a.public && tls.is_none();
    let config = dyno_web::Config {
        allow_remote: a.public,
        key_file: a.key_file,
        tls,
        server_names: a.server_name,
        ..dyno_web::Config::new(path.clone(), a.listen)
    }
    .reports(Arc::new(CommandReports))
    .watch(a.watch)
    .log(Arc::new(|line: &str| errln!("{line}")));
    let server = dyno_web::Server::bind(config).map_err(|e| match e {
        WebError::NotLoopback(_) => anyhow::anyhow!("--listen {}: {e}", a.listen),
        WebError::PublicWithoutKey => anyhow::anyhow!("--public needs --key-file FILE: {e}"),
        WebError::KeyFile { .. } => anyhow::anyhow!("--key-file: {e}"),
        WebError::Tls { .. } => anyhow::anyhow!("--tls-cert/--tls-key: {e}"),
        WebError::WatchUrl { .. } => anyhow::anyhow!("--watch: {e}"),
        // The I/O error stays in the chain: a port in use is a runtime failure (exit 3).
        e @ WebError::Bind { .. } => {
            anyhow::Error::new(e).context(format!("--listen {}", a.listen))
        }
        e => anyhow::anyhow!("--listen {}: {e}", a.listen),
    })?;
    if in_clear {
        errln!(
            "warning: --public without --tls-cert/--tls-key: the access key and the pages \
             cross the network unencrypted (serve HTTPS, or put a TLS proxy in front)"
        );
    }
    outln!("{}", server.url())?;
    errln!(
        "serving {} read-only at {} (Ctrl-C to stop)",
        path.display(),
        server.url()
    );
    server.run().context("dyno serve")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::parse_listen;

    #[test]
    fn bare_ports_mean_loopback() {
        assert_eq!(parse_listen("7878").unwrap().to_string(), "127.0.0.1:7878");
        assert_eq!(parse_listen(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_listen("0.0.0.0:80").unwrap().to_string(),
            "0.0.0.0:80"
        );
        assert!(parse_listen("localhost:1").is_err());
    }
}
