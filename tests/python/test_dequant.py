"""`frugal dequant` against gguf.quants.dequantize, one tensor type at a time.

The test writes GGUF files with gguf.GGUFWriter. Types gguf can quantize (F16, BF16, Q8_0,
Q4_0, Q4_1, Q5_0, Q5_1) are quantized from random data; for Q4_K, Q5_K and Q6_K, which it only
dequantizes, the blocks are random bytes with sane fp16 super-block scales. Expected: F32/F16/BF16 bit-exact
(pure conversions, subnormals included); block-quantized types equal up to float32 rounding of
scale * q (+ min): |diff| <= 1e-6 * max|ref| over the tensor.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest

Q = gguf.GGMLQuantizationType
QK_K = 256


def _f16_bytes(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=n).astype("<f2").view(np.uint8).reshape(n, 2)


def raw_q4_k(rng, rows: int, cols: int) -> np.ndarray:
    """Random Q4_K blocks: d, dmin (fp16), 12 bytes of 6-bit scales/mins, 128 bytes of nibbles."""
    nb = rows * cols // QK_K
    d = _f16_bytes(rng, nb, 1e-3, 4e-2)
    dmin = _f16_bytes(rng, nb, 1e-3, 2e-2)
    rest = rng.integers(0, 256, size=(nb, 12 + 128), dtype=np.uint8)
    return np.concatenate([d, dmin, rest], axis=1).reshape(rows, -1)


def raw_q5_k(rng, rows: int, cols: int) -> np.ndarray:
    """Random Q5_K blocks: d, dmin (fp16), 12 bytes of 6-bit scales/mins, 32 bytes of fifth
    bits, 128 bytes of nibbles."""
    nb = rows * cols // QK_K
    d = _f16_bytes(rng, nb, 1e-3, 4e-2)
    dmin = _f16_bytes(rng, nb, 1e-3, 2e-2)
    rest = rng.integers(0, 256, size=(nb, 12 + 32 + 128), dtype=np.uint8)
    return np.concatenate([d, dmin, rest], axis=1).reshape(rows, -1)


def raw_q6_k(rng, rows: int, cols: int) -> np.ndarray:
    """Random Q6_K blocks: 128 bytes ql, 64 bytes qh, 16 int8 scales, fp16 d."""
    nb = rows * cols // QK_K
    body = rng.integers(0, 256, size=(nb, 128 + 64 + 16), dtype=np.uint8)
    d = _f16_bytes(rng, nb, 1e-4, 3e-3)
    return np.concatenate([body, d], axis=1).reshape(rows, -1)


EXACT_TYPES = (Q.F32, Q.F16, Q.BF16)


def assert_dequant_equal(got: np.ndarray, ref: np.ndarray, ggml_type, what: str) -> None:
    assert got.size == ref.size, f"{what}: {got.size} floats, expected {ref.size}"
    if ggml_type in EXACT_TYPES:
        bad = np.flatnonzero(got != ref)
        assert bad.size == 0, (
            f"{what} ({ggml_type.name}): {bad.size} elements differ, first at {bad[0]}: "
            f"engine {got[bad[0]]!r}, gguf {ref[bad[0]]!r}")
        return
    tol = 1e-6 * max(1e-30, float(np.abs(ref).max()))
    diff = np.abs(got.astype(np.float64) - ref)
    i = int(diff.argmax())
    assert diff[i] <= tol, (
        f"{what} ({ggml_type.name}): max diff {diff[i]:.3g} at element {i} "
        f"(engine {got[i]!r}, gguf {ref[i]!r})")


def make_tensors(rng) -> dict:
    """name -> (array to write, raw_dtype or None, GGML type of the stored tensor)."""
    t = {}

    def rnd(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    t["f32_2d"] = (rnd(3, 70), None, Q.F32)
    t["f32_1d"] = (rnd(37), None, Q.F32)
    t["f32_3d"] = (rnd(2, 3, 5), None, Q.F32)
    t["f16_2d"] = (rnd(5, 96).astype(np.float16), None, Q.F16)
    t["f16_special"] = (np.array([[0.0, -0.0, 65504.0, -65504.0, 6.1e-5, 5.96e-8, 1.0, -2.5]],
                                 dtype=np.float16), None, Q.F16)  # zeros, max, subnormal
    t["bf16_2d"] = (gguf.quants.quantize(rnd(4, 64) * 100, Q.BF16), Q.BF16, Q.BF16)
    for name, qt in (("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q4_1", Q.Q4_1), ("q5_0", Q.Q5_0),
                     ("q5_1", Q.Q5_1)):
        t[f"{name}_2d"] = (gguf.quants.quantize(rnd(6, 128), qt), qt, qt)
        t[f"{name}_3d"] = (gguf.quants.quantize(rnd(2, 3, 64), qt), qt, qt)
    # Rows of 576: SmolLM2's width, not a multiple of 256, where llama.cpp's K-quant mixes fall
    # back to Q5_0/Q5_1.
    t["q5_0_576"] = (gguf.quants.quantize(rnd(7, 576), Q.Q5_0), Q.Q5_0, Q.Q5_0)
    t["q5_1_576"] = (gguf.quants.quantize(rnd(7, 576), Q.Q5_1), Q.Q5_1, Q.Q5_1)
    t["q8_0_zero_block"] = (gguf.quants.quantize(np.zeros((1, 64), np.float32), Q.Q8_0),
                            Q.Q8_0, Q.Q8_0)
    t["q4_k_2d"] = (raw_q4_k(rng, 4, 512), Q.Q4_K, Q.Q4_K)
    t["q4_k_1row"] = (raw_q4_k(rng, 1, 256), Q.Q4_K, Q.Q4_K)
    t["q5_k_2d"] = (raw_q5_k(rng, 5, 768), Q.Q5_K, Q.Q5_K)
    t["q5_k_1row"] = (raw_q5_k(rng, 1, 256), Q.Q5_K, Q.Q5_K)
    t["q6_k_2d"] = (raw_q6_k(rng, 3, 768), Q.Q6_K, Q.Q6_K)
    t["q6_k_1row"] = (raw_q6_k(rng, 1, 256), Q.Q6_K, Q.Q6_K)
    return t


def write_gguf(path, tensors: dict, alignment: int | None = None) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for name, (arr, raw, _) in tensors.items():
        if raw is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def expected_from_file(path) -> dict:
    """Dequantized with the gguf package from what is really in the file."""
    r = gguf.GGUFReader(str(path))
    out = {}
    for t in r.tensors:
        out[t.name] = (gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
                       .astype(np.float32).reshape(-1), t.tensor_type)
    return out


@pytest.fixture(scope="module")
def dequant_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dequant")
    rng = np.random.default_rng(1234)
    tensors = make_tensors(rng)
    default = d / "types.gguf"
    write_gguf(default, tensors)
    # Same tensors with a non-default general.alignment (data offsets padded to 256 bytes).
    aligned = d / "types_align256.gguf"
    write_gguf(aligned, {k: v for k, v in tensors.items() if k in ("f32_1d", "q4_k_2d", "q8_0_3d",
                                                                    "f16_2d")}, alignment=256)
    return {"default": (default, expected_from_file(default), tensors),
            "align256": (aligned, expected_from_file(aligned), tensors)}


NAMES = list(make_tensors(np.random.default_rng(0)))


@pytest.mark.parametrize("name", NAMES)
def test_dequant_matches_gguf_package(frugal, dequant_files, tmp_path, name):
    path, expected, tensors = dequant_files["default"]
    ref, ggml_type = expected[name]
    assert ggml_type == tensors[name][2], "test setup: stored type differs from the intended one"
    assert np.all(np.isfinite(ref))
    got = frugal.dequant(path, name, tmp_path)
    assert_dequant_equal(got, ref, ggml_type, name)


@pytest.mark.parametrize("name", ["f32_1d", "q4_k_2d", "q8_0_3d", "f16_2d"])
def test_dequant_custom_alignment(frugal, dequant_files, tmp_path, name):
    path, expected, _ = dequant_files["align256"]
    ref, ggml_type = expected[name]
    got = frugal.dequant(path, name, tmp_path)
    assert_dequant_equal(got, ref, ggml_type, f"{name} (alignment 256)")


def test_dequant_real_model_tensors(frugal, smollm2_gguf, tmp_path):
    # One tensor of each type in the real file (Q8_0 embeddings, Q4_1 matrices, F32 norms).
    r = gguf.GGUFReader(str(smollm2_gguf))
    seen = {}
    for t in r.tensors:
        seen.setdefault(t.tensor_type, t)
    for qt, t in seen.items():
        ref = gguf.quants.dequantize(np.asarray(t.data), qt).astype(np.float32).reshape(-1)
        got = frugal.dequant(smollm2_gguf, t.name, tmp_path)
        assert_dequant_equal(got, ref, qt, t.name)
