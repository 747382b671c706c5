"""`frugal cache-eval`, black box: the JSON report of the shipped decision (the default embedder,
multilingual-e5-small, with its learned decision at target precision 0.95) and of the previous
rule verifier beside it, on the held-out set, by language, with the precision's Wilson interval;
any pairs file in the same format; clear errors for bad files.

tests/data/cache_heldout.jsonl was written independently of the training data and is never
trained or tuned on. The learned decision is trained by scripts/train_cache_decision.py (public
intent and paraphrase sets, data/cache_train, tests/data/cache_pairs.jsonl); the rule verifier by
scripts/train_cache_verifier.py on data/cache_train only.
"""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

HELDOUT = ROOT / "tests" / "data" / "cache_heldout.jsonl"
PAIRS = ROOT / "tests" / "data" / "cache_pairs.jsonl"
TRAIN = ROOT / "data" / "cache_train" / "pairs.jsonl"


def load(path):
    return [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]


@pytest.fixture(scope="module")
def heldout(frugal, e5_file):
    return json.loads(frugal.ok("cache-eval", "-m", e5_file, "--pairs", HELDOUT, "--json", timeout=900).stdout)


def test_heldout_set_is_large_bilingual_and_hard():
    rows = load(HELDOUT)
    assert len(rows) >= 300
    zh = [r for r in rows if r["lang"] == "zh"]
    assert len(zh) >= 0.4 * len(rows)
    kinds = {r["kind"] for r in rows if not r["same"]}
    assert {"number", "negation", "antonym", "object", "qualifier", "long"} <= kinds, kinds
    assert {"paraphrase", "reorder"} <= {r["kind"] for r in rows if r["same"]}
    # Written apart from the training data: no pair of one is in the other.
    train = {(r["a"], r["b"]) for r in load(TRAIN)} | {(r["b"], r["a"]) for r in load(TRAIN)}
    assert not [r for r in rows if (r["a"], r["b"]) in train]


def test_report_shape(heldout):
    d = heldout["default"]
    for k in ("precision", "precision_ci95", "recall", "tp", "fp", "fn", "tn", "threshold", "verifier",
              "by_lang", "by_kind"):
        assert k in d, k
    assert set(d["by_lang"]) == {"en", "zh"}
    assert d["tp"] + d["fp"] + d["fn"] + d["tn"] == heldout["n"]
    assert sum(v["tp"] for v in d["by_lang"].values()) == d["tp"]
    assert d["verifier"] == "learned", d
    assert d["decision"]["target_precision"] == 0.95
    assert 0 < d["decision"]["threshold_en"] < 1 and 0 < d["decision"]["threshold_zh"] < 1, d
    # The precision's 95% Wilson interval brackets it, per language too.
    for c in [d] + list(d["by_lang"].values()):
        lo, hi = c["precision_ci95"]
        assert 0 <= lo <= c["precision"] + 1e-9 and c["precision"] <= hi + 1e-9 and hi <= 1, c
    # The previous decision, side by side.
    r = heldout["rules"]
    assert r["verifier"] == "pair-classifier" and set(r["by_lang"]) == {"en", "zh"}, r
    assert r["tp"] + r["fp"] + r["fn"] + r["tn"] == heldout["n"]
    keys = {(round(r["threshold"], 2), r["guard"]) for r in heldout["sweep"]}
    assert keys == {(round(t / 100, 2), g) for t in range(80, 99) for g in (False, True)}


def test_heldout_quality_at_the_default(heldout):
    # The learned decision (measured: precision 0.966, recall 0.695; en 0.959 / 0.714, zh 0.973 /
    # 0.676): five MLPs averaged, trained with the pair sets' unrelated questions too, thresholds
    # calibrated on the whole decision's hits (en 0.83, zh 0.83 at 0.95). One MLP calibrated that
    # way gave 0.985 / 0.640; calibrated on its score alone, 0.977 / 0.631 (docs/cache.md).
    d = heldout["default"]
    assert d["precision"] >= 0.95, d
    assert d["precision_ci95"][1] >= 0.97, d
    assert d["recall"] >= 0.6, d
    assert d["by_lang"]["en"]["recall"] >= 0.65, d["by_lang"]
    assert d["by_lang"]["zh"]["recall"] >= 0.5, d["by_lang"]
    # The previous decision beside it, unchanged (0.984 / 0.626).
    r = heldout["rules"]
    assert r["precision"] >= 0.97 and r["recall"] >= 0.6, r
    # The cosine alone is no decision: at any threshold it is far less precise.
    best_raw = max(r["precision"] for r in heldout["sweep"] if not r["guard"] and r["tp"] > 0)
    assert best_raw < d["precision"] - 0.1, best_raw


