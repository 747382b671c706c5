"""The gateway's status page (src/gateway/status_page.html), checked by what headless Chromium
shows once the page's JS has run (`--dump-dom` after a virtual-time budget of a few polls).

  stub tests     the page served by status_stub.StatusStub with a JSON document the test
                 controls: every number shown must be the one in the JSON, the charts must
                 plot the series (gaps where a value is null), and a failed poll must say so
                 while keeping the last data on screen.
  real gateway   `test_status_page_real_gateway`: two simulated workers behind
                 `frugal gateway`, one of them killed; the page must show it ejected.

Chromium is /usr/bin/chromium (or FRUGAL_CHROMIUM); the tests skip only when it is missing.
The real-gateway test skips only when the model file is missing: the simulated workers still
read its vocabulary. A missing or misbehaving binary fails it.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import threading
import time
from contextlib import ExitStack
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from conftest import BIN, SMOLLM2_GGUF, require_file
from status_stub import PAGE, StatusStub, sample_status

CHROMIUM = Path(os.environ.get("FRUGAL_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_TIMEOUT_S = 60
# Virtual time: Chromium fast-forwards timers, so five 1 s polls take well under a second of
# wall time; network waits pause the virtual clock, so slow answers still arrive.
VIRTUAL_TIME_MS = 5000


# ---------------------------------------------------------------------------------------------
# the rendered DOM

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict, parent: "Node | None"):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list["Node"]:
        return [n for n in self.iter() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.classes)]

    def one(self, tag: str | None = None, cls: str | None = None) -> "Node":
        found = self.find_all(tag, cls)
        assert len(found) == 1, f"expected one <{tag or '*'} class={cls}>, found {len(found)}"
        return found[0]

    def by_id(self, id_: str) -> "Node | None":
        return next((n for n in self.iter() if n.attrs.get("id") == id_), None)

    def id_text(self, id_: str) -> str:
        n = self.by_id(id_)
        assert n is not None, f"no element #{id_} on the page"
        return n.text.strip()


class TreeBuilder(HTMLParser):
    """Chromium's serialization is well formed; this only has to know the void elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v or "") for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, {k: (v or "") for k, v in attrs}, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse_dom(html: str) -> Node:
    b = TreeBuilder()
    b.feed(html)
    b.close()
    return b.root


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    """render(url) -> the DOM as Chromium has it after VIRTUAL_TIME_MS of the page's life."""
    if not CHROMIUM.exists():
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium, or set "
                    "FRUGAL_CHROMIUM)")
    profiles = iter(range(1_000_000))

    def run(url: str) -> Node:
        # A fresh profile per run: a shared one is locked by a previous Chromium still exiting.
        profile = tmp_path_factory.mktemp(f"chromium{next(profiles)}")
        cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-first-run", f"--user-data-dir={profile}",
               f"--virtual-time-budget={VIRTUAL_TIME_MS}", "--dump-dom", url]
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=CHROMIUM_TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"chromium did not finish within {CHROMIUM_TIMEOUT_S} s: {' '.join(cmd)}")
        html = p.stdout.decode(errors="replace")
        assert p.returncode == 0 and "<body" in html, (
            f"chromium exited {p.returncode}; stderr tail:\n"
            f"{p.stderr.decode(errors='replace')[-2000:]}")
        return parse_dom(html)

    return run


# ---------------------------------------------------------------------------------------------
# what the page should show (the formats its JS promises)

def js_round(x: float) -> int:
    return math.floor(x + 0.5)  # Math.round; Python's round() rounds halves to even


def pct(f: float) -> str:
    return f"{js_round(f * 100)}%"


def ms(v: float | None) -> str:
    if v is None:
        return "–"
    if v < 10:
        return f"{v:.1f} ms"
    if v < 10000:
        return f"{js_round(v)} ms"
    return f"{v / 1000:.1f} s"


def parse_ms(text: str) -> float:
    """'912 ms' / '1.5 s' -> milliseconds."""
    m = re.fullmatch(r"([0-9.]+) (ms|s)", text)
    assert m, f"not a duration: {text!r}"
    return float(m.group(1)) * (1 if m.group(2) == "ms" else 1000)


def parse_pct(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)%", text)
    assert m, f"not a percentage: {text!r}"
    return float(m.group(1)) / 100


def worker_rows(dom: Node) -> dict[str, Node]:
    table = dom.by_id("workers")
    assert table is not None, "no #workers table"
    return {tr.attrs["data-worker"]: tr for tr in table.find_all("tr")
            if "data-worker" in tr.attrs}


