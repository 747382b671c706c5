"""`frugal loadgen`, black box: against a stub OpenAI server written here (exact error and
cache-hit counts to compare with), against a real `frugal serve`, and with bad input.

The stub answers streamed chat completions the way a worker does (role chunk, content chunks,
usage chunk, `[DONE]`), fails every 10th request with HTTP 500, and says `X-Frugal-Cache: hit`
when the question's group (from the questions file, so a paraphrase counts as the same question)
was answered before: a perfect semantic cache, so its hit rate is the schedule's repeat share.
About 30 s in all.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from conftest import ROOT

QUESTIONS = ROOT / "tests" / "data" / "loadgen_questions.jsonl"
PREFIX = "frugal: error: "
FIELDS = {"name", "requests", "errors", "throughput_rps", "latency_p50_ms", "latency_p95_ms",
          "latency_p99_ms", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "cache_hit_rate", "hits",
          "wrong_hits", "wrong_hit_rate", "wrapped"}


def load_groups():
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


class Stub:
    """A threaded HTTP/1.1 server (keep-alive, chunked SSE) on 127.0.0.1 with its own counts."""

    def __init__(self, fail_every=10, wrong_every=0):
        self.group_of = {}
        for i, g in enumerate(load_groups()):
            for text in [g["question"], *g["paraphrases"]]:
                self.group_of[text] = i
        self.fail_every = fail_every
        # With wrong_every = k, every k-th hit serves another group's answer (a forced wrong
        # hit); misses and the other hits answer their own group's text.
        self.wrong_every = wrong_every
        self.wrong_served = 0
        self.lock = threading.Lock()
        self.posts = self.failed = self.answered = self.hits = 0
        self.answered_groups = set()
        self.bad = []  # requests that broke the contract, for the assertion message
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send_json(self, status, obj):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def chunk(self, data: bytes):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def do_GET(self):
                if self.path == "/v1/models":
                    self.send_json(200, {"object": "list", "data": [{"id": "stub-model"}]})
                else:
                    self.send_json(404, {"error": {"message": "no such path"}})

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = req["messages"][0]["content"]
                group = stub.group_of.get(content.rsplit("\n\n", 1)[-1])
                with stub.lock:
                    stub.posts += 1
                    n = stub.posts
                    ok_req = (group is not None and req.get("stream") is True
                              and req.get("stream_options") == {"include_usage": True}
                              and req.get("temperature") == 0 and req.get("model") == "stub-model"
                              and req.get("max_tokens") == (12 if "\n\n" in content else 4))
                    if not ok_req:
                        stub.bad.append(req)
                    fail = n % stub.fail_every == 0
                    if fail:
                        stub.failed += 1
                    else:
                        hit = group in stub.answered_groups
                        stub.answered_groups.add(group)
                        stub.answered += 1
                        stub.hits += hit
                        answer = ["Hello", " there"]
                        if stub.wrong_every:
                            served = group
                            if hit and stub.hits % stub.wrong_every == 0:
                                served = group + 1000  # another question's answer
                                stub.wrong_served += 1
                            answer = [f"Answer to question {served}", "."]
                if fail:
                    self.send_json(500, {"error": {"message": "stub failure", "type": "server_error"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("X-Frugal-Cache", "hit" if hit else "miss")
                self.end_headers()
                def delta(d):
                    return {"object": "chat.completion.chunk",
                            "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                self.chunk(b"data: %s\n\n" % json.dumps(delta({"role": "assistant", "content": ""})).encode())
                time.sleep(0.02)
                for piece in answer:
                    self.chunk(b"data: %s\n\n" % json.dumps(delta({"content": piece})).encode())
                    time.sleep(0.01)
                usage = {"object": "chat.completion.chunk", "choices": [],
                         "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}
                self.chunk(b"data: %s\n\ndata: [DONE]\n\n" % json.dumps(usage).encode())
                self.chunk(b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def loadgen_json(frugal, *args, timeout=90):
    p = frugal.run("loadgen", *args, "--json", timeout=timeout)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0, f"loadgen exited {p.returncode}; stderr: {err[-3000:]}"
    out = p.stdout.decode()
    return json.loads(out), err  # json.loads refuses anything but one JSON value


def check_schema(report, phase_names):
    assert set(report) == {"phases", "total", "target", "profile"}, set(report)
    assert [ph["name"] for ph in report["phases"]] == phase_names
    for ph in [*report["phases"], report["total"]]:
        assert set(ph) == FIELDS, ph
        for kind in ("latency", "ttft"):
            p50, p95, p99 = (ph[f"{kind}_p{q}_ms"] for q in (50, 95, 99))
            if p50 is not None:
                assert 0 <= p50 <= p95 <= p99, ph
    assert report["total"]["requests"] == sum(ph["requests"] for ph in report["phases"])
    assert report["total"]["errors"] == sum(ph["errors"] for ph in report["phases"])


def test_questions_file_is_a_mixed_english_chinese_set():
    groups = load_groups()
    assert len(groups) >= 150
    assert len({g["question"] for g in groups}) == len(groups), "duplicate questions"
    for g in groups:
        assert 2 <= len(g["paraphrases"]) <= 3, g
        assert g["question"] not in g["paraphrases"], g
    zh = sum(any(ord(c) > 0x2E80 for c in g["question"]) for g in groups) / len(groups)
    assert 0.15 <= zh <= 0.3, f"Chinese share {zh:.2f}"


def test_against_stub_counts_errors_hits_and_rates_exactly(frugal, tmp_path):
    plot, csv = tmp_path / "lat.html", tmp_path / "req.csv"
    rate, secs, factor = 5, 3, 2
    with Stub() as stub:
        report, err = loadgen_json(
            frugal, "--target", stub.url, "--questions", QUESTIONS, "--rate", rate,
            "--steady-seconds", secs, "--spike-seconds", secs, "--after-seconds", secs,
            "--spike-factor", factor, "--max-tokens", 4, "--timeout", 20, "--seed", 11,
            "--plot", plot, "--csv", csv)
    assert not stub.bad, f"requests off the contract: {stub.bad[:2]}"
    check_schema(report, ["steady", "spike", "recovery"])
    assert report["target"] == stub.url
    assert report["profile"]["model"] == "stub-model"
    assert "loadgen:" in err, "no progress lines on stderr"

    for ph, r in zip(report["phases"], [rate, rate * factor, rate]):
        expected = r * secs
        assert abs(ph["requests"] - expected) <= 3 * math.sqrt(expected) + 1, (ph, expected)
    total = report["total"]
    # Every request the stub saw is reported exactly once, and its errors are exactly the 500s.
    assert total["requests"] == stub.posts
    assert total["errors"] == stub.failed == stub.posts // 10
    assert total["cache_hit_rate"] == pytest.approx(stub.hits / stub.answered, abs=1e-4)
    assert abs(total["cache_hit_rate"] - 0.35) <= 0.15, total
    assert total["throughput_rps"] == pytest.approx(stub.answered / (3 * secs), abs=1e-3)
    # The stub sends content 20 ms after the headers and ends 20 ms later.
    assert 15 <= total["ttft_p50_ms"] < total["latency_p50_ms"], total

    html = plot.read_text()
    assert "<svg" in html and "<script" not in html
    assert html.count("<circle") == stub.posts
    rows = csv.read_text().splitlines()
    assert len(rows) == stub.posts + 1
    assert sum(",HTTP 500: stub failure," in r for r in rows) == stub.failed


def test_a_hit_serving_another_questions_answer_is_counted_wrong(frugal, tmp_path):
    """The stack table's wrong-hit accounting on a tiny run: the stub answers each question
    group with its own text, and every 3rd hit with another group's: exactly those are wrong."""
    csv = tmp_path / "req.csv"
    with Stub(fail_every=10**9, wrong_every=3) as stub:
        report, _ = loadgen_json(
            frugal, "--target", stub.url, "--questions", QUESTIONS, "--rate", 8,
            "--steady-seconds", 4, "--spike-seconds", 0, "--after-seconds", 0,
            "--repeat-share", 0.5, "--long-share", 0, "--timeout", 20, "--seed", 5, "--quiet",
            "--csv", csv)
    total = report["total"]
    assert stub.wrong_served >= 2, "the run was too short to force wrong hits"
    assert total["hits"] == stub.hits
    assert total["wrong_hits"] == stub.wrong_served
    assert total["wrong_hit_rate"] == pytest.approx(stub.wrong_served / stub.hits, abs=1e-4)
    header, *rows = csv.read_text().splitlines()
    recs = [dict(zip(header.split(","), r.split(","))) for r in rows]
    assert sum(r["wrong_hit"] == "1" for r in recs) == stub.wrong_served
    assert all(r["cache_hit"] == "1" for r in recs if r["wrong_hit"] == "1")