def test_minilm_stays_usable(frugal, minilm_dir, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text("\n".join(json.dumps(p) for p in [
        {"a": "how long do refunds take", "b": "How long do refunds take?", "same": True},
        {"a": "Can I get 10% off with the student discount?",
         "b": "Can I get 15% off with the student discount?", "same": False},
    ]) + "\n")
    d = json.loads(frugal.ok("cache-eval", "-m", minilm_dir, "--pairs", f, "--json").stdout)["default"]
    assert d["tp"] == 1 and d["fp"] == 0, d


def test_any_pairs_file_and_detected_language(frugal, e5_file, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in [
        {"a": "how long do refunds take", "b": "How long do refunds take?", "same": True},
        {"a": "Can I get 10% off with the student discount?",
         "b": "Can I get 15% off with the student discount?", "same": False},
        {"a": "Is the gift card refundable?", "b": "Is the gift card non-refundable?", "same": False},
        {"a": "三百元可以包邮吗", "b": "四百元可以包邮吗", "same": False},
        {"a": "亲，包邮吗？", "b": "包不包邮", "same": True},
    ]) + "\n")
    rep = json.loads(frugal.ok("cache-eval", "-m", e5_file, "--pairs", f, "--json").stdout)
    d = rep["default"]
    assert (d["tp"], d["fp"], d["fn"]) == (2, 0, 0), d
    assert d["by_lang"]["zh"]["tp"] == 1 and d["by_lang"]["en"]["tp"] == 1, d["by_lang"]
    raw = {round(r["threshold"], 2): r for r in rep["sweep"] if not r["guard"]}
    assert raw[0.9]["fp"] >= 2, raw[0.9]


def test_features_for_training(frugal, e5_file, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text("\n".join(json.dumps(p) for p in [
        {"a": "What is the return policy?", "b": "What is the return policy for shoes?", "same": False},
        {"a": "What is the return policy?", "b": "what's the return policy", "same": True},
        {"a": "Can I withdraw 500 dollars a day?", "b": "Can I withdraw 5000 dollars a day?",
         "same": False},
    ]) + "\n")
    out = tmp_path / "features.jsonl"
    frugal.ok("cache-eval", "-m", e5_file, "--pairs", f, "--features", out)
    row, again, numbers = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["only_b"] == ["shoe"] and row["only_a"] == [] and row["veto"] == ""
    assert len(row["x"]) == 12 and row["x"][1] == 1.0  # one_sided
    # What the training script's calibration counts (decision_flags): a hit by the strict reading
    # whatever the score, a pair the score decides, and a hard veto.
    assert row["same_content"] is False and row["reason"] in ("", "score"), row
    assert again["same_content"] is True and again["decision"] is True, again
    assert numbers["same_content"] is False and numbers["reason"] == "numbers", numbers


@pytest.mark.parametrize("content,what", [
    ("{not json}\n", "not a JSON object"),
    ('{"a": "x", "b": "y"}\n', "boolean \"same\""),
    ("", "no pairs"),
])
def test_bad_pairs_file_exits_2(frugal, e5_file, tmp_path, content, what):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    p = frugal.run("cache-eval", "-m", e5_file, "--pairs", f)
    assert p.returncode == 2, p
    err = p.stderr.decode()
    assert what in err and err.count("\n") == 1, err


def test_target_precision_decision_and_model_file(frugal, e5_file, tmp_path):
    """--target-precision moves the learned thresholds monotonically; --decision rules is the
    previous decision; a corrupt --decision-file is refused in one line."""
    f = tmp_path / "pairs.jsonl"
    f.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in [
        {"a": "How do I change my card PIN?", "b": "how can i change the pin on my card", "same": True},
        {"a": "How do I activate my new card?", "b": "How do I cancel my new card?", "same": False},
        {"a": "运费怎么算？", "b": "邮费怎么收？", "same": True},
    ]) + "\n")
    th = {}
    for t in ("0.8", "0.95", "0.99"):
        d = json.loads(frugal.ok("cache-eval", "-m", e5_file, "--pairs", f, "--json",
                                 "--target-precision", t).stdout)["default"]
        assert d["verifier"] == "learned" and d["decision"]["target_precision"] == float(t), d
        th[t] = (d["decision"]["threshold_en"], d["decision"]["threshold_zh"])
    for lang in (0, 1):
        assert th["0.8"][lang] <= th["0.95"][lang] <= th["0.99"][lang], th
    rules = json.loads(frugal.ok("cache-eval", "-m", e5_file, "--pairs", f, "--json",
                                 "--decision", "rules").stdout)
    assert rules["default"]["verifier"] == "pair-classifier", rules["default"]
    assert rules["default"]["tp"] == rules["rules"]["tp"] and rules["default"]["fp"] == rules["rules"]["fp"]
    bad = tmp_path / "decision.json"
    shipped = (ROOT / "data" / "cache_decision" / "multilingual-e5-small-q4.json").read_text()
    bad.write_text(shipped[: len(shipped) // 3])
    p = frugal.run("cache-eval", "-m", e5_file, "--pairs", f, "--decision-file", bad)
    assert p.returncode == 2, p
    err = p.stderr.decode()
    assert "not a JSON object" in err and err.count("\n") == 1, err
