//! The web view in a real browser: Debian's headless Chromium, driven over WebDriver by
//! `chromedriver`, against `ctxpack serve` and `ctxpack ui` on fixture repositories.
//! Screenshots of every page are saved under `target/ui-screenshots/`.
//!
//! `.ci/run` installs `chromium` and `chromium-driver`; under `CI=true` their absence fails
//! these tests, elsewhere they are skipped with a note. `CTXPACK_CHROMEDRIVER` names another
//! driver.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::serve::{Fixture, Server, ctxpack};

/// The driver to start, or `None` (with a note) when there is none outside CI.
fn chromedriver() -> Option<PathBuf> {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let path = std::env::var_os("CTXPACK_CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !in_ci,
        "CI=true but {} is missing: .ci/run must install chromium and chromium-driver",
        path.display()
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "note: skipping a browser test: install chromium and chromium-driver (as .ci/run does) or set CTXPACK_CHROMEDRIVER"
        );
    }
    None
}

/// A WebDriver session on a headless Chromium of its own.
struct Browser {
    driver: Child,
    client: Option<Client>,
    runtime: tokio::runtime::Runtime,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(driver: &Path) -> Browser {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.local_addr().expect("address").port()
        };
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().expect("tempdir");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": std::env::var("CTXPACK_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let client = runtime
            .block_on(
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(capabilities)
                    .connect(&format!("http://127.0.0.1:{port}")),
            )
            .expect("a WebDriver session");
        Browser {
            driver,
            client: Some(client),
            runtime,
            _profile: profile,
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("a session")
    }

    fn goto(&self, url: &str) {
        self.runtime
            .block_on(self.client().goto(url))
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
    }

    fn url(&self) -> String {
        self.runtime
            .block_on(self.client().current_url())
            .expect("the current address")
            .to_string()
    }

    /// Waits until a click's navigation has landed: the address contains `part` and the new
    /// document is fully parsed (an element of the old page may otherwise still answer).
    fn arrived(&self, part: &str) {
        for _ in 0..400 {
            let ready = self.script("return document.readyState;") == json!("complete");
            if ready && self.url().contains(part) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "no page at an address containing {part:?}; still at {}",
            self.url()
        );
    }

    fn all(&self, css: &str) -> Vec<fantoccini::elements::Element> {
        self.runtime
            .block_on(self.client().find_all(Locator::Css(css)))
            .unwrap_or_else(|e| panic!("{css}: {e}"))
    }

    /// Waits for the element `css` selects. A search that a navigation interrupts (the page a
    /// click submitted, or a redirect, still loading) is made again on the page that loads.
    fn one(&self, css: &str) -> fantoccini::elements::Element {
        for _ in 0..40 {
            match self
                .runtime
                .block_on(self.client().wait().for_element(Locator::Css(css)))
            {
                Err(fantoccini::error::CmdError::NotW3C(Value::String(message)))
                    if message == "aborted by navigation" =>
                {
                    std::thread::sleep(Duration::from_millis(25));
                }
                found => return found.unwrap_or_else(|e| panic!("{css} on {}: {e}", self.url())),
            }
        }
        panic!(
            "{css} on {}: every search was cut off by a navigation",
            self.url()
        )
    }

    fn text(&self, css: &str) -> String {
        let element = self.one(css);
        self.runtime.block_on(element.text()).expect("text")
    }

    fn attr(&self, element: &fantoccini::elements::Element, name: &str) -> Option<String> {
        self.runtime
            .block_on(element.attr(name))
            .expect("an attribute")
    }

    fn click(&self, css: &str) {
        let element = self.one(css);
        self.runtime.block_on(element.click()).expect("a click");
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.one(css);
        self.runtime.block_on(element.clear()).expect("cleared");
        self.runtime
            .block_on(element.send_keys(text))
            .expect("typed");
    }

    fn script(&self, source: &str) -> Value {
        self.runtime
            .block_on(self.client().execute(source, Vec::new()))
            .expect("a script runs")
    }

