#!/usr/bin/env python3
"""Load generator for any OpenAI-compatible server: streaming chat completions, closed loop.

    python3 bench/serve_load.py --url http://127.0.0.1:8080 --concurrency 1,4,16 \\
        --requests-per-level 32 --max-tokens 64 --json out.json

At each concurrency level C, C workers send --requests-per-level requests in all, each worker
sending its next request as soon as its last one ends (prompts cycle through --prompt-file, one
prompt per line, or a built-in list of varied customer-service questions). Requests stream
(`stream: true`, temperature 0) and ask for `stream_options.include_usage`; a server that
rejects that field is asked again without it.

Per level:
  output tok/s   sum of output tokens / wall time from the first request sent to the last
                 answer's end. Output tokens come from the final usage chunk when the server
                 sends one, else from the number of SSE chunks with non-empty content.
  TTFT           request sent -> first chunk with non-empty content, p50 and p95
  E2E            request sent -> stream end, p50 and p95
  errors         non-200 answers, broken streams, streams without [DONE]
With --repeats R each level runs R times; the report holds the median of each figure.
--warmup requests (default 2, unmeasured) go first.

Needs httpx (pip install httpx).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, field

import httpx

BUILTIN_PROMPTS = [
    "My order #48213 arrived with a cracked screen. What are my options for a replacement?",
    "How do I reset my password if I no longer have access to the email on my account?",
    "I was charged twice for my subscription this month. Can you help me get a refund?",
    "Can I change the delivery address of an order that has already shipped?",
    "What is your return policy for opened electronics?",
    "The tracking number you sent me says 'label created' for five days. Where is my package?",
    "How do I cancel my premium plan before the next billing date?",
    "My discount code SPRING20 is not being accepted at checkout. Why?",
    "Do you ship internationally, and how long does delivery to Canada usually take?",
    "I received the wrong size of shoes. How can I exchange them for a larger size?",
    "Can you explain the difference between the Basic and the Pro subscription?",
    "The app keeps crashing when I try to upload a photo. What should I do?",
    "I'd like to update the credit card on file for automatic payments.",
    "Is it possible to pause my meal-kit deliveries for two weeks while I'm traveling?",
    "Why was my account suspended, and how can I get it reactivated?",
    "My warranty expires next month. Can I extend it, and what does it cost?",
    "Please write a short, polite apology to a customer whose delivery was three days late.",
    "How do I download an invoice for my purchase for my company's expense report?",
    "The product description said waterproof, but my watch stopped working after swimming.",
    "Can I add a gift message to an order I placed an hour ago?",
    "What payment methods do you accept besides credit cards?",
    "I want to close my account and delete all my personal data. How do I do that?",
    "My smart thermostat won't connect to Wi-Fi after the latest update. Any troubleshooting tips?",
    "Summarize in two sentences why a customer should choose annual billing over monthly.",
]

SYSTEM_PROMPT = "You are a friendly and concise customer-service assistant."


@dataclass
class RequestResult:
    ok: bool
    status: int = 0
    error: str = ""
    ttft_s: float | None = None
    e2e_s: float = 0.0
    content_chunks: int = 0
    usage_tokens: int | None = None
    text_chars: int = 0

    @property
    def output_tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else self.content_chunks


@dataclass
class LevelResult:
    concurrency: int
    requests: int
    wall_s: float
    results: list[RequestResult] = field(default_factory=list)

    def summary(self) -> dict:
        good = [r for r in self.results if r.ok]
        ttft = [r.ttft_s for r in good if r.ttft_s is not None]
        e2e = [r.e2e_s for r in good]
        out = sum(r.output_tokens for r in good)
        usage = sum(1 for r in good if r.usage_tokens is not None)
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "ok": len(good),
            "errors": self.requests - len(good),
            "error_samples": sorted({r.error for r in self.results if not r.ok})[:5],
            "wall_s": self.wall_s,
            "output_tokens": out,
            "token_count_source": ("usage" if usage == len(good) and good else
                                   "content_chunks" if usage == 0 else "mixed"),
            "output_tok_per_s": out / self.wall_s if self.wall_s > 0 else 0.0,
            "requests_per_s": len(good) / self.wall_s if self.wall_s > 0 else 0.0,
            "ttft_p50_s": percentile(ttft, 50),
            "ttft_p95_s": percentile(ttft, 95),
            "e2e_p50_s": percentile(e2e, 50),
            "e2e_p95_s": percentile(e2e, 95),
            "mean_output_tokens": out / len(good) if good else 0.0,
        }


def percentile(xs: list[float], p: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None for no data."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class LoadClient:
    def __init__(self, url: str, model: str | None, max_tokens: int, api_key: str | None,
                 timeout_s: float, include_usage: bool = True):
        self.url = url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.include_usage = include_usage
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout_s, connect=10),
            limits=httpx.Limits(max_connections=1024, max_keepalive_connections=1024))

    async def close(self) -> None:
        await self.http.aclose()

    async def discover_model(self) -> str:
        if self.model is None:
            r = await self.http.get(self.url + "/v1/models")
            r.raise_for_status()
            self.model = r.json()["data"][0]["id"]
        return self.model

    def body(self, prompt: str, max_tokens: int) -> dict:
        b = {"model": self.model, "stream": True, "temperature": 0, "max_tokens": max_tokens,
             "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": prompt}]}
        if self.include_usage:
            b["stream_options"] = {"include_usage": True}
        return b

    async def probe(self) -> None:
        """One short request: warms the server up, finds out whether include_usage is taken."""
        await self.discover_model()
        r = await self.one(BUILTIN_PROMPTS[0], max_tokens=4)
        if not r.ok and self.include_usage and 400 <= r.status < 500:
            self.include_usage = False
            r = await self.one(BUILTIN_PROMPTS[0], max_tokens=4)
        if not r.ok:
            raise RuntimeError(f"probe request to {self.url} failed: {r.error}")

    async def one(self, prompt: str, max_tokens: int | None = None) -> RequestResult:
        res = RequestResult(ok=False)
        t0 = time.perf_counter()
        done = False
        try:
            async with self.http.stream("POST", self.url + "/v1/chat/completions",
                                        json=self.body(prompt, max_tokens or self.max_tokens)) as r:
                res.status = r.status_code
                if r.status_code != 200:
                    body = (await r.aread())[:300].decode(errors="replace")
                    res.error = f"HTTP {r.status_code}: {body}"
                    res.e2e_s = time.perf_counter() - t0
                    return res
                async for line in r.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank separators, SSE comments (": ping"), event: lines
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    chunk = json.loads(data)
                    if chunk.get("usage"):
                        res.usage_tokens = int(chunk["usage"].get("completion_tokens", 0))
                    for ch in chunk.get("choices") or []:
                        piece = (ch.get("delta") or {}).get("content") or ch.get("text") or ""
                        if piece:
                            if res.ttft_s is None:
                                res.ttft_s = time.perf_counter() - t0
                            res.content_chunks += 1
                            res.text_chars += len(piece)
        except (httpx.HTTPError, json.JSONDecodeError) as e:
            res.error = f"{type(e).__name__}: {e}"
            res.e2e_s = time.perf_counter() - t0
            return res
        res.e2e_s = time.perf_counter() - t0
        if not done:
            res.error = "stream ended without [DONE]"
            return res
        res.ok = True
        return res

    async def level(self, concurrency: int, n_requests: int, prompts: list[str],
                    offset: int = 0) -> LevelResult:
        queue: asyncio.Queue[str] = asyncio.Queue()
        for i in range(n_requests):
            queue.put_nowait(prompts[(offset + i) % len(prompts)])
        results: list[RequestResult] = []

        async def worker():
            while True:
                try:
                    p = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                results.append(await self.one(p))

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return LevelResult(concurrency, n_requests, time.perf_counter() - t0, results)


def median_summary(runs: list[dict]) -> dict:
    """The median of each numeric figure over repeated runs of one level."""
    out = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "concurrency":
            vals = [r[k] for r in runs if r[k] is not None]
            out[k] = statistics.median(vals) if vals else None
    out["errors"] = sum(r["errors"] for r in runs)
    out["repeats"] = len(runs)
    out["runs"] = runs
    return out


async def run_load_async(url: str, levels: list[int], requests_per_level: int, max_tokens: int,
                         prompts: list[str] | None = None, model: str | None = None,
                         repeats: int = 1, api_key: str | None = None, timeout_s: float = 600,
                         warmup: int = 2, log=sys.stderr) -> dict:
    prompts = prompts or BUILTIN_PROMPTS
    lc = LoadClient(url, model, max_tokens, api_key, timeout_s)
    try:
        await lc.probe()
        for i in range(warmup):  # full-length, unmeasured: first-use costs stay out of the figures
            await lc.one(prompts[-1 - i % len(prompts)])
        out_levels = []
        for c in levels:
            runs = []
            for rep in range(repeats):
                lr = await lc.level(c, requests_per_level, prompts, offset=rep)
                s = lr.summary()
                runs.append(s)
                if log:
                    print(f"  concurrency {c:>3} run {rep + 1}/{repeats}: "
                          f"{s['output_tok_per_s']:.1f} out tok/s, TTFT p50 "
                          f"{fmt_ms(s['ttft_p50_s'])}, errors {s['errors']}", file=log, flush=True)
            out_levels.append(median_summary(runs))
        return {"url": url, "model": lc.model, "max_tokens": max_tokens,
                "requests_per_level": requests_per_level, "repeats": repeats,
                "include_usage": lc.include_usage, "levels": out_levels}
    finally:
        await lc.close()


def run_load(*args, **kwargs) -> dict:
    return asyncio.run(run_load_async(*args, **kwargs))


def fmt_ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1000:.0f} ms"


def table(report: dict) -> str:
    rows = ["| concurrency | requests | errors | output tok/s | req/s | TTFT p50 | TTFT p95 "
            "| E2E p50 | E2E p95 | mean out tokens |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in report["levels"]:
        rows.append(f"| {s['concurrency']} | {s['requests']} | {s['errors']} | "
                    f"{s['output_tok_per_s']:.1f} | {s['requests_per_s']:.2f} | "
                    f"{fmt_ms(s['ttft_p50_s'])} | {fmt_ms(s['ttft_p95_s'])} | "
                    f"{fmt_ms(s['e2e_p50_s'])} | {fmt_ms(s['e2e_p95_s'])} | "
                    f"{s['mean_output_tokens']:.1f} |")
    return "\n".join(rows)


def read_prompts(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        prompts = [line.strip() for line in f if line.strip()]
    if not prompts:
        raise SystemExit(f"{path}: no prompts")
    return prompts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="server root, e.g. http://127.0.0.1:8080")
    ap.add_argument("--concurrency", default="1,4,16", help="comma-separated levels")
    ap.add_argument("--requests-per-level", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-file", help="one prompt per line (default: built-in prompts)")
    ap.add_argument("--model", help="model name to send (default: the first of /v1/models)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per level; medians reported")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured requests before the levels")
    ap.add_argument("--api-key")
    ap.add_argument("--timeout", type=float, default=600, help="per-request timeout, seconds")
    ap.add_argument("--json", help="write the full report here")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    prompts = read_prompts(args.prompt_file) if args.prompt_file else BUILTIN_PROMPTS
    report = run_load(args.url, levels, args.requests_per_level, args.max_tokens, prompts,
                      model=args.model, repeats=args.repeats, api_key=args.api_key,
                      timeout_s=args.timeout, warmup=args.warmup)
    print(f"{report['url']} model {report['model']}, max_tokens {report['max_tokens']}, "
          f"{report['requests_per_level']} requests per level, output tokens counted from "
          f"{'/'.join(sorted({s['token_count_source'] for s in report['levels']}))}")
    print(table(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 1 if any(s["errors"] for s in report["levels"]) else 0


if __name__ == "__main__":
    sys.exit(main())
