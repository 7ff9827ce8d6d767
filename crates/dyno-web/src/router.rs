//! Routes: each handler reads the store on the blocking pool through a page module and
//! answers with the page or an error page.

use crate::access;
use crate::live;
use crate::markup::{LIVE_SCRIPT, STYLESHEET};
use crate::pages::{bisect, compare, comparison, fleet, history, run, runs};
use crate::state::{AppState, PageError};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// Nothing on a page may come from elsewhere; the live page's script is the only script
/// and it only talks back to this server. No page may be framed (the key form least of
/// all: a framing page could trick a visitor into typing the key into it).
const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; \
                   connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
                   form-action 'self'; frame-ancestors 'none'";

/// A command's report: a complete document with its own inline stylesheet, framed by
/// nobody either.
const REPORT_CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

/// The app's routes over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(runs_page))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/report", get(report_page))
        .route("/history", get(history_page))
        .route("/compare", get(compare_page))
        .route("/bisect/{id}", get(bisect_page))
        .route("/fleet", get(fleet_page))
        .route("/live", get(live::page))
        .route("/live/events", get(live::events))
        .route("/assets/dyno.css", get(|| asset("text/css", &STYLESHEET)))
        .route(
            "/assets/live.js",
            get(|| asset("text/javascript", LIVE_SCRIPT)),
        )
        .route(
            "/login",
            post(access::login).with_state(Arc::clone(&state.gate)),
        )
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.gate),
            access::gate,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(state)
}

async fn security_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    // A page that set its own policy (a command's self-contained report) keeps it.
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CSP));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // For browsers that predate `frame-ancestors`.
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// The page, or the error page for `uri`.
pub(crate) fn respond(state: &AppState, uri: &Uri, page: Result<String, PageError>) -> Response {
    match page {
        Ok(html) => Html(html).into_response(),
        Err(e) => e.into_page(state, uri.path()),
    }
}

async fn not_found(State(state): State<Arc<AppState>>, uri: Uri) -> Response {
    let what = format!("There is no page at {}.", uri.path());
    respond(&state, &uri, Err(PageError::NotFound(what)))
}

async fn runs_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Query(q): Query<runs::RunsQuery>,
) -> Response {
    let page = state.read(move |_, store| runs::render(store, &q)).await;
    respond(&state, &uri, page)
}

/// A run id from the path; anything that is not one is a run that does not exist.
fn run_id(raw: &str) -> Result<i64, PageError> {
    raw.parse()
        .map_err(|_| PageError::NotFound(format!("There is no run {raw:?}.")))
}

async fn run_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Path(id): Path<String>,
) -> Response {
    let page = match run_id(&id) {
        Ok(id) => state.read(move |s, store| run::render(s, store, id)).await,
        Err(e) => Err(e),
    };
    respond(&state, &uri, page)
}

async fn report_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Path(id): Path<String>,
) -> Response {
    let page = match run_id(&id) {
        Ok(id) => {
            state
                .read(move |s, store| run::full_report(s, store, id))
                .await
        }
        Err(e) => Err(e),
    };
    match page {
        // A command's report is a complete document with its own inline stylesheet.
        Ok(html) => {
            let mut r = Html(html).into_response();
            r.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(REPORT_CSP),
            );
            r
        }
        Err(e) => e.into_page(&state, uri.path()),
    }
}

async fn history_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Query(q): Query<history::HistoryParams>,
) -> Response {
    let page = state.read(move |_, store| history::render(store, &q)).await;
    respond(&state, &uri, page)
}

/// The comparison list, or one comparison (`?id=`).
async fn compare_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Query(q): Query<CompareParams>,
) -> Response {
    let page = match q.id.filter(|id| !id.trim().is_empty()) {
        Some(id) => {
            state
                .read(move |_, store| comparison::render(store, id.trim()))
                .await
        }
        None => state.read(|_, store| compare::render(store)).await,
    };
    respond(&state, &uri, page)
}

async fn bisect_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Path(id): Path<String>,
) -> Response {
    let page = state
        .read(move |s, store| bisect::render(s, store, &id))
        .await;
    respond(&state, &uri, page)
}

#[derive(serde::Deserialize)]
struct CompareParams {
    id: Option<String>,
}

async fn fleet_page(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    Query(q): Query<fleet::FleetParams>,
) -> Response {
    let page = state.read(move |_, store| fleet::render(store, &q)).await;
    respond(&state, &uri, page)
}