    /// Saves a screenshot of the whole page as `name.png`.
    fn screenshot(&self, name: &str) {
        // Size the window to the page, so the picture holds all of it.
        let height = self
            .script("return Math.min(document.documentElement.scrollHeight, 4000);")
            .as_u64()
            .unwrap_or(1000);
        self.runtime
            .block_on(
                self.client()
                    .set_window_size(1280, height.max(600) as u32 + 120),
            )
            .expect("resized");
        let png = self
            .runtime
            .block_on(self.client().screenshot())
            .expect("a screenshot");
        let path = screenshots().join(format!("{name}.png"));
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("mkdir");
        std::fs::write(&path, png).expect("saved");
        self.runtime
            .block_on(self.client().set_window_size(1280, 1000))
            .expect("resized");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Where screenshots go: `target/ui-screenshots`.
fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("ui-screenshots")
}

/// Tokens per file of a pack's JSON: its hits' and its dropped candidates'.
fn tokens_by_file(pack: &Value, key: &str) -> BTreeMap<String, u64> {
    let mut files = BTreeMap::new();
    for item in pack[key].as_array().expect("a list") {
        // A hit names its path; a dropped candidate only its citation (`path#Lx-Ly@sha`).
        let citation = item["citation"].as_str().expect("a citation");
        let path = item["path"]
            .as_str()
            .unwrap_or_else(|| citation.rsplit_once('#').map_or(citation, |(p, _)| p));
        *files.entry(path.to_owned()).or_insert(0) += item["tokens"].as_u64().expect("tokens");
    }
    files
}

/// A small evaluation report in `ctxpack eval --format json`'s shape.
fn report(dir: &Path) -> PathBuf {
    let mut results = Vec::new();
    for (budget, ctxpack, bm25) in [(1000, 0.55, 0.4), (2000, 0.81, 0.52), (8000, 0.95, 0.7)] {
        for (ranker, recall) in [("ctxpack", ctxpack), ("bm25", bm25)] {
            results.push(json!({"ranker": ranker, "budget": budget, "fileRecall": recall,
                "hitRate": recall, "mrr": recall / 2.0, "goldShare": recall / 3.0, "msPerPack": 20.0}));
        }
    }
    let report = json!({"tasks": 40, "selector": "coverage", "meter": "o200k", "ablate": [],
        "indexSeconds": {"first": 1.0, "medianAfter": 0.1}, "results": results});
    let path = dir.join("report.json");
    std::fs::write(&path, report.to_string()).expect("write");
    path
}

#[test]
fn the_web_view_shows_the_ledger_packs_drops_and_builds_packs() {
    let Some(driver) = chromedriver() else { return };
    let fx = Fixture::new();
    let report = report(fx.dir.path());
    let server: Server = fx.serve(&["--eval-report", report.to_str().expect("UTF-8")]);
    let [first, head] = fx.shas.clone();
    for sha in [&first, &head] {
        assert_eq!(server.index(fx.token("write"), sha).status, 200);
    }
    let read = fx.token("read");
    let pack = |goal: &str, budget: u64, at: &str| {
        // The budget covers the hits' text alone, so a small one must drop some of them.
        let body = json!({"goal": goal, "budget": budget, "at": at, "index": false,
            "budget_covers": "content"})
        .to_string();
        let answer = server.call("POST", "/v1/repos/app/pack", Some(read), &body);
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.headers["x-ctxpack-pack-id"].clone()
    };
    pack("how are budgets enforced", 8000, &head);
    pack("retry with exponential backoff", 8000, &head);
    let squeezed = pack("budget enforcement and retry backoff", 60, &first);
    let base = format!("http://{}", server.address);

    let browser = Browser::start(&driver);
    // Sign in: a token is exchanged for a session cookie the page's script cannot read.
    browser.goto(&format!("{base}/ui/"));
    browser.screenshot("login");
    browser.type_into("input[name=token]", read);
    browser.click("#login button");
    browser.one("#packs");
    assert_eq!(browser.script("return document.cookie;"), json!(""));
    // The ledger lists every pack, and filters by goal.
    assert_eq!(browser.all("#packs tbody tr").len(), 3);
    assert!(browser.text("#packs").contains("serve:read"));
    browser.screenshot("ledger");
    browser.type_into("#filters input[name=goal]", "RETRY WITH");
    browser.click("#filters button");
    browser.arrived("goal=RETRY");
    assert_eq!(browser.all("#packs tbody tr").len(), 1);
    assert!(
        browser
            .text("#packs")
            .contains("retry with exponential backoff")
    );

    // A pack: the budget bar has one segment per file, with the pack JSON's token counts.
    browser.goto(&format!("{base}/ui/repos/app/packs/{squeezed}"));
    let id = browser.text("#pack-id");
    assert_eq!(id, squeezed);
    let answer = server.call(
        "GET",
        &format!("/v1/repos/app/ledger/{id}?format=json&view=full"),
        Some(read),
        "",
    );
    assert_eq!(answer.status, 200, "{answer:?}");
    let json = answer.json();
    let segments = |kind: &str| -> BTreeMap<String, u64> {
        browser
            .all(&format!("svg#budget rect[data-kind={kind}]"))
            .iter()
            .map(|rect| {
                (
                    browser.attr(rect, "data-path").expect("a path"),
                    browser
                        .attr(rect, "data-tokens")
                        .expect("tokens")
                        .parse()
                        .expect("a number"),
                )
            })
            .collect()
    };
    let kept = tokens_by_file(&json, "hits");
    assert!(!kept.is_empty());
    assert_eq!(segments("kept"), kept);
    assert_eq!(
        browser.all("svg#budget rect[data-kind=kept]").len(),
        kept.len()
    );
    let dropped = tokens_by_file(&json, "dropped");
    assert!(!dropped.is_empty(), "a small budget drops candidates");
    assert_eq!(segments("dropped"), dropped);
    // The dropped list: one row per dropped candidate, with its reason.
    let reasons: Vec<String> = browser
        .all("#dropped td.reason")
        .iter()
        .map(|cell| browser.runtime.block_on(cell.text()).expect("text"))
        .collect();
    let expected: Vec<String> = json["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .map(|d| d["reason"].as_str().expect("a reason").to_owned())
        .collect();
    assert_eq!(reasons, expected);
    assert!(browser.text("#counters").contains("coverage-v4"));
    browser.screenshot("pack");
    // The copy button copies the pack's Markdown.
    browser.click("#copy");
    let copied = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        browser.text("#copy") == "Copied"
    });
    assert!(copied, "the copy button reports");
    // A citation opens its lines at the snapshot, marked.
    browser.click("a.citation");
    browser.one("#file");
    assert!(!browser.all("#file .line.marked").is_empty());
    browser.screenshot("file");