def test_zero_length_phases_are_left_out(frugal):
    with Stub(fail_every=10**9) as stub:
        report, _ = loadgen_json(
            frugal, "--target", stub.url + "/v1", "--questions", QUESTIONS, "--rate", 10,
            "--steady-seconds", 0, "--spike-seconds", 1, "--after-seconds", 0,
            "--spike-factor", 1, "--quiet", "--timeout", 20)
    check_schema(report, ["spike"])
    assert report["total"]["errors"] == 0
    assert report["total"]["requests"] == stub.posts > 0


def test_against_a_real_worker(frugal, frugal_server, smollm2_gguf, tmp_path):
    csv = tmp_path / "worker.csv"
    with frugal_server(smollm2_gguf) as srv:
        report, _ = loadgen_json(
            frugal, "--target", srv.base_url, "--questions", QUESTIONS, "--rate", 1,
            "--spike-factor", 2, "--steady-seconds", 2, "--spike-seconds", 2, "--after-seconds", 2,
            "--max-tokens", 4, "--quiet", "--csv", csv, "--timeout", 60)
    check_schema(report, ["steady", "spike", "recovery"])
    total = report["total"]
    assert total["requests"] > 0
    assert total["errors"] == 0, csv.read_text()
    assert total["cache_hit_rate"] == 0, "a worker has no cache"
    assert report["profile"]["model"] == smollm2_gguf.stem
    header, *rows = csv.read_text().splitlines()
    cols = header.split(",")
    for row in rows:
        rec = dict(zip(cols, row.split(",")))
        assert rec["status"] == "200", rec
        assert 0 < float(rec["ttft_ms"]) < float(rec["latency_ms"]), rec
        assert 1 <= int(rec["completion_tokens"]) <= (12 if rec["long"] == "1" else 4), rec


