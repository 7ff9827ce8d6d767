//! Live views: the Prometheus endpoints given with `--watch` (a pipeline's
//! `--metrics-listen`, each node's `metrics_listen`) scraped every second, rendered on
//! the server into one HTML panel, and pushed to every open `/live` page over
//! server-sent events. A page without JavaScript shows the same panel and reloads itself.
//!
//! One scraper serves every viewer: the endpoints see one request a second whatever the
//! number of open pages.

pub(crate) mod prom;
mod recent;
mod scrape;
mod view;

pub(crate) use scrape::Target;

use crate::config::LogSink;
use crate::markup::{esc, page_with_head, plain_page, HtmlTable};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use view::{Reading, TargetView};

/// How often the endpoints are scraped.
const PERIOD: Duration = Duration::from_secs(1);
/// How long one scrape may take.
const DEADLINE: Duration = Duration::from_millis(800);
/// How far back the live page plots, kept in memory only (Prometheus keeps the rest).
const KEEP: Duration = Duration::from_secs(600);

/// The endpoints and the newest rendered panel.
pub(crate) struct LiveHub {
    targets: Vec<Target>,
    panel: watch::Sender<String>,
    log: LogSink,
}

/// What the live handlers read from the server's state: the hub, if anything is watched.
#[derive(Clone)]
pub(crate) struct Live(pub(crate) Option<Arc<LiveHub>>);

impl LiveHub {
    pub(crate) fn new(targets: Vec<Target>, log: LogSink) -> LiveHub {
        let waiting = format!(
            "<p class=\"hint\">Waiting for the first scrape of {} endpoint(s)…</p>",
            targets.len()
        );
        LiveHub {
            targets,
            panel: watch::channel(waiting).0,
            log,
        }
    }
}

/// Starts the scraper when there is anything to watch (inside the server's runtime).
pub(crate) fn start(live: &Live) {
    if let Some(hub) = &live.0 {
        tokio::spawn(scrape_forever(Arc::clone(hub)));
    }
}

async fn scrape_forever(hub: Arc<LiveHub>) {
    let mut previous: Vec<Option<Reading>> = vec![None; hub.targets.len()];
    // Endpoints count as down until first read, so one that is not up yet when the
    // command starts its nodes makes no noise; each change after that is logged once.
    let mut down: Vec<bool> = vec![true; hub.targets.len()];
    let mut recent = recent::Recent::new(KEEP);
    let started = Instant::now();
    let mut tick = tokio::time::interval(PERIOD);
    loop {
        tick.tick().await;
        let fetches = hub.targets.iter().map(|t| t.fetch(DEADLINE));
        let bodies = futures_util::future::join_all(fetches).await;
        let mut views = Vec::with_capacity(bodies.len());
        for (i, body) in bodies.into_iter().enumerate() {
            let (url, name) = (&hub.targets[i].url, &hub.targets[i].name);
            let parsed = body
                .map_err(|e| e.to_string())
                .and_then(|b| prom::parse_exposition(&b));
            let v = match parsed {
                Ok(samples) => {
                    let now = Reading {
                        at: Instant::now(),
                        samples,
                    };
                    let v = view::view(name, previous[i].as_ref(), &now);
                    previous[i] = Some(now);
                    v
                }
                Err(e) => {
                    previous[i] = None;
                    TargetView {
                        name: name.clone(),
                        error: Some(e),
                        tiles: Vec::new(),
                        node: Default::default(),
                    }
                }
            };
            if v.error.is_some() != down[i] {
                down[i] = v.error.is_some();
                let what = v
                    .error
                    .as_deref()
                    .map_or("up".to_string(), |e| format!("unreadable: {e}"));
                (hub.log)(&format!("dyno serve: watch {name} ({url}): {what}"));
            }
            views.push(v);
        }
        recent.push(started.elapsed().as_secs_f64(), &views);
        for v in &mut views {
            v.node.adopted_rate = recent.adoption_rate(&v.name);
        }
        let mut panel = render_panel(&views, dyno_model::now_unix());
        panel.push_str(&recent.render());
        hub.panel.send_replace(panel.replace('\r', ""));
    }
}

