"""`frugal cache-eval`, black box: the JSON report on the shipped labelled pairs and on any pairs
file in the same format, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT

PAIRS = ROOT / "tests" / "data" / "cache_pairs.jsonl"


@pytest.fixture(scope="module")
def report(frugal, minilm_dir):
    p = frugal.ok("cache-eval", "-m", minilm_dir, "--pairs", PAIRS, "--json", timeout=600)
    return json.loads(p.stdout)


def test_shipped_pairs_are_labelled_and_varied():
    rows = [json.loads(l) for l in PAIRS.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(rows) >= 400
    assert {r["lang"] for r in rows} == {"en", "zh"}
    kinds = {r["kind"] for r in rows if not r["same"]}
    assert {"numbers", "negation", "product", "meaning"} <= kinds, kinds


def test_report_covers_thresholds_with_and_without_guard(report):
    keys = {(round(r["threshold"], 2), r["guard"]) for r in report}
    expected = {(round(t / 100, 2), g) for t in range(80, 99) for g in (False, True)}
    assert keys == expected
    for r in report:
        assert 0 <= r["precision"] <= 1 and 0 <= r["recall"] <= 1, r
        assert r["tp"] + r["fp"] + r["fn"] + r["tn"] >= 400, r


def test_guard_makes_hits_precise_at_the_default_threshold(report):
    at = {(round(r["threshold"], 2), r["guard"]): r for r in report}
    guarded, raw = at[(0.92, True)], at[(0.92, False)]
    assert guarded["precision"] >= 0.98, guarded
    assert guarded["tp"] > 0, guarded
    assert raw["fp"] > guarded["fp"], (raw, guarded)


def test_any_pairs_file(frugal, minilm_dir, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text("\n".join(json.dumps(p) for p in [
        {"a": "how long do refunds take", "b": "how long do refunds take?", "same": True},
        {"a": "Can I get 10% off with the student discount?",
         "b": "Can I get 15% off with the student discount?", "same": False},
        {"a": "Is the gift card refundable?", "b": "Is the gift card non-refundable?", "same": False},
    ]) + "\n")
    rows = json.loads(frugal.ok("cache-eval", "-m", minilm_dir, "--pairs", f, "--json").stdout)
    at = {(round(r["threshold"], 2), r["guard"]): r for r in rows}
    # The same question (a "?" apart) is a hit; the other discount and the negated
    # question only without the guard (MiniLM puts them at cosine 0.95 and 0.98).
    assert at[(0.95, True)]["tp"] == 1 and at[(0.95, True)]["fp"] == 0
    assert at[(0.92, True)]["precision"] == 1.0 and at[(0.92, True)]["recall"] == 1.0
    assert at[(0.92, False)]["fp"] == 2, at[(0.92, False)]


@pytest.mark.parametrize("content,what", [
    ("{not json}\n", "not a JSON object"),
    ('{"a": "x", "b": "y"}\n', "boolean \"same\""),
    ("", "no pairs"),
])
def test_bad_pairs_file_exits_2(frugal, minilm_dir, tmp_path, content, what):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    p = frugal.run("cache-eval", "-m", minilm_dir, "--pairs", f)
    assert p.returncode == 2, p
    err = p.stderr.decode()
    assert what in err and err.count("\n") == 1, err
