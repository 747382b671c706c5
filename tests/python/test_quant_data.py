"""The quantization datasets in tests/data (docs/quant-data.md): the committed files are exactly
what tests/data/gen_quant_data.py writes, and they keep the shape `frugal quantize` and
`frugal eval` rely on; the calibration set shares no text with the held-out data. Pure Python,
no binary and no model; a few seconds.
"""

from __future__ import annotations

import json
import collections
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GEN = DATA / "gen_quant_data.py"
PROBES = DATA / "numeric_probes.jsonl"
CALIB = DATA / "calib_cs.jsonl"
HELDOUT = DATA / "heldout_cs.txt"
CACHE_HELDOUT = DATA / "cache_heldout.jsonl"

KINDS = {"price", "stock", "order", "discount", "date", "total", "shipping", "refund"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


@pytest.fixture(scope="module")
def probes():
    return read_jsonl(PROBES)


@pytest.fixture(scope="module")
def calib():
    return read_jsonl(CALIB)


@pytest.fixture(scope="module")
def heldout():
    return HELDOUT.read_text(encoding="utf-8")


def test_generator_reproduces_committed_files(tmp_path):
    r = subprocess.run([sys.executable, str(GEN), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for f in (PROBES, CALIB, HELDOUT):
        fresh = (tmp_path / f.name).read_bytes()
        assert fresh == f.read_bytes(), (
            f"{f.name} differs from the generator's output; run "
            "`python3 tests/data/gen_quant_data.py` and commit the result")


def test_probes_shape(probes):
    assert len(probes) >= 200
    ids = [p["id"] for p in probes]
    assert len(set(ids)) == len(ids), "probe ids must be unique"
    assert {p["kind"] for p in probes} == KINDS
    for p in probes:
        assert p["kind"] in KINDS, p["id"]
        msgs = p["messages"]
        assert [m["role"] for m in msgs] == ["system", "user"], p["id"]
        assert all(isinstance(m["content"], str) and m["content"].strip() for m in msgs), p["id"]
        assert p["expect"], f"{p['id']}: empty expect"
        assert all(isinstance(e, str) and re.search(r"\d", e) for e in p["expect"]), p["id"]
        # short enough for a 135M model: words, counting two CJK characters as one word
        text = msgs[0]["content"] + " " + msgs[1]["content"]
        assert len(text.split()) + len(CJK.findall(text)) // 2 < 120, p["id"]


def test_probe_user_messages_have_digits(probes):
    no_digit = [p["id"] for p in probes if not re.search(r"\d", p["messages"][1]["content"])]
    # every probe's record has numbers; the user message must carry at least one as well
    assert not no_digit, f"user messages without a digit: {no_digit}"


def test_order_probes_expect_ids_copied_from_the_prompt(probes):
    # order probes ask the model to repeat ids and counts, so each expected string is in the prompt
    for p in probes:
        if p["kind"] == "order":
            text = p["messages"][0]["content"] + p["messages"][1]["content"]
            for e in p["expect"]:
                assert e in text, (p["id"], e)


def test_calib_shape(calib):
    assert len(calib) == 2000
    lines = [json.dumps(c, ensure_ascii=False, sort_keys=True) for c in calib]
    assert len(set(lines)) == len(lines), "calibration lines must be unique"
    for c in calib:
        assert set(c) == {"prompt", "answer"}
        assert isinstance(c["prompt"], str) and c["prompt"].strip()
        assert isinstance(c["answer"], str) and c["answer"].strip()
    with_digits = sum(bool(re.search(r"\d", c["answer"])) for c in calib)
    assert with_digits >= len(calib) // 2, "most calibration answers should carry numbers"


def test_heldout_size_and_no_overlap_with_calib(heldout, calib):
    size = len(heldout.encode("utf-8"))
    assert 25_000 <= size <= 35_000, size
    answers = {c["answer"] for c in calib}
    lines = heldout.splitlines()
    assert not [ln for ln in lines if ln in answers], "held-out line equal to a calibration answer"
    assert not [a for a in answers if a in heldout], "calibration answer inside the held-out text"
    assert sum(bool(re.search(r"\d", ln)) for ln in lines if ln.strip()) > 100


def cjk_share(texts) -> float:
    texts = [t for t in texts if t.strip()]
    return sum(bool(CJK.search(t)) for t in texts) / len(texts)


def test_about_ten_percent_chinese(probes, calib, heldout):
    shares = {
        "probes": cjk_share(p["messages"][1]["content"] for p in probes),
        "heldout": cjk_share(heldout.splitlines()),
    }
    for name, share in shares.items():
        assert 0.05 <= share <= 0.20, (name, share)


def test_calib_is_a_quarter_chinese(calib):
    # English and Chinese: every 4th item is Chinese, question and answer.
    zh = [c for c in calib if CJK.search(c["prompt"])]
    assert len(zh) == len(calib) // 4
    assert all(CJK.search(c["answer"]) for c in zh)
    assert not [c for c in calib if CJK.search(c["prompt"]) is None and CJK.search(c["answer"])]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!。？！])\s*", text) if s.strip()]


def test_calib_shares_no_text_with_the_held_out_data(calib, probes, heldout):
    """No calibration item, nor any sentence of one (6 words or more, or 10 Chinese characters),
    appears in the held-out data: the text the quantize gate scores, the numeric probes, and the
    semantic cache's held-out pairs; and no held-out cache query (4 characters or more) appears
    inside a calibration item."""
    cache = read_jsonl(CACHE_HELDOUT)
    queries = [q for c in cache for q in (c["a"], c["b"])]
    held = "\n".join([heldout] + [m["content"] for p in probes for m in p["messages"]] + queries)
    whole = [t for c in calib for t in (c["prompt"], c["answer"]) if t in held]
    assert not whole, whole[:5]
    shared = {s for c in calib for t in (c["prompt"], c["answer"]) for s in sentences(t)
              if (len(s.split()) >= 6 or len(CJK.findall(s)) >= 10) and s in held}
    assert not shared, sorted(shared)[:5]
    calib_text = "\n".join(c["prompt"] + "\n" + c["answer"] for c in calib)
    inside = [q for q in queries if len(q) >= 4 and q in calib_text]
    assert not inside, inside[:5]


def skeleton(text: str) -> str:
    """The wording of a text without its numbers, amounts and names."""
    text = re.sub(r"[$€£¥]?\d[\d,.:]*(元)?", "0", text)
    return re.sub(r"\b[A-Z][A-Za-z'&-]*\b", "X", text)


def test_calib_has_real_variety(calib):
    # Not 2000 near-copies: hundreds of distinct wordings once numbers and names are taken out,
    # none used for more than 2% of the items, and a vocabulary to match.
    forms = collections.Counter(skeleton(c["answer"]) for c in calib)
    assert len(forms) >= 400, len(forms)
    assert forms.most_common(1)[0][1] <= len(calib) // 50, forms.most_common(3)
    words = {w.lower() for c in calib for w in re.findall(r"[A-Za-z']+", c["prompt"] + " " + c["answer"])}
    hanzi = set(CJK.findall("".join(c["prompt"] + c["answer"] for c in calib)))
    assert len(words) >= 800 and len(hanzi) >= 400, (len(words), len(hanzi))