def cell(row: Node, cls: str) -> str:
    return row.one("td", cls).text.strip()


def runs_of(values: list) -> list[list]:
    runs, run = [], []
    for v in values:
        if v is None:
            if run:
                runs.append(run)
            run = []
        else:
            run.append(v)
    return runs + ([run] if run else [])


def check_chart(dom: Node, chart_id: str, series: list[dict], key: str, parse_label) -> None:
    """The polylines hold exactly the non-null values, in time order, each at the height the
    chart's own y-axis labels give it, and spaced in x as their timestamps are."""
    svg = dom.by_id(chart_id)
    assert svg is not None and svg.tag == "svg", f"no svg#{chart_id}"
    lines = svg.find_all("polyline", "series-line")
    want_runs = runs_of([p[key] for p in series])
    assert [len(l.attrs["points"].split()) for l in lines] == [len(r) for r in want_runs], (
        f"#{chart_id}: polyline lengths vs the series' non-null runs {want_runs}")

    labels = [(parse_label(t.text), float(t.attrs["y"]))
              for t in svg.find_all("text", "y-label")]
    assert len(labels) >= 2, f"#{chart_id}: y axis has {len(labels)} labels"
    (v0, y0), (v1, y1) = min(labels), max(labels)
    assert y1 < y0, f"#{chart_id}: larger values must be drawn higher up: {labels}"

    points = [tuple(map(float, xy.split(","))) for l in lines for xy in l.attrs["points"].split()]
    present = [p for p in series if p[key] is not None]
    assert len(points) == len(present)
    for (x, y), p in zip(points, present):
        want_y = y0 + (p[key] - v0) * (y1 - y0) / (v1 - v0)
        assert abs(y - want_y) <= 1.0, (
            f"#{chart_id}: value {p[key]} at t={p['t']} drawn at y={y}, the axis puts it at "
            f"{want_y:.1f}")
    xs = [x for x, _ in points]
    ts = [p["t"] for p in present]
    assert xs == sorted(xs) and len(set(xs)) == len(xs), f"#{chart_id}: x not increasing: {xs}"
    per_s = (xs[-1] - xs[0]) / (ts[-1] - ts[0])
    for x, t in zip(xs, ts):
        assert abs(x - (xs[0] + (t - ts[0]) * per_s)) <= 1.0, (
            f"#{chart_id}: x positions {xs} are not proportional to the times {ts}")


# ---------------------------------------------------------------------------------------------
# the page against the stub

@pytest.fixture(scope="module")
def sample():
    return sample_status()


@pytest.fixture(scope="module")
def sample_dom(render, sample):
    with StatusStub(sample) as stub:
        return render(stub.url + "/status")


def test_page_is_embeddable_and_self_contained():
    text = PAGE.read_text(encoding="utf-8")
    assert ')FRUGALHTML"' not in text, "would end the C++ raw string that embeds the page"
    for ref in ("<link", "src=", "@import", "url("):
        assert ref not in text, f"the page must not load anything else ({ref!r} found)"
    assert "innerHTML" not in text and "insertAdjacentHTML" not in text, (
        "gateway data must reach the DOM as text, never as markup")


def test_workers_table_shows_the_json(sample_dom, sample):
    rows = worker_rows(sample_dom)
    assert list(rows) == [w["name"] for w in sample["workers"]]
    assert sample_dom.by_id("no-workers") is None
    for w in sample["workers"]:
        row = rows[w["name"]]
        assert cell(row, "name") == w["name"]
        assert row.one(cls="url").text == w["url"]
        state = row.one("td", "state")
        assert state.text.strip() == w["state"]
        assert f"state-{w['state']}" in state.classes
        assert f"state-{w['state']}" in row.classes
        assert cell(row, "queue") == str(w["queue"])
        assert cell(row, "in-flight") == str(w["in_flight"])
        assert cell(row, "backlog") == ms(w["backlog_ms"])
        assert cell(row, "share") == pct(w["share"])
        width = row.one(cls="bar-fill").attrs.get("style", "")
        assert re.search(r"width:\s*([0-9.]+)%", width), width
        assert abs(float(re.search(r"width:\s*([0-9.]+)%", width).group(1))
                   - 100 * w["share"]) < 0.01
        assert cell(row, "chosen") == str(w["chosen"])
        assert len(row.find_all(cls="simulated")) == (1 if w["simulated"] else 0), (
            f"worker {w['name']}: simulated badge shown iff simulated")
        assert cell(row, "last-error") == w["last_error"]
    assert "state-ejected" in rows["w1"].classes and "state-ejected" not in rows["w0"].classes


