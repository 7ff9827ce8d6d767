//! What every handler shares: the store connection, the log sink, the plugged-in
//! reports and the live views; and how a page fails.

use crate::access::Gate;
use crate::config::{Config, FullReport, LogSink};
use crate::live::{Live, LiveHub, Target};
use crate::markup;
use axum::extract::FromRef;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use dyno_store::{Store, StoreError};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The server's shared state.
pub(crate) struct AppState {
    /// The store location (a PostgreSQL URL has no password).
    pub path: PathBuf,
    /// One read-only connection, opened on first use and dropped after an error so the
    /// next page opens a fresh one (a PostgreSQL server that restarted, a file that was
    /// replaced). Store calls block, so they run on the blocking pool, one at a time.
    store: Mutex<Option<Store>>,
    /// The commands' full reports.
    pub reports: Option<Arc<dyn FullReport>>,
    /// Log lines.
    pub log: LogSink,
    /// The live views; `None` without `--watch`.
    pub live: Live,
    /// Who may read: the `Host` names answered to, and the access key.
    pub gate: Arc<Gate>,
}

impl AppState {
    pub(crate) fn new(config: Config, targets: Vec<Target>, gate: Gate) -> AppState {
        AppState {
            gate: Arc::new(gate),
            path: config.store,
            store: Mutex::new(None),
            reports: config.reports,
            live: Live(
                (!targets.is_empty())
                    .then(|| Arc::new(LiveHub::new(targets, Arc::clone(&config.log)))),
            ),
            log: config.log,
        }
    }

    /// Runs `read` against the store on the blocking pool.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, read: F) -> Result<T, PageError>
    where
        T: Send + 'static,
        F: FnOnce(&AppState, &Store) -> Result<T, PageError> + Send + 'static,
    {
        let state = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let mut guard = state.store.lock().unwrap_or_else(|p| p.into_inner());
            if guard.is_none() {
                *guard = Some(Store::open_read_only(&state.path).map_err(PageError::Store)?);
            }
            let store = guard.as_ref().expect("opened above");
            let result = read(&state, store);
            // A failed read may have broken the connection; a missing run or metric did not.
            if matches!(result, Err(PageError::Store(_))) {
                *guard = None;
            }
            result
        })
        .await;
        joined.unwrap_or_else(|e| Err(PageError::Internal(format!("page failed: {e}"))))
    }
}

impl FromRef<Arc<AppState>> for Live {
    fn from_ref(state: &Arc<AppState>) -> Live {
        state.live.clone()
    }
}

/// Why a page could not be shown.
#[derive(Debug)]
pub(crate) enum PageError {
    /// Nothing of that name or id: a 404 page with a link back.
    NotFound(String),
    /// A query parameter that makes no sense: 400.
    BadRequest(String),
    /// The store failed (missing, corrupt, unreachable): a 500 page and a log line.
    Store(StoreError),
    /// Something else failed: a 500 page and a log line.
    Internal(String),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::NotFound(t) | PageError::BadRequest(t) | PageError::Internal(t) => {
                f.write_str(t)
            }
            PageError::Store(e) => write!(f, "results store: {e}"),
        }
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownRun(id) => PageError::NotFound(format!("There is no run {id}.")),
            StoreError::NoSuchMetric { metric, .. } => {
                PageError::NotFound(format!("No run in the store measured a metric {metric:?}."))
            }
            e => PageError::Store(e),
        }
    }
}

impl PageError {
    /// The error page; failures that are not the visitor's are logged with `path`.
    pub(crate) fn into_page(self, state: &AppState, path: &str) -> Response {
        let (code, title, text) = match self {
            PageError::NotFound(t) => (StatusCode::NOT_FOUND, "Not found", t),
            PageError::BadRequest(t) => (StatusCode::BAD_REQUEST, "Bad request", t),
            PageError::Store(e) => {
                (state.log)(&format!("dyno serve: GET {path}: results store: {e}"));
                let text = format!(
                    "The results store {} could not be read: {e}. Nothing was written to it.",
                    state.path.display()
                );
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Results store error",
                    text,
                )
            }
            PageError::Internal(e) => {
                (state.log)(&format!("dyno serve: GET {path}: {e}"));
                (StatusCode::INTERNAL_SERVER_ERROR, "Internal error", e)
            }
        };
        let body = format!(
            "<p class=\"error\">{}</p>\n<p><a href=\"/\">Back to the runs</a></p>\n",
            markup::esc(&text)
        );
        (code, Html(markup::page(title, "", &body))).into_response()
    }
}