/// The live panel: a summary row per endpoint, then each endpoint's tiles.
fn render_panel(views: &[TargetView], now: f64) -> String {
    let num =
        |v: Option<f64>, decimals: usize| v.map_or("-".to_string(), |v| format!("{v:.decimals$}"));
    let mut summary = HtmlTable::new(
        "live-nodes",
        &[
            ("Endpoint", false),
            ("State", false),
            ("TPS", true),
            ("Height", true),
            ("Blocks adopted", true),
            ("Adopted/s (10 s)", true),
            ("Blocks produced", true),
        ],
    );
    for v in views {
        let state = match &v.error {
            None => "<span class=\"status-complete\">up</span>".to_string(),
            Some(e) => format!("<span class=\"down\">down: {}</span>", esc(e)),
        };
        let n = &v.node;
        summary.row(vec![
            esc(&v.name),
            state,
            num(n.tps, 0),
            num(n.height, 0),
            num(n.adopted, 0),
            num(n.adopted_rate, 2),
            num(n.blocks, 0),
        ]);
    }
    let t = dyno_model::format_timestamp(now);
    let mut out = format!(
        "<p class=\"hint\">Scraped at {} UTC, every second.</p>\n",
        &t[11..19]
    );
    out.push_str(&summary.render());
    for v in views.iter().filter(|v| !v.tiles.is_empty()) {
        out.push_str(&format!("<h2>Tiles of {}</h2>\n", esc(&v.name)));
        let mut tiles = HtmlTable::new(
            "live-tiles",
            &[
                ("Tile", false),
                ("Up", false),
                ("Busy", true),
                ("", false),
                ("Backpressure", true),
                ("Now", false),
            ],
        );
        for t in &v.tiles {
            let pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.1} %", x * 100.0));
            tiles.row(vec![
                esc(&t.name),
                if t.up {
                    "yes".into()
                } else {
                    "<span class=\"down\">no</span>".into()
                },
                pct(t.busy),
                format!(
                    "<meter min=\"0\" max=\"1\" value=\"{:.3}\"></meter>",
                    t.busy.unwrap_or(0.0)
                ),
                pct(t.backpressure),
                if t.in_backpressure {
                    "<span class=\"backp\">backpressured</span>".into()
                } else {
                    String::new()
                },
            ]);
        }
        out.push_str(&tiles.render());
    }
    // An SSE data field cannot hold a carriage return.
    out.replace('\r', "")
}

/// `/live`: the panel as it is now; with scripts on it follows the event stream, without
/// them it reloads every few seconds.
pub(crate) async fn page(State(live): State<Live>) -> Response {
    let Some(hub) = live.0.as_ref() else {
        let body = "<p>Nothing is watched. Start the pipeline or nodes with their metrics \
            endpoint on, and point <code>dyno serve</code> at it:</p>\n\
            <pre>dyno pipeline bench --metrics-listen 7999 ...\n\
            dyno serve --watch http://127.0.0.1:7999/metrics</pre>\n\
            <p>Give <code>--watch</code> once per node to see a cluster's nodes side by side \
            (each node's <code>metrics_listen</code> address).</p>\n";
        return plain_page(StatusCode::OK, "Live", "/live", body);
    };
    let panel = hub.panel.borrow().clone();
    let head = "<script src=\"/assets/live.js\" defer></script>\n\
                <noscript><meta http-equiv=\"refresh\" content=\"3\"></noscript>\n";
    let body = format!(
        "<p class=\"hint\">Following {} endpoint(s): <span id=\"live-state\">connecting…</span></p>\n\
         <div id=\"answer\"><div id=\"live\">{panel}</div></div>\n",
        hub.targets.len()
    );
    Html(page_with_head("Live", "/live", head, &body)).into_response()
}

/// `/live/events`: the panel as server-sent events (`event: panel`), the current one
/// first, then each new one.
pub(crate) async fn events(State(live): State<Live>) -> Response {
    let Some(hub) = live.0.as_ref() else {
        return plain_page(
            StatusCode::NOT_FOUND,
            "Not found",
            "/live",
            "<p>Nothing is watched.</p>",
        );
    };
    let rx = hub.panel.subscribe();
    let stream = futures_util::stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first && rx.changed().await.is_err() {
            return None;
        }
        let panel = rx.borrow_and_update().clone();
        let event = Event::default().event("panel").data(panel);
        Some((Ok::<_, Infallible>(event), (rx, false)))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use view::{NodeView, TileView};

    #[test]
    fn the_panel_escapes_what_endpoints_send_and_holds_no_carriage_return() {
        let v = TargetView {
            name: "http://127.0.0.1:1/metrics".into(),
            error: None,
            tiles: vec![TileView {
                name: "<b>\r\nverify".into(),
                up: true,
                busy: Some(0.5),
                backpressure: Some(0.25),
                in_backpressure: true,
            }],
            node: NodeView {
                tps: Some(1234.4),
                ..NodeView::default()
            },
        };
        let down = TargetView {
            name: "node-1".into(),
            error: Some("cannot connect: refused".into()),
            tiles: Vec::new(),
            node: NodeView::default(),
        };
        let html = render_panel(&[v, down], 1_795_000_000.0);
        assert!(html.contains("&lt;b&gt;") && !html.contains("<b>"));
        assert!(!html.contains('\r'));
        assert!(html.contains("<td class=\"num\">1234</td>"));
        assert!(
            html.contains("50.0 %") && html.contains("25.0 %") && html.contains("backpressured")
        );
        assert!(html.contains("down: cannot connect: refused"));
    }
}