def test_header_and_tiles_show_the_json(sample_dom, sample):
    t = sample["totals"]
    assert sample_dom.id_text("policy") == sample["gateway"]["policy"]
    assert sample_dom.id_text("uptime") == "1 h 02 m"  # 3725.4 s
    assert sample_dom.id_text("conn") == "live"
    assert re.fullmatch(r"\d\d:\d\d:\d\d", sample_dom.id_text("updated"))
    assert sample_dom.id_text("p95-now") == ms(t["p95_ms_1m"])
    assert sample_dom.id_text("hit-rate-now") == pct(t["hit_rate"])
    assert sample_dom.id_text("cache-hits") == f"{t['cache_hits']} of {t['requests']} requests"
    assert sample_dom.id_text("rps-now") == f"{t['rps_1m']:.1f} req/s"
    # The cache audit's false-hit estimate, with its 95% interval (docs/cache.md "The audit").
    assert sample_dom.id_text("false-hit-rate") == "5.0%"
    assert sample_dom.id_text("cache-audits") == "2 of 40 audited, 95%: 1.4%–16.5%"
    assert sample_dom.id_text("errors") == str(t["errors"])
    assert sample_dom.id_text("retries") == str(t["retries"])
    assert sample_dom.id_text("requests") == str(t["requests"])


def test_charts_plot_the_series(sample_dom, sample):
    check_chart(sample_dom, "p95-chart", sample["series"], "p95_ms", parse_ms)
    check_chart(sample_dom, "hit-chart", sample["series"], "hit_rate", parse_pct)


def test_empty_status(render, sample):
    empty = dict(sample, workers=[], series=[], gateway=dict(sample["gateway"], cache=False),
                 totals=dict(sample["totals"], p95_ms_1m=None, requests=0, cache_audited=0,
                             cache_audit_disagreements=0, false_hit_rate=None,
                             false_hit_rate_95=None))
    with StatusStub(empty) as stub:
        dom = render(stub.url + "/status")
    assert dom.id_text("conn") == "live"
    assert dom.by_id("no-workers") is not None
    assert worker_rows(dom) == {}
    assert dom.id_text("p95-now") == "–"
    assert dom.id_text("cache-hits") == "cache off"
    assert dom.id_text("false-hit-rate") == "–"
    assert dom.id_text("cache-audits") == "no hit audited yet"
    for chart in ("p95-chart", "hit-chart"):
        assert dom.by_id(chart).find_all("polyline") == []


def test_names_and_urls_are_shown_as_text(render, sample):
    name = '<img src=x id=injected>w"&amp;'
    url = 'http://h:1/<b id="injected2">'
    hostile = dict(sample, workers=[dict(sample["workers"][0], name=name, url=url,
                                         last_error="<script>x</script>")])
    with StatusStub(hostile) as stub:
        dom = render(stub.url + "/status")
    row = worker_rows(dom)[name]
    assert cell(row, "name") == name
    assert row.one(cls="url").text == url
    assert cell(row, "last-error") == "<script>x</script>"
    assert dom.by_id("injected") is None and dom.by_id("injected2") is None


@pytest.mark.parametrize("good_polls,failure", [(0, "drop"), (1, "drop"), (1, "http503")])
def test_failed_poll_is_shown_and_keeps_the_last_data(render, sample, good_polls, failure):
    with StatusStub(sample, good_polls=good_polls, failure=failure) as stub:
        dom = render(stub.url + "/status")
        assert stub.polls > good_polls + 1, f"the page polled only {stub.polls} times"
    conn = dom.by_id("conn")
    assert conn.text.strip() == "cannot reach gateway"
    assert "conn-error" in conn.classes
    if good_polls == 0:
        assert worker_rows(dom) == {} and dom.id_text("updated") == "never"
    else:
        assert list(worker_rows(dom)) == ["w0", "w1"]
        assert dom.id_text("p95-now") == ms(sample["totals"]["p95_ms_1m"])
        assert re.fullmatch(r"\d\d:\d\d:\d\d", dom.id_text("updated"))
    if failure == "http503":
        assert dom.id_text("conn-detail") == "HTTP 503"


# ---------------------------------------------------------------------------------------------
# the page served by the real gateway

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):([0-9]+)")
STARTUP_TIMEOUT_S = 120
HTTP_TIMEOUT = httpx.Timeout(60, connect=10)