    // Pack the goal again at HEAD: the two packs side by side.
    browser.goto(&format!("{base}/ui/repos/app/packs/{squeezed}"));
    browser.click("#again");
    browser.one("#compare");
    assert!(browser.url().contains("/compare?a="));
    assert!(browser.text("main").contains(&head[..12]));
    browser.screenshot("compare");

    // Try a goal: the form builds and records a pack, then shows it.
    browser.goto(&format!("{base}/ui/repos/app/try"));
    browser.type_into("#try textarea[name=goal]", "least recently used cache");
    browser.type_into("#try input[name=budget]", "600");
    browser.screenshot("try");
    browser.click("#try button");
    assert_eq!(browser.text("#goal"), "least recently used cache");
    assert!(browser.text("main").contains("of 600 o200k used"));
    browser.goto(&format!("{base}/ui/repos/app/packs"));
    assert_eq!(browser.all("#packs tbody tr").len(), 5);

    // Quality at a glance: one line per ranker of the report.
    browser.goto(&format!("{base}/ui/quality"));
    assert_eq!(browser.all("svg#recall polyline").len(), 2);
    assert_eq!(browser.all("#quality tbody tr").len(), 6);
    browser.screenshot("quality");

    // Signing out ends the session.
    browser.goto(&format!("{base}/ui/repos/app/packs"));
    browser.click("header form button");
    browser.one("#login");
    browser.goto(&format!("{base}/ui/repos/app/packs"));
    browser.one("#login");
}

