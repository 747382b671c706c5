"""`frugal eval`: a model against its reference, and `--gate` (docs/eval.md).

A model against itself must measure no difference at all (exactly: both sides run the same
deterministic arithmetic). A genuinely different variant, a copy of the Q4_1 GGUF with the 4-bit
codes of a few matrices shifted by one step (the scales untouched, so the model stays sane), must
show a positive KL divergence. The gate exits 0 when it passes and 3 when it fails, printing the
report either way; bad input exits 2 with one error line.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from conftest import ALICE_TXT, SMOLLM2_GGUF, require_file

# One chunk of 256 text tokens: 127 scored positions (the second half of the chunk, less the
# last token, which has nothing to predict).
MAX_TOKENS = 256
SCORED = 127
MAX_NEW = 16

PROBES = [
    {"id": "price", "messages": [
        {"role": "system", "content": "Shop record:\nItem 1299: Blue Kettle\nPrice: $12.50\n"
                                      "Answer in one sentence and repeat the exact numbers."},
        {"role": "user", "content": "How much is item 1299?"}]},
    {"id": "order", "messages": [
        {"role": "system", "content": "Order #A-48213-77, placed March 5, 2026, 3 items, "
                                      "total $1,299.00. Answer in one short sentence."},
        {"role": "user", "content": "What is the total of order A-48213-77?"}]},
    {"id": "stock", "messages": [
        {"role": "user", "content": "We have 188 units in stock and sell 20 a day. "
                                    "How many units are left after 2 days?"}]},
    {"prompt": "The invoice lists 3 chairs at $45.00 each, so the total is $"},
    {"id": 5, "messages": [
        {"role": "system", "content": "订单号 155817，共6件商品，总价 899元。请用一句话回答。"},
        {"role": "user", "content": "我的订单号是多少？"}]},
]


@pytest.fixture(scope="module")
def model():
    return require_file(SMOLLM2_GGUF)


@pytest.fixture(scope="module")
def text():
    return require_file(ALICE_TXT)


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "probes.jsonl"
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in PROBES),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def variant(tmp_path_factory, model):
    """A copy of the Q4_1 GGUF with every 4-bit code of blk.{2,9,17}.ffn_down moved one step
    (q -> q ^ 1; the per-block scale d and minimum m stay): deterministic, finite, a different
    model."""
    gguf = pytest.importorskip("gguf")
    out = tmp_path_factory.mktemp("eval") / "smollm2-perturbed.gguf"
    shutil.copyfile(model, out)
    reader = gguf.GGUFReader(str(model))
    targets = {f"blk.{i}.ffn_down.weight" for i in (2, 9, 17)}
    found = 0
    with open(out, "r+b") as f:
        for t in reader.tensors:
            if t.name not in targets:
                continue
            assert t.tensor_type == gguf.GGMLQuantizationType.Q4_1, (t.name, t.tensor_type)
            f.seek(int(t.data_offset))
            blocks = np.frombuffer(f.read(int(t.n_bytes)), dtype=np.uint8).reshape(-1, 20).copy()
            blocks[:, 4:] ^= 0x11  # Q4_1 block: fp16 d, fp16 m, 16 bytes of two codes each
            f.seek(int(t.data_offset))
            f.write(blocks.tobytes())
            found += 1
    assert found == len(targets)
    return out


def eval_json(frugal, *args, expect_rc=0):
    p = frugal.run("eval", "--max-tokens", MAX_TOKENS, "--max-new-tokens", MAX_NEW, "--json",
                   *args, timeout=300)
    assert p.returncode == expect_rc, (
        f"exit {p.returncode}, expected {expect_rc}\nstderr: {p.stderr.decode(errors='replace')[-3000:]}")
    lines = [l for l in p.stdout.decode().splitlines() if l.strip()]
    assert len(lines) == 1, f"expected one JSON line on stdout, got {lines!r}"
    return json.loads(lines[0]), p


@pytest.fixture(scope="module")
def self_report(frugal, model, text, probes):
    """The model against itself, with a gate that only an exact match passes: exit 0."""
    report, _ = eval_json(frugal, "-m", model, "--ref", model, "--text", text, "--probes", probes,
                          "--gate", "ppl<=+0%,ppl<=+0,kld<1e-9,kld_p99<1e-9,top1>=1,numeric>=1")
    return report


@pytest.fixture(scope="module")
def variant_run(frugal, model, text, probes, variant):
    """The variant against the model, with a gate it must fail (KL can't be ~0) and one clause
    it passes: exit 3, report on stdout, the failed clause named. INT8 activations (as served,
    and 2-3x faster than the default f32)."""
    return eval_json(frugal, "-m", variant, "--ref", model, "--text", text, "--probes", probes,
                     "--activations", "int8", "--gate", "kld<1e-9,ppl<+1000%", expect_rc=3)


def test_model_against_itself_measures_nothing(self_report):
    r = self_report
    for key in ("ppl_ref", "ppl", "kld_mean", "kld_p99", "top1_agreement", "numeric_fidelity",
                "tokens_scored", "probes", "mismatches"):
        assert key in r, f"missing {key}: {r}"
    assert r["tokens_scored"] == SCORED
    assert r["ppl"] == r["ppl_ref"]
    assert math.isfinite(r["ppl"]) and 1 < r["ppl"] < 100
    assert r["kld_mean"] < 1e-9
    assert r["kld_p99"] < 1e-9
    assert r["top1_agreement"] == 1.0
    assert r["probes"] == len(PROBES)
    assert r["numeric_fidelity"] == 1.0
    assert r["probes_identical"] == len(PROBES)
    assert r["mismatches"] == []
    assert r["activations"] == "f32"
    assert r["gate"]["passed"] is True and r["gate"]["failed"] == []


def test_ppl_matches_frugal_perplexity(frugal, model, text, self_report):
    # eval measures the weights alone: float activations and a float KV cache (the engine's
    # defaults are INT8 and F16), so perplexity is asked for the same.
    p = frugal.ok("perplexity", "-m", model, "-f", text, "--max-tokens", MAX_TOKENS,
                  "--activations", "f32", "--kv-type", "f32", "--json", timeout=300)
    ppl = json.loads(p.stdout.decode())
    assert ppl["tokens"] == self_report["tokens_scored"]
    assert ppl["perplexity"] == pytest.approx(self_report["ppl_ref"], rel=1e-12)


def test_variant_differs_and_gate_fails_with_exit_3(variant_run):
    r, p = variant_run
    assert r["activations"] == "int8"
    assert r["tokens_scored"] == SCORED
    assert r["kld_mean"] > 1e-4, r
    assert r["kld_p99"] >= r["kld_mean"]
    assert r["kld_max"] >= r["kld_p99"]
    assert r["ppl"] != r["ppl_ref"]
    assert 0 < r["top1_agreement"] <= 1
    assert r["probes"] == len(PROBES)
    assert 0 <= r["numeric_fidelity"] <= 1
    assert r["probes_matched"] + len(r["mismatches"]) == r["probes"]
    assert r["numeric_fidelity"] == pytest.approx(r["probes_matched"] / r["probes"])
    ids = {str(p.get("id", "")) for p in PROBES} | {"line 4"}
    for m in r["mismatches"]:
        assert set(m) >= {"id", "ref_answer", "answer", "ref_numbers", "numbers"}, m
        assert m["id"] in ids, m
        assert m["ref_numbers"] != m["numbers"], m
    gate = r["gate"]
    assert gate["passed"] is False
    assert [f["clause"] for f in gate["failed"]] == ["kld<1e-9"]
    assert gate["failed"][0]["measured"] == pytest.approx(r["kld_mean"])
    err = p.stderr.decode()
    assert "frugal: gate failed: kld<1e-9" in err, err


def test_several_models_share_one_reference_run(frugal, model, text, probes, variant, variant_run):
    """-m twice: the reference runs once, each model gets its own JSON line and gate verdict,
    and the variant's numbers equal those of its own run."""
    p = frugal.run("eval", "--max-tokens", MAX_TOKENS, "--max-new-tokens", MAX_NEW, "--json", "-m", model,
                   "-m", variant, "--ref", model, "--text", text, "--probes", probes, "--activations", "int8",
                   "--gate", "kld<1e-9,ppl<+1000%", timeout=600)
    assert p.returncode == 3, p.stderr.decode()[-2000:]
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    assert [r["model"] for r in lines] == [str(model), str(variant)]
    same, other = lines
    assert same["kld_mean"] < 1e-9 and same["gate"]["passed"] is True
    want, _ = variant_run
    for k in ("ppl_ref", "ppl", "kld_mean", "kld_p99", "top1_agreement", "numeric_fidelity", "probes_matched"):
        assert other[k] == want[k], k
    assert other["gate"]["passed"] is False
    err = p.stderr.decode()
    n = len(PROBES)
    assert err.count(f"reference probes {n}/{n}") == 1 and err.count(f": probes {n}/{n}") == 2, err
    assert f"frugal: gate failed: kld<1e-9" in err and str(variant) in err


def test_gate_passes_with_exit_0_and_table_says_na_without_probes(frugal, model, text):
    p = frugal.run("eval", "-m", model, "--ref", model, "--text", text, "--max-tokens", 64,
                   "--gate", "ppl<=+0%, kld<1e-9, top1>=1", timeout=300)
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    for key in ("ppl_ref", "ppl", "kld_mean", "kld_p99", "top1_agreement", "numeric_fidelity"):
        assert key in out, out
    line = next(l for l in out.splitlines() if l.startswith("numeric_fidelity"))
    assert "n/a" in line, out
    assert "passed" in out, out
    # Progress went to stderr, never to stdout (the table's title is the one such line).
    assert sum(l.startswith("frugal eval:") for l in out.splitlines()) == 1, out
    assert "frugal eval: logits" in p.stderr.decode()


def test_gate_fails_in_table_mode(frugal, model, text):
    p = frugal.run("eval", "-m", model, "--ref", model, "--text", text, "--max-tokens", 64, "-q",
                   "--gate", "ppl<+0%", timeout=300)
    assert p.returncode == 3, p.stderr.decode()[-2000:]
    out = p.stdout.decode()
    assert "ppl_ref" in out and "FAILED" in out and "ppl<+0%" in out, out
    assert p.stderr.decode().startswith("frugal: gate failed: ppl<+0%"), p.stderr.decode()


@pytest.mark.parametrize("case", [
    "missing_model", "missing_ref", "missing_text", "missing_probes", "bad_probe_line",
    "bad_gate", "numeric_gate_without_probes", "no_ref_flag", "bad_activations"])
def test_bad_input_exits_2(frugal, model, text, tmp_path, case):
    bad_probes = tmp_path / "bad.jsonl"
    bad_probes.write_text('{"prompt": "ok"}\n{"prompt": \n', encoding="utf-8")
    base = ["eval", "-m", model, "--ref", model, "--text", text, "--max-tokens", 64]
    args, needle = {
        "missing_model": (["eval", "-m", tmp_path / "none.gguf", "--ref", model, "--text", text],
                          "none.gguf"),
        "missing_ref": (["eval", "-m", model, "--ref", tmp_path / "none.gguf", "--text", text],
                        "none.gguf"),
        "missing_text": (["eval", "-m", model, "--ref", model, "--text", tmp_path / "none.txt"],
                         "none.txt"),
        "missing_probes": (base + ["--probes", tmp_path / "none.jsonl"], "none.jsonl"),
        "bad_probe_line": (base + ["--probes", bad_probes], "bad.jsonl:2"),
        "bad_gate": (base + ["--gate", "ppl<+3%,kld=0.05"], "kld=0.05"),
        "numeric_gate_without_probes": (base + ["--gate", "numeric>=0.98"], "--probes"),
        "no_ref_flag": (["eval", "-m", model], "--ref"),
        "bad_activations": (base + ["--activations", "int4"], "activations"),
    }[case]
    p = frugal.run(*args, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 2, f"exit {p.returncode}\nstderr: {err}"
    assert p.stdout.decode() == ""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("frugal: error: "), err
    assert needle in lines[0], err
