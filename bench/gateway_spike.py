#!/usr/bin/env python3
"""The gateway's figures for docs/gateway.md, each measured side by side in one run.

  spike     the same 6x spike profile (frugal loadgen) through the gateway with each policy:
            round_robin, queue_weighted, least_cost, p2c; over 8 simulated GPU-like workers of
            mixed speed (--setup sim) and/or 3 real CPU workers, one made slow (--setup real)
  kill      p2c over simulated workers, every request streamed; one worker is SIGKILLed at the
            start of the spike and started again on the same port 10 s later: lost and truncated
            streams (each answer's token count against max_tokens), streams continued on another
            worker, time to ejection and to restoration (from the admin API, polled every 50 ms)
  cache     p2c with the embedded cache and 35% repeated/paraphrased questions: hit rate and the
            worker-seconds the hits saved
  overhead  added latency of the gateway on a cache miss against calling the worker directly
            (interleaved, same worker), and cache-hit throughput

Everything runs on this machine; simulated workers are a test instrument (frugal serve
--simulate) and every table says so. Output: a JSON file and markdown tables on stdout.

  .venv/bin/python bench/gateway_spike.py --all --out /tmp/gw_bench.json
"""
from __future__ import annotations

import argparse
import csv as csv_module
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
LISTEN = re.compile(r"listening on (http://[^\s:]+:(\d+))")
ADMIN = "bench-admin"

# Eight GPU-like workers of mixed speed: decode step ms for the whole batch.
SIM_DECODE_MS = [12, 12, 16, 16, 20, 24, 40, 60]


class Proc:
    def __init__(self, args, name):
        self.name = name
        self.args = [str(a) for a in args]
        self.p = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.time() + 180
        self.url = None
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            m = LISTEN.search(line)
            if m:
                self.url, self.port = m.group(1), int(m.group(2))
                break
        if not self.url:
            self.stop()
            raise RuntimeError(f"{name} did not start: {' '.join(self.args)}")
        threading.Thread(target=self.p.stdout.read, daemon=True).start()

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def get_json(url, path, headers=None, timeout=5):
    host, port = url[len("http://"):].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body) if body else None


def metric_value(url, name):
    """The sum of a counter's samples in /metrics (Prometheus text)."""
    u = url.replace("http://", "")
    host, port = u.split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"))


