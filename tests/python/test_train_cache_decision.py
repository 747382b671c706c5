"""scripts/train_cache_decision.py's pieces that decide what ships, without the 4-minute training
run: the five-MLP merge (one MLP whose logit is the members' mean, as cache/decision.cc runs it)
and the calibration's decision flags (what `frugal cache-eval --features` says the C++ decision
does besides reading the score)."""

import importlib.util
import json
import types

import numpy as np

from conftest import BIN, ROOT

spec = importlib.util.spec_from_file_location("train_cache_decision",
                                              ROOT / "scripts" / "train_cache_decision.py")
T = importlib.util.module_from_spec(spec)
spec.loader.exec_module(T)


def _logit(model, X):
    p = T.predict(model, X).astype(np.float64)
    return np.log(p / (1 - p))


def test_ensemble_is_one_mlp_whose_logit_is_the_members_mean():
    rs = np.random.RandomState(3)
    X = rs.randn(600, 9).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] > 0).astype(np.float32)
    w = np.ones(len(y), np.float32)
    args = types.SimpleNamespace(ensemble=3, mlp_seed=5, hidden=7, epochs=2, lr=1e-2, l2=1e-3)
    merged = T.train_ensemble(X, y, w, args, None, None)
    assert merged["W1"].shape == (9, 21)
    assert merged["b1"].shape == (21,) and merged["W2"].shape == (21,)
    members = [T.train_mlp(X, y, w, 7, 2, 1e-2, 1e-3, 5 + k) for k in range(3)]
    # The members differ (their seeds), and the merge is their logits' mean.
    assert not np.allclose(_logit(members[0], X), _logit(members[1], X))
    mean = np.mean([_logit(m, X) for m in members], axis=0)
    np.testing.assert_allclose(_logit(merged, X), mean, rtol=0, atol=1e-3)
    # One member is that member.
    args.ensemble = 1
    one = T.train_ensemble(X, y, w, args, None, None)
    np.testing.assert_array_equal(one["W1"], members[0]["W1"])


def test_decision_flags_read_the_shipped_decision(tmp_path, frugal, e5_file):
    pairs = [
        # typed again: the strict reading accepts it whatever the score
        dict(a="What is the return policy?", b="what's the return policy", same=True, lang="en",
             src="t"),
        # other words: the score decides
        dict(a="How do I change my card PIN?", b="I want a new PIN for my card", same=True,
             lang="en", src="t"),
        # other numbers: a hard veto, refused at every threshold
        dict(a="Can I withdraw 500 dollars a day?", b="Can I withdraw 5000 dollars a day?",
             same=False, lang="en", src="t"),
    ]
    args = types.SimpleNamespace(work=str(tmp_path), frugal=str(BIN), model=str(e5_file))
    model = ROOT / "data" / "cache_decision" / "multilingual-e5-small-q4.json"
    always, scored = T.decision_flags(pairs, str(model), args)
    assert always.tolist() == [True, False, False]
    assert scored.tolist() == [False, True, False]
    # The curve counts those hits: the typed-again pair at every threshold, the vetoed one never.
    p = np.array([0.01, 0.99, 0.99])
    y = np.array([1, 1, 0], np.float32)
    rows = T.curve(p, y, [0.5, 0.999], min_hits=1, always=always, scored=scored)
    assert rows == [[0.5, 1.0, 1.0, 2], [0.999, 1.0, 0.5, 1]], rows
    exported = [json.loads(line) for line in
                (tmp_path / "calibration_pairs.jsonl").read_text().splitlines()]
    assert [e["a"] for e in exported] == [q["a"] for q in pairs]
