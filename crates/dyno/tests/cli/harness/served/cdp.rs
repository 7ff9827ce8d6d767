//! Headless Chromium driven over the DevTools protocol: a browser process on a free
//! debugging port (killed when dropped), one page, and the few commands the browser test
//! needs (navigate, evaluate, click and wait for the next page, screenshot), over a
//! minimal WebSocket client (RFC 6455: masked text frames out, plain frames in).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a page may take to load on a busy machine.
const LOAD: Duration = Duration::from_secs(60);

/// A running headless browser with one page attached.
pub struct Browser {
    child: Child,
    ws: TcpStream,
    next_id: u64,
    /// Page loads finished so far (an event may come before the reply to the command
    /// that caused it).
    loads: u64,
    /// Console messages and log entries the pages produced, as text.
    pub console: Vec<String>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// Starts `browser` headless with a fresh profile under `profile`.
    pub fn start(browser: &Path, profile: &Path) -> Browser {
        let mut child = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1400,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "Chromium ended before it listened"
            );
            if let Some(rest) = line.trim().strip_prefix("DevTools listening on ws://") {
                let authority = rest.split('/').next().unwrap();
                break authority
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse::<u16>()
                    .unwrap();
            }
        };
        // Keep draining stderr so the browser never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = stderr.read_to_string(&mut sink);
        });
        let targets: Value = serde_json::from_str(&http_get(port, "/json/list")).unwrap();
        let page = targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .expect("a page target");
        let url = page["webSocketDebuggerUrl"].as_str().unwrap();
        let path = &url[url.find("/devtools").unwrap()..];
        let ws = handshake(port, path);
        let mut b = Browser {
            child,
            ws,
            next_id: 0,
            loads: 0,
            console: Vec::new(),
        };
        for m in ["Page.enable", "Runtime.enable", "Log.enable"] {
            b.call(m, json!({}));
        }
        b
    }

    /// Sends a command and returns its result, collecting events on the way.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        send(&mut self.ws, msg.as_bytes());
        loop {
            let v = self.receive();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// The next message; console and log events are recorded.
    fn receive(&mut self) -> Value {
        let v: Value = serde_json::from_slice(&read_message(&mut self.ws)).unwrap();
        match v["method"].as_str() {
            Some("Runtime.consoleAPICalled") => self.console.push(v["params"].to_string()),
            Some("Runtime.exceptionThrown") => self.console.push(v["params"].to_string()),
            Some("Log.entryAdded") => self.console.push(v["params"]["entry"].to_string()),
            Some("Page.loadEventFired") => self.loads += 1,
            _ => {}
        }
        v
    }

    /// Waits until more than `before` page loads have finished.
    fn wait_loaded(&mut self, before: u64) {
        let start = Instant::now();
        while self.loads <= before {
            assert!(start.elapsed() < LOAD, "no page load within {LOAD:?}");
            self.receive();
        }
    }

    /// Opens `url` and waits until it has loaded.
    pub fn open(&mut self, url: &str) {
        let before = self.loads;
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_loaded(before);
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "`{expr}`: {r}");
        r["result"]["value"].clone()
    }

    /// The page's URL.
    pub fn url(&mut self) -> String {
        self.eval("location.href").as_str().unwrap().to_string()
    }

    /// The text the page shows.
    pub fn text(&mut self) -> String {
        self.eval("document.body.innerText")
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Clicks the first link matched by CSS `selector` whose text contains `text`, as a
    /// user would, and waits for the page it leads to.
    pub fn click(&mut self, selector: &str, text: &str) {
        let find = format!(
            "[...document.querySelectorAll({sel})].find(e => e.textContent.includes({txt}))",
            sel = serde_json::to_string(selector).unwrap(),
            txt = serde_json::to_string(text).unwrap()
        );
        self.click_found(&find, &format!("a link {selector} with {text:?}"));
    }

    /// Clicks the element the JavaScript expression `find` yields and waits for the page
    /// it leads to. The click runs after the evaluation returns, so the navigation does
    /// not cut the evaluation short; nothing else is evaluated until the new page loaded.
    pub fn click_found(&mut self, find: &str, what: &str) {
        let before = self.loads;
        let found = self.eval(&format!(
            "(() => {{ const a = {find}; if (!a) return false; \
               setTimeout(() => a.click(), 0); return true; }})()"
        ));
        if found != true {
            // Only now is it safe to ask the page its address: once the click is queued,
            // an evaluation can meet the navigation and fail.
            panic!("no {what} on {}", self.url());
        }
        self.wait_loaded(before);
    }

    /// Lays the page out as a window `width` CSS pixels wide and `height` high (the
    /// browser's own window stays as it started).
    pub fn set_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// A PNG of the page as it is, the full page's height.
    pub fn screenshot(&mut self, png: &Path) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let bytes = base64_decode(r["data"].as_str().unwrap());
        assert!(bytes.starts_with(b"\x89PNG"));
        std::fs::write(png, bytes).unwrap();
    }
}

/// GETs `path` from the DevTools HTTP server (HTTP/1.1 only; it keeps the connection
/// open, so the body is read by its length).
fn http_get(port: u16, path: &str) -> String {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(LOAD)).unwrap();
    let mut w = s.try_clone().unwrap();
    write!(w, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut length = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

/// Opens a WebSocket to `path`; the server's accept key is not checked (it is local).
fn handshake(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(LOAD)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    s
}

/// One masked text frame.
fn send(s: &mut TcpStream, payload: &[u8]) {
    let mut frame = vec![0x81u8];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n < 65536 => {
            frame.push(0x80 | 126);
            frame.extend((n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend((n as u64).to_be_bytes());
        }
    }
    let mask = [0x12u8, 0x34, 0x56, 0x78];
    frame.extend(mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    s.write_all(&frame).unwrap();
}

/// One whole message (continuation frames joined; pings answered).
fn read_message(s: &mut TcpStream) -> Vec<u8> {
    let mut message = Vec::new();
    loop {
        let mut h = [0u8; 2];
        s.read_exact(&mut h).unwrap();
        let (fin, opcode) = (h[0] & 0x80 != 0, h[0] & 0x0f);
        let mut len = (h[1] & 0x7f) as u64;
        if len == 126 {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            len = u16::from_be_bytes(b) as u64;
        } else if len == 127 {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            len = u64::from_be_bytes(b);
        }
        let mut payload = vec![0u8; len as usize];
        s.read_exact(&mut payload).unwrap();
        match opcode {
            0x9 => {
                // Ping: answer with a pong carrying the same bytes.
                let mut pong = vec![0x8Au8, 0x80 | payload.len() as u8, 0, 0, 0, 0];
                pong.extend(&payload);
                s.write_all(&pong).unwrap();
            }
            0x8 => panic!("the browser closed the DevTools connection"),
            _ => {
                message.extend(payload);
                if fin {
                    return message;
                }
            }
        }
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, c)| n | value(*c) << (18 - 6 * i));
        let pad = chunk.iter().filter(|c| **c == b'=').count();
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // CDP pads its base64: a chunk is four characters, `=` standing for a missing byte.
        out.extend(&bytes[..3 - pad]);
    }
    out
}