/// One raw request to `address`: the status and the body.
fn raw(address: &str, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, answer)
}

#[test]
fn repository_content_in_a_pack_page_is_inert() {
    let Some(driver) = chromedriver() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir
        .path()
        .canonicalize()
        .expect("canonical")
        .join("hostile");
    let evil = "// The pwned handler.\n\
                </code></pre></script><script>window.__pwned = 1;</script>\n\
                <img src=x onerror=\"window.__pwned = 2\"><svg onload=\"window.__pwned = 3\"></svg>\n\
                function pwnedHandler() { return '<iframe src=javascript:window.__pwned=4>'; }\n";
    ctxpack_testkit::Script::new()
        .write("src/pwned.js", evil)
        // A path that closes an attribute and opens a tag.
        .write(
            "src/x\"><img src=y onerror=\"window.__pwned=7\">.js",
            "// The pwned handler's twin.\nfunction pwnedTwin() { return 1; }\n",
        )
        .commit("<script>window.__pwned = 5</script>")
        .build()
        .checkout_at(&repo);
    let cwd = repo.to_str().expect("UTF-8");
    let goal = "<script>window.__pwned = 6</script> pwned handler";
    let (code, _, err) = ctxpack(&["pack", goal, "--cwd", cwd], &[]);
    assert_eq!(code, 0, "{err}");

    // `ctxpack ui` prints an address carrying this run's secret.
    let (stop, url) = ui(&["--cwd", cwd]);
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();

    // Without the secret, nothing; a foreign Host (DNS rebinding) and a cross-site form are
    // refused.
    let (status, _) = raw(
        &address,
        &format!(
            "GET /ui/repos/hostile/packs HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 401);
    let (status, _) = raw(
        &address,
        "GET /ui/ HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 421);
    let (status, _) = raw(
        &address,
        &format!(
            "POST /ui/repos/hostile/try HTTP/1.1\r\nHost: {address}\r\nOrigin: http://attacker.example\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\nConnection: close\r\n\r\ngoal=x"
        ),
    );
    assert_eq!(status, 403);

    let browser = Browser::start(&driver);
    browser.goto(&url);
    browser.one("#packs");
    assert!(
        !browser.url().contains("secret"),
        "the secret leaves the address bar"
    );
    // The secret opened one session; it opens no other.
    let path = url.trim_start_matches(&format!("http://{address}"));
    let (status, _) = raw(
        &address,
        &format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 401);
    browser.click("#packs tbody a");
    browser.one("#pack-id");
    // Everything the repository and the goal said is shown as text; none of it ran.
    assert_eq!(
        browser.script("return window.__pwned === undefined;"),
        json!(true)
    );
    assert!(
        browser
            .text("#goal")
            .contains("<script>window.__pwned = 6</script>")
    );
    assert!(
        browser.text("#files").contains("src/x\"><img src=y"),
        "the hostile path is shown as text"
    );
    let shown = browser.text("main");
    assert!(
        shown.contains("<img src=x onerror=\"window.__pwned = 2\">"),
        "{shown}"
    );
    assert!(
        shown.contains("</script><script>window.__pwned = 1;</script>"),
        "{shown}"
    );
    // Only the page's own script is loaded.
    assert_eq!(
        browser.script("return Array.from(document.scripts).map(s => s.src);"),
        json!([format!("http://{address}/ui/static/app.js")])
    );
    browser.screenshot("hostile");
    browser.click("a.citation");
    browser.one("#file");
    assert_eq!(
        browser.script("return window.__pwned === undefined;"),
        json!(true)
    );
    drop(browser);
    drop(stop);
}

/// Kills the child when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `ctxpack ui --no-open ARGS`; returns it and the address it printed.
fn ui(args: &[&str]) -> (Guard, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(["ui", "--no-open"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxpack ui starts");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("the address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("an address in {line:?}"))
        .to_owned();
    (Guard(child), url)
}

/// The screenshots in docs/ui.md: `ctxpack ui` over the repository `CTXPACK_UI_DOCS_REPO`
/// (packs already in its ledger) with the evaluation report `CTXPACK_UI_DOCS_REPORT`, saved
/// under `target/ui-screenshots/docs/`. Run on demand:
/// `CTXPACK_UI_DOCS_REPO=… CTXPACK_UI_DOCS_REPORT=… cargo test -p ctxpack --test it docs_screenshots -- --ignored`.
#[test]
#[ignore = "takes the screenshots of docs/ui.md on demand"]
fn docs_screenshots() {
    let driver = chromedriver().expect("chromedriver");
    let repo = std::env::var("CTXPACK_UI_DOCS_REPO").expect("CTXPACK_UI_DOCS_REPO");
    let report = std::env::var("CTXPACK_UI_DOCS_REPORT").expect("CTXPACK_UI_DOCS_REPORT");
    let (_stop, url) = ui(&["--cwd", &repo, "--eval-report", &report]);
    let base = url.split("/ui/").next().expect("the origin").to_owned();
    let browser = Browser::start(&driver);
    let shot = |name: &str| browser.screenshot(&format!("docs/{name}"));
    browser.goto(&url);
    browser.one("#packs");
    shot("ledger");
    // The newest pack that dropped something.
    let rows = browser.all("#packs tbody tr");
    let mut chosen = None;
    for row in &rows {
        let cells = browser.runtime.block_on(row.text()).expect("text");
        if !cells.trim_end().ends_with(" 0") {
            chosen = browser.attr(row, "data-id");
            break;
        }
    }
    let repo_name = browser
        .url()
        .split("/ui/repos/")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("a repository")
        .to_owned();
    let id = chosen
        .or_else(|| browser.attr(&rows[0], "data-id"))
        .expect("a pack");
    browser.goto(&format!("{base}/ui/repos/{repo_name}/packs/{id}"));
    browser.one("#pack-id");
    shot("pack");
    browser.click("a.citation");
    browser.one("#file");
    shot("file");
    browser.goto(&format!("{base}/ui/repos/{repo_name}/packs/{id}"));
    browser.click("#again");
    browser.one("#compare");
    shot("compare");
    browser.goto(&format!("{base}/ui/repos/{repo_name}/try"));
    browser.type_into("#try textarea[name=goal]", "where are secrets masked");
    browser.type_into("#try input[name=budget]", "3000");
    shot("try");
    browser.goto(&format!("{base}/ui/quality"));
    browser.one("#recall");
    shot("quality");
}

#[test]
fn a_server_refuses_cross_site_forms_and_holds_sessions_to_the_token_rate() {
    let fx = Fixture::new();
    let server = fx.serve(&["--rate-limit", "2"]);
    let origin = format!("http://{}", server.address);
    let form = format!("token={}", fx.token("read"));
    let login = |origin: &str| {
        server.request(
            "POST",
            "/ui/login",
            &[
                ("Origin", origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &form,
        )
    };
    assert_eq!(login("http://attacker.example").status, 403);
    let signed = login(&origin);
    assert_eq!(signed.status, 303, "{signed:?}");
    let cookie = signed.headers["set-cookie"].clone();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().expect("a cookie").to_owned();
    let statuses: Vec<u16> = (0..6)
        .map(|_| {
            server
                .request("GET", "/ui/repos/app/packs", &[("Cookie", &session)], "")
                .status
        })
        .collect();
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
    // Another repository's pages are not this token's.
    std::thread::sleep(Duration::from_millis(1100));
    let other = server.request("GET", "/ui/repos/other/packs", &[("Cookie", &session)], "");
    assert_eq!(other.status, 404, "{other:?}");
    assert!(other.headers["content-security-policy"].contains("default-src 'none'"));
}