def wait_models(gw_url, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            s, j = get_json(gw_url, "/v1/models")
            if s == 200 and j["data"]:
                return j["data"][0]["id"]
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the gateway learnt no model")


def wait_idle(workers, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        busy = 0
        for w in workers:
            try:
                _, j = get_json(w.url, "/queue_depth", {"Accept": "application/json"})
                busy += j["waiting"] + j["running"]
            except OSError:
                pass
        if busy == 0:
            return
        time.sleep(0.2)


def start_sim_workers(frugal, decode_ms_list, jitter=0.1, max_batch=8):
    return [Proc([frugal, "serve", "-m", MODEL, "--port", 0, "-t", 1, "--simulate",
                  f"decode_ms={d},prefill_ms=0.05,max_batch={max_batch},jitter={jitter},seed={i}"], f"sim{i}")
            for i, d in enumerate(decode_ms_list)]


def start_real_workers(frugal):
    # Two normal workers and one made slow (f32 activations: 2-3x slower per token), 1 thread each.
    specs = [["-t", 1], ["-t", 1], ["-t", 1, "--activations", "f32"]]
    return [Proc([frugal, "serve", "-m", MODEL, "--port", 0, "--max-batch", 8, *s], f"real{i}")
            for i, s in enumerate(specs)]


def start_gateway(frugal, workers, policy, cache=False, extra=()):
    args = [frugal, "gateway", "--port", 0, "--policy", policy, "--admin-token", ADMIN]
    for i, w in enumerate(workers):
        args += ["--worker", f"w{i}={w.url}"]
    if not cache:
        args.append("--no-cache")
    return Proc(args + list(extra), f"gateway-{policy}")


def loadgen(frugal, target, a, seed=1, repeat_share=0.0, plot=None, csv=None):
    args = [frugal, "loadgen", "--target", target, "--rate", a.rate, "--spike-factor", a.spike_factor,
            "--steady-seconds", a.steady, "--spike-seconds", a.spike, "--after-seconds", a.after,
            "--max-tokens", a.max_tokens, "--repeat-share", repeat_share, "--seed", seed, "--json", "--quiet"]
    if plot:
        args += ["--plot", plot]
    if csv:
        args += ["--csv", csv]
    out = subprocess.run([str(x) for x in args], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def phase(report, name):
    for p in report["phases"]:
        if p["name"] == name:
            return p
    return {}


def run_spike(frugal, a, setup, rate):
    workers = start_sim_workers(frugal, SIM_DECODE_MS) if setup == "sim" else start_real_workers(frugal)
    a_local = argparse.Namespace(**vars(a))
    a_local.rate = rate
    results = {}
    try:
        for policy in a.policies:
            gw = start_gateway(frugal, workers, policy)
            try:
                wait_models(gw.url)
                plot = str(Path(a.plot_dir) / f"spike-{setup}-{policy}.html") if a.plot_dir else None
                rep = loadgen(frugal, gw.url, a_local, plot=plot)
                _, st = get_json(gw.url, "/admin/workers", {"Authorization": f"Bearer {ADMIN}"})
                rep["chosen"] = {w["name"]: w["chosen"] for w in st["workers"]}
                results[policy] = rep
                sp = phase(rep, "spike")
                print(f"  {setup} {policy:15s} spike p95 {sp.get('latency_p95_ms', 0):8.0f} ms  "
                      f"thr {sp.get('throughput_rps', 0):6.2f} rps  errors {sp.get('errors')}", file=sys.stderr)
            finally:
                gw.stop()
            wait_idle(workers)
    finally:
        for w in workers:
            w.stop()
    return results


def run_kill(frugal, a):
    workers = start_sim_workers(frugal, SIM_DECODE_MS)
    interval_ms = 1000
    gw = start_gateway(frugal, workers, "p2c", extra=["--health-interval-ms", interval_ms])
    events = {}
    try:
        wait_models(gw.url)
        victim = workers[0]
        result = {}

        # Every request streams (frugal loadgen); its CSV row says how many tokens it got.
        csv_path = Path(tempfile.mkdtemp()) / "kill.csv"

        def drive():
            result["report"] = loadgen(frugal, gw.url, a, seed=7, csv=str(csv_path))

        t = threading.Thread(target=drive)
        t.start()
        t0 = time.time()
        time.sleep(a.steady)  # the spike starts now
        # Killed while streams are in flight on it (the gateway's own count), so that some
        # streams break mid-answer; at most 5 s later whatever it holds.
        deadline = time.time() + 5
        while time.time() < deadline:
            _, st = get_json(gw.url, "/admin/workers", {"Authorization": f"Bearer {ADMIN}"})
            events["in_flight_at_kill"] = next(w["in_flight"] for w in st["workers"] if w["name"] == "w0")
            if events["in_flight_at_kill"] >= 2:
                break
            time.sleep(0.005)
        victim.stop(signal.SIGKILL)
        killed = time.time()
        events["killed_at_s"] = killed - t0
        restarted = None
        while t.is_alive():
            _, st = get_json(gw.url, "/admin/workers", {"Authorization": f"Bearer {ADMIN}"})
            state = next(w["state"] for w in st["workers"] if w["name"] == "w0")
            now = time.time()
            if state == "ejected" and "ejected_after_s" not in events:
                events["ejected_after_s"] = now - killed
            if restarted is None and now - killed >= 10:
                # Back on the same port: the gateway must find it again.
                for _ in range(50):
                    try:
                        workers[0] = Proc([frugal, "serve", "-m", MODEL, "--port", victim.port, "-t", 1, "--simulate",
                                           f"decode_ms={SIM_DECODE_MS[0]},prefill_ms=0.05,max_batch=8,jitter=0.1"], "sim0b")
                        break
                    except RuntimeError:
                        time.sleep(0.1)
                restarted = time.time()
            if restarted and state == "healthy" and "restored_after_s" not in events:
                events["restored_after_s"] = now - restarted
            time.sleep(0.05)
        t.join()
        rep = result["report"]
        events["health_interval_ms"] = interval_ms
        events["phases"] = rep["phases"]
        events["total"] = rep["total"]
        _, m = get_json(gw.url, "/status.json")
        events["retries"] = m["totals"]["retries"]
        # Lost: no answer or a stream that ended in an error event or without [DONE]. Truncated: a
        # stream that ended cleanly but short; a simulated answer is exactly max_tokens long
        # (3x for a long prompt), so any other count is a truncation.
        rows = list(csv_module.DictReader(csv_path.open()))
        lost = [r for r in rows if r["status"] != "200" or r["error"]]
        truncated = [r for r in rows if r not in lost and int(r["completion_tokens"] or -1) !=
                     (3 if r["long"] == "1" else 1) * a.max_tokens]
        events["streams"] = {"requests": len(rows), "lost": len(lost), "truncated": len(truncated),
                             "examples": (lost + truncated)[:3]}
        events["continuations"] = metric_value(gw.url, "frugal_gateway_stream_continuations_total")
        events["stream_errors"] = metric_value(gw.url, "frugal_gateway_stream_errors_total")
    finally:
        gw.stop()
        for w in workers:
            w.stop()
    return events


def run_cache(frugal, a):
    workers = start_sim_workers(frugal, SIM_DECODE_MS)
    out = {}
    try:
        for cache in (False, True):
            gw = start_gateway(frugal, workers, "p2c", cache=cache)
            try:
                wait_models(gw.url)
                rep = loadgen(frugal, gw.url, a, seed=3, repeat_share=0.35)
                out["cache_on" if cache else "cache_off"] = rep
            finally:
                gw.stop()
            wait_idle(workers)
    finally:
        for w in workers:
            w.stop()
    on, off = out["cache_on"]["total"], out["cache_off"]["total"]
    served = on["requests"] - on["errors"]
    hits = on["cache_hit_rate"] * served
    # A hit costs no worker time; each would have cost a miss's worker latency (median, cache off).
    out["worker_seconds_saved"] = hits * off["latency_p50_ms"] / 1e3
    out["hits"] = hits
    return out


def run_overhead(frugal, n=300):
    workers = start_sim_workers(frugal, [2], jitter=0.0)
    gw = start_gateway(frugal, workers, "p2c")
    gwc = start_gateway(frugal, workers, "p2c", cache=True)
    res = {}
    try:
        model = wait_models(gw.url)
        wait_models(gwc.url)

        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Where is my order?"}],
                           "max_tokens": 1, "temperature": 0.7})
        conns = {}

        def call(url, b):
            host, port = url[len("http://"):].rsplit(":", 1)
            c = conns.get(url)
            if c is None:
                c = conns[url] = http.client.HTTPConnection(host, int(port), timeout=30)
            t = time.perf_counter()
            c.request("POST", "/v1/chat/completions", body=b, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            return (time.perf_counter() - t) * 1e3

        direct, via = [], []
        for _ in range(20):
            call(workers[0].url, body), call(gw.url, body)
        for _ in range(n):
            direct.append(call(workers[0].url, body))
            via.append(call(gw.url, body))

        def pct(xs, q):
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(q * len(xs)))]

        res["direct_p50_ms"], res["direct_p99_ms"] = pct(direct, 0.5), pct(direct, 0.99)
        res["gateway_p50_ms"], res["gateway_p99_ms"] = pct(via, 0.5), pct(via, 0.99)
        res["added_p50_ms"] = res["gateway_p50_ms"] - res["direct_p50_ms"]
        res["added_p99_ms"] = res["gateway_p99_ms"] - res["direct_p99_ms"]
        # Cache hits: one question asked over and over by 8 client threads.
        hit_body = json.dumps({"model": model, "messages": [{"role": "user", "content": "How long does shipping take?"}],
                               "max_tokens": 8, "temperature": 0})
        call(gwc.url, hit_body)
        count = [0]
        lock = threading.Lock()
        stop_at = time.time() + 10

        def hammer():
            host, port = gwc.url[len("http://"):].rsplit(":", 1)
            c = http.client.HTTPConnection(host, int(port), timeout=30)
            while time.time() < stop_at:
                c.request("POST", "/v1/chat/completions", body=hit_body, headers={"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status == 200 and r.getheader("X-Frugal-Cache") == "hit":
                    with lock:
                        count[0] += 1

        ts = [threading.Thread(target=hammer) for _ in range(8)]
        t0 = time.time()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        res["cache_hit_rps"] = count[0] / (time.time() - t0)
    finally:
        gw.stop()
        gwc.stop()
        for w in workers:
            w.stop()
    return res


def md_spike(title, results):
    lines = [f"**{title}**", "",
             "| policy | steady p95 ms | spike p50 ms | spike p95 ms | spike p99 ms | spike TTFT p95 ms | spike throughput rps | recovery p95 ms | errors | requests per worker |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for policy, rep in results.items():
        st, sp, rc = phase(rep, "steady"), phase(rep, "spike"), phase(rep, "recovery")
        errors = sum(p["errors"] for p in rep["phases"])
        chosen = " / ".join(str(v) for v in rep.get("chosen", {}).values())
        lines.append(f"| {policy} | {st.get('latency_p95_ms', 0):.0f} | {sp.get('latency_p50_ms', 0):.0f} | "
                     f"{sp.get('latency_p95_ms', 0):.0f} | {sp.get('latency_p99_ms', 0):.0f} | {sp.get('ttft_p95_ms', 0):.0f} | "
                     f"{sp.get('throughput_rps', 0):.2f} | {rc.get('latency_p95_ms', 0):.0f} | {errors} | {chosen} |")
    if "round_robin" in results:
        rr = phase(results["round_robin"], "spike").get("latency_p95_ms", 0)
        for p in ("least_cost", "p2c"):
            if p in results and rr:
                v = phase(results[p], "spike").get("latency_p95_ms", 0)
                lines.append(f"\n{p}: spike P95 = {v / rr:.2f} x round_robin's")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frugal", default=str(ROOT / "build/frugal"))
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--spike-sim", action="store_true")
    ap.add_argument("--spike-real", action="store_true")
    ap.add_argument("--kill", action="store_true")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--policies", default="round_robin,queue_weighted,least_cost,p2c")
    ap.add_argument("--sim-rate", type=float, default=8)
    ap.add_argument("--real-rate", type=float, default=0.5)
    ap.add_argument("--rate", type=float, default=8, help="kill/cache scenarios (simulated workers)")
    ap.add_argument("--spike-factor", type=float, default=6)
    ap.add_argument("--steady", type=float, default=15)
    ap.add_argument("--spike", type=float, default=15)
    ap.add_argument("--after", type=float, default=15)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--plot-dir", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    a.policies = a.policies.split(",")
    if a.plot_dir:
        os.makedirs(a.plot_dir, exist_ok=True)
    out = {"args": vars(a)}
    if a.all or a.spike_sim:
        out["spike_sim"] = run_spike(a.frugal, a, "sim", a.sim_rate)
        print(md_spike(f"8 simulated GPU-like workers (test instrument; decode step ms {SIM_DECODE_MS}, max batch 8), "
                       f"{a.sim_rate} rps steady, x{a.spike_factor} spike", out["spike_sim"]) + "\n")
    if a.all or a.spike_real:
        out["spike_real"] = run_spike(a.frugal, a, "real", a.real_rate)
        print(md_spike(f"3 real CPU workers (SmolLM2-135M Q4_1, 1 thread each, one with f32 activations), "
                       f"{a.real_rate} rps steady, x{a.spike_factor} spike", out["spike_real"]) + "\n")
    if a.all or a.kill:
        out["kill"] = k = run_kill(a.frugal, a)
        print(f"kill: requests {k['total']['requests']}, errors {k['total']['errors']}, retries {k['retries']}, "
              f"streams lost {k['streams']['lost']}, truncated {k['streams']['truncated']}, "
              f"continued {k['continuations']:.0f} (w0 had {k['in_flight_at_kill']} in flight), "
              f"ejected after {k.get('ejected_after_s', float('nan')):.2f} s (interval {k['health_interval_ms']} ms), "
              f"restored {k.get('restored_after_s', float('nan')):.2f} s after restart\n")
    if a.all or a.cache:
        out["cache"] = c = run_cache(a.frugal, a)
        on, off = c["cache_on"]["total"], c["cache_off"]["total"]
        print(f"cache: hit rate {on['cache_hit_rate']:.3f}; p50 {off['latency_p50_ms']:.0f} -> {on['latency_p50_ms']:.0f} ms, "
              f"p95 {off['latency_p95_ms']:.0f} -> {on['latency_p95_ms']:.0f} ms; worker-seconds saved {c['worker_seconds_saved']:.1f} "
              f"({c['hits']:.0f} hits)\n")
    if a.all or a.overhead:
        out["overhead"] = o = run_overhead(a.frugal)
        print(f"overhead: direct p50/p99 {o['direct_p50_ms']:.2f}/{o['direct_p99_ms']:.2f} ms, via gateway "
              f"{o['gateway_p50_ms']:.2f}/{o['gateway_p99_ms']:.2f} ms (added {o['added_p50_ms']:.2f}/{o['added_p99_ms']:.2f}); "
              f"cache-hit throughput {o['cache_hit_rps']:.0f} req/s\n")
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