def test_conversations_against_a_real_worker_find_their_prefix(frugal, frugal_server,
                                                              smollm2_gguf, tmp_path):
    """--conversations: the system prompt and earlier turns go to a real worker, whose prefix
    cache then holds them; the report, CSV and plot have the turns."""
    csv, plot = tmp_path / "conv.csv", tmp_path / "conv.html"
    with frugal_server(smollm2_gguf) as srv:
        report, _ = loadgen_json(
            frugal, "--target", srv.base_url, "--questions", QUESTIONS, "--rate", 3,
            "--spike-factor", 1, "--steady-seconds", 4, "--spike-seconds", 0,
            "--after-seconds", 0, "--max-tokens", 8, "--conversations", "--turns", 3,
            "--new-conversation-share", 0.2, "--quiet", "--csv", csv, "--plot", plot,
            "--timeout", 60)
        load = httpx.get(srv.base_url + "/queue_depth",
                         headers={"accept": "application/json"}, timeout=10).json()
    total = report["total"]
    assert total["errors"] == 0, csv.read_text()
    assert report["profile"]["conversations"] is True
    assert report["profile"]["system_prompt_chars"] > 1000  # the shipped store policy
    turns = {t["turn"]: t for t in total["turns"]}
    assert turns[1]["requests"] > 0 and turns[2]["requests"] > 0, total["turns"]
    assert sum(t["requests"] for t in turns.values()) == total["requests"]
    # Every request after the first found at least the system prompt's blocks.
    assert load["prefix_cache_hits"] > (total["requests"] - 1) * 16 * 10, load
    header, *rows = csv.read_text().splitlines()
    cols = header.split(",")
    recs = [dict(zip(cols, row.split(","))) for row in rows]
    assert {int(r["turn"]) for r in recs} >= {1, 2}
    # A conversation's turns are numbered 1, 2, ... in send order.
    by_conv: dict[str, list[int]] = {}
    for r in recs:
        by_conv.setdefault(r["conversation"], []).append(int(r["turn"]))
    for turns_sent in by_conv.values():
        assert turns_sent == list(range(1, len(turns_sent) + 1)), by_conv
    assert "TTFT turn 2" in plot.read_text()


def closed_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("what,overrides", [
    ("unreachable target", {}),
    ("https target", {"--target": "https://127.0.0.1:{port}"}),
    ("negative rate", {"--rate": "-1"}),
    ("share above 1", {"--repeat-share": "1.5"}),
    ("empty profile", {"--steady-seconds": "0"}),
    ("missing questions", {"--questions": "/nonexistent/loadgen.jsonl"}),
    ("no target", {"--target": None}),
])
def test_bad_input_exits_2_with_one_line(frugal, what, overrides):
    flags = {"--target": "http://127.0.0.1:{port}", "--questions": str(QUESTIONS),
             "--steady-seconds": "1", "--spike-seconds": "0", "--after-seconds": "0"}
    flags.update(overrides)
    port = closed_port()
    args = [x for k, v in flags.items() if v is not None for x in (k, v.format(port=port))]
    p = frugal.run("loadgen", *args, timeout=30)
    err = p.stderr.decode(errors="replace").splitlines()
    assert p.returncode == 2, f"{what}: exit {p.returncode}, stderr {err}"
    assert len(err) == 1 and err[0].startswith(PREFIX), f"{what}: stderr {err}"
    assert p.stdout == b"", f"{what}: stdout {p.stdout[:200]!r}"