class Proc:
    """A `frugal` subcommand that prints `... listening on http://HOST:PORT` once it serves.

    (conftest.FrugalServer waits for the exact line of a model-backed `frugal serve`; a
    simulated worker and the gateway word theirs differently.)
    """

    def __init__(self, args, log_path: Path):
        self.cmd = [str(BIN)] + [str(a) for a in args]
        self.log_path = log_path
        self.lines: list[str] = []
        self.url = ""
        self._ready = threading.Event()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            m = LISTEN_RE.search(line)
            if m and not self._ready.is_set():
                host = "127.0.0.1" if m.group(1) == "0.0.0.0" else m.group(1)
                self.url = f"http://{host}:{m.group(2)}"
                self._ready.set()

    def tail(self) -> str:
        err = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
        return f"--- stdout ---\n{''.join(self.lines)[-3000:]}\n--- stderr ---\n{err}"

    def __enter__(self) -> "Proc":
        assert BIN.exists(), f"frugal binary not found at {BIN}; build it or set FRUGAL_BIN"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                pytest.fail(f"`{' '.join(self.cmd)}` never printed `listening on` "
                            f"(exit status {self.proc.returncode})\n{self.tail()}")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(2)
        self.proc.stdout.close()
        self._log.close()


def test_status_page_real_gateway(render, tmp_path):
    model = require_file(SMOLLM2_GGUF)
    with ExitStack() as stack:
        workers = [stack.enter_context(Proc(
            ["serve", "-m", model, "--simulate", "decode_ms=5", "--port", "0"],
            tmp_path / f"worker{i}.log")) for i in range(2)]
        gw = stack.enter_context(Proc(
            ["gateway", *[a for w in workers for a in ("--worker", w.url)], "--port", "0",
             "--no-cache", "--health-interval-ms", "200"], tmp_path / "gateway.log"))

        with httpx.Client(base_url=gw.url, timeout=HTTP_TIMEOUT) as http:
            page = http.get("/status")
            assert page.status_code == 200, f"GET /status: {page.status_code}\n{gw.tail()}"
            assert page.headers.get("content-type", "").startswith("text/html")
            assert page.text.strip() == PAGE.read_text(encoding="utf-8").strip(), (
                "the gateway does not serve src/gateway/status_page.html as it is now "
                "(a stale build?)")

            models = http.get("/v1/models")
            assert models.status_code == 200, f"GET /v1/models: {models.status_code}\n{gw.tail()}"
            model_id = models.json()["data"][0]["id"]
            for i in range(6):
                r = http.post("/v1/chat/completions", json={
                    "model": model_id, "max_tokens": 4, "temperature": 0,
                    "messages": [{"role": "user", "content": f"Say hello, number {i}."}]})
                assert r.status_code == 200, f"chat {i}: {r.status_code} {r.text}\n{gw.tail()}"

            # The workers are named w0, w1 in --worker order. The public status leaves their
            # addresses and errors out (only the admin sees them).
            killed = workers[1]
            killed.proc.send_signal(signal.SIGKILL)
            killed.proc.wait(10)
            # Ejection takes a few failed health checks (200 ms apart); waiting on the JSON
            # keeps the test from racing them, and the page is then checked on its own.
            deadline = time.monotonic() + 10
            states = {}
            while time.monotonic() < deadline:
                status = http.get("/status.json").json()
                states = {w["name"]: w["state"] for w in status["workers"]}
                if states.get("w1") == "ejected":
                    break
                time.sleep(0.25)
            assert states.get("w1") == "ejected", (
                f"killed worker not ejected after 10 s: {states}\n{gw.tail()}")
            assert status["gateway"]["redacted"] is True
            for w in status["workers"]:
                assert "url" not in w and "last_error" not in w, w

        dom = render(gw.url + "/status")
        assert dom.id_text("conn") == "live"
        assert dom.id_text("policy") == "p2c"
        rows = worker_rows(dom)
        assert len(rows) == 2, f"worker rows: {list(rows)}"
        assert set(rows) == {"w0", "w1"}, f"rows: {list(rows)}"
        for r in rows.values():  # no address on the public page
            assert r.one(cls="url").text.strip() == "", r.one(cls="url").text
        assert cell(rows["w0"], "state") == "healthy"
        assert cell(rows["w1"], "state") == "ejected"
        assert "state-ejected" in rows["w1"].classes
        shares = [parse_pct(cell(r, "share")) for r in rows.values()]
        assert abs(sum(shares) - 1) <= 0.02, f"shares {shares} do not add up to 100%"
        assert parse_ms(dom.id_text("p95-now")) > 0
