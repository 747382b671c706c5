"""SentencePiece Unigram tokenizers (XLM-R, bge-m3, multilingual-e5): `frugal tokenize` must give
the Hugging Face `tokenizers` package's ids, and decode as it does.

The tokenizer.json files are built here from a SentencePiece model trained on English and
Chinese (spm_unigram.py), with its compiled nmt_nfkc rules as the Precompiled normalizer, in
the pre-tokenizer layouts published models use.
"""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from spm_unigram import VARIANTS, build
from test_tokenizer_reference import (PARSE_SPECIAL_TEXTS, TEXTS, assert_same_ids, corpus, decode,
                                      reference_ids, tokenize)

# Beyond the shared TEXTS: what nmt_nfkc rewrites (full-width forms, compatibility characters,
# combining sequences), characters the small vocabulary lacks, and customer-service Chinese.
UNIGRAM_TEXTS = [
    "ＡＢＣ１２３ full-width，标点！",
    "ｶﾀｶﾅ half-width katakana",
    "① ② ⑩ ㎏ ㍿ ™ …",
    "a\u0308 o\u0308 u\u0308 combining, n\u0303 and \u1100\u1161\u11a8 jamo",
    "😀 emoji the vocabulary has never seen: 🦜🦩",
    "订单号 A-10432 还没到，请问物流在哪里？",
    "这件外套多少钱？有没有折扣？",
    "价格是 1299 元，运费 15 元。",
    "Ελληνικά και русский текст вместе",
    "<mask> stays text unless parsed",
]


def cs_lines():
    lines = []
    for line in (ROOT / "tests" / "data" / "cache_pairs.jsonl").read_text().splitlines()[:120]:
        if line.strip():
            p = json.loads(line)
            lines += [p["a"], p["b"]]
    return lines


@pytest.fixture(scope="module", params=VARIANTS)
def unigram(request, tmp_path_factory):
    from tokenizers import Tokenizer

    path = build(request.param, tmp_path_factory.mktemp(f"unigram_{request.param}"), ROOT)
    ref = Tokenizer.from_file(str(path))
    return request.param, path, ref


def test_unigram_ids_match_reference(frugal, unigram):
    variant, path, ref = unigram
    texts = TEXTS + UNIGRAM_TEXTS + corpus(80, seed=21) + cs_lines()
    got = tokenize(frugal, path, texts)
    assert_same_ids(got, reference_ids(ref, texts), texts, f"Unigram ({variant})")
    got = tokenize(frugal, path, texts, "--no-special")
    assert_same_ids(got, reference_ids(ref, texts, add_special=False), texts, f"Unigram ({variant}) --no-special")
    # Unknown characters really occur (so the unknown path is exercised), as <unk> or bytes.
    unk = ref.token_to_id("<unk>")
    flat = [i for ids in got for i in ids]
    if variant == "byte-fallback":
        assert any(ref.id_to_token(i).startswith("<0x") for i in flat)
    else:
        assert unk in flat


def test_unigram_folder_and_special_flags(frugal, unigram):
    variant, path, ref = unigram
    got = tokenize(frugal, path.parent, PARSE_SPECIAL_TEXTS, "--parse-special")
    assert_same_ids(got, reference_ids(ref, PARSE_SPECIAL_TEXTS, parse_special=True), PARSE_SPECIAL_TEXTS,
                    f"Unigram ({variant}) --parse-special")


def test_unigram_decode_matches_reference(frugal, unigram):
    variant, path, ref = unigram
    texts = UNIGRAM_TEXTS + corpus(20, seed=5) + cs_lines()[:40]
    ids = reference_ids(ref, texts)
    got = decode(frugal, path, ids, "--skip-special")
    want = [ref.decode(i, skip_special_tokens=True) for i in ids]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"Unigram ({variant}) decode: {len(bad)} differ, first: {bad[:3]}"


def test_corrupt_unigram_files_are_refused(frugal, unigram, tmp_path):
    variant, path, _ = unigram
    j = json.loads(path.read_text())
    cases = {
        "vocab-entry": lambda d: d["model"]["vocab"].__setitem__(5, "just a string"),
        "unk-id": lambda d: d["model"].__setitem__("unk_id", 10**6),
        "charsmap-base64": lambda d: d["normalizer"]["normalizers"][0].__setitem__("precompiled_charsmap", "!!!"),
        "charsmap-size": lambda d: d["normalizer"]["normalizers"][0].__setitem__("precompiled_charsmap", "/////w=="),
    }
    for name, mutate in cases.items():
        d = json.loads(json.dumps(j))
        mutate(d)
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps(d))
        p = frugal.run("tokenize", "-m", bad, "hello")
        assert p.returncode == 2, (variant, name, p.returncode, p.stderr[-500:])
        err = p.stderr.decode()
        assert "tokenizer.json" in err or "tokenizer" in err, (name, err)
