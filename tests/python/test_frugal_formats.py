"""Frugal's own weight formats (docs/formats.md) through the CLI, against an independent numpy
implementation of the layout (frugal_format.py, written from the docs).

- `frugal dequant` of every Frugal type equals the documented formula bit for bit (float32
  arithmetic on the packed integers and fp16/f32 scales);
- a tiny Llama whose matrices are stored in Frugal types gives the logits of the numpy reference
  run on the same dequantized weights (same tolerance as test_reference_logits), with float and
  INT8 activations (against the reference with the engine's per-32 activation rounding);
- a file with Frugal tensors and a missing or different format version is refused with exit 2.
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest

import frugal_format
import ref_llama
import synth
from conftest import assert_logits_close

TOL_SYNTH = 5e-3


def write_tensors(path, tensors: dict, version=frugal_format.FORMAT_VERSION):
    """tensors: name -> (type name, float matrix). Returns name -> expected float32 values."""
    w = gguf.GGUFWriter(str(path), "llama")
    if version is not None:
        w.add_uint32(frugal_format.VERSION_KEY, version)
    patches, expected = {}, {}
    for name, (ftype, a) in tensors.items():
        q, d, m = frugal_format.rtn(a, ftype)
        expected[name] = frugal_format.dequant(q, d, m, ftype)
        frugal_format.add_tensor(w, name, frugal_format.pack(q, d, m, ftype), patches, ftype,
                                 a.shape[1])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    frugal_format.patch_file(str(path), patches)
    return expected


@pytest.mark.parametrize("ftype", sorted(frugal_format.TYPES))
def test_dequant_is_the_documented_formula(frugal, tmp_path, ftype):
    rng = np.random.default_rng(int(frugal_format.TYPES[ftype][0]))
    cols = 384  # 3 groups of 128, 6 of 64, 12 of 32
    a = rng.standard_normal((24, cols)).astype(np.float32) * 0.05
    a[3, 7] = 0.9  # an outlier
    a[8, :] = 0.0  # an all-zero row
    path = tmp_path / f"{ftype}.gguf"
    expected = write_tensors(path, {"w": (ftype, a)})
    got = frugal.dequant(path, "w", tmp_path).reshape(a.shape)
    bad = np.argwhere(got != expected["w"])
    assert bad.size == 0, (f"{ftype}: {len(bad)} weights differ, first at {tuple(bad[0])}: "
                           f"engine {got[tuple(bad[0])]!r}, docs {expected['w'][tuple(bad[0])]!r}")
    # And RTN is what the docs promise: within half a step (plus fp16 rounding) of the original.
    assert np.abs(got - a).max() <= 0.51 * np.abs(a).max() / (7 if "I4" in ftype else 127) + 1e-3


MIXES = {
    # The default preset's shape: INT8 attention, INT4 FFN.
    "i8-attn_i4s-ffn": dict(attn_q="I8_G32", attn_k="I8_G32", attn_v="I8_C", attn_output="I8_G64",
                            ffn_gate="I4S_G64", ffn_up="I4S_G32", ffn_down="I4S_G64"),
    "i4a-everywhere": dict(attn_q="I4A_G32", attn_k="I4A_G64", attn_v="I4A_G32",
                           attn_output="I4A_G64", ffn_gate="I4A_G64", ffn_up="I4A_G32",
                           ffn_down="I4A_G64"),
}


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_model_in_frugal_types_matches_reference(frugal, tmp_path, mix):
    f32_path, fr_path = tmp_path / "f32.gguf", tmp_path / "frugal.gguf"
    synth.write_gguf_llama(str(f32_path), wtype="F32", seed=3)
    synth.write_gguf_llama(str(fr_path), wtype="F32", seed=3, frugal_types=MIXES[mix])
    ref_model = ref_llama.load_gguf(str(f32_path), np.float64)
    replaced = 0
    for name, a in list(ref_model.w.items()):  # names like "blk.0.attn_q", matrices [out, in]
        role = name.split(".")[-1] if name.startswith("blk.") else ""
        if role in MIXES[mix]:
            replaced += 1
            ftype = MIXES[mix][role]
            q, d, m = frugal_format.rtn(a.astype(np.float32), ftype)
            ref_model.w[name] = frugal_format.dequant(q, d, m, ftype).astype(np.float64)
    assert replaced == 7 * ref_model.n_layer
    toks = [5, 17, 42, 99, 7, 250, 3, 61]
    ref = ref_llama.forward(ref_model, toks)
    got = frugal.logits(fr_path, toks, tmp_path)
    assert_logits_close(got, ref, TOL_SYNTH, f"{mix} (f32 activations)")
    # INT8 activations: against the reference with the same per-32 rounding of matmul inputs.
    got8 = frugal.logits(fr_path, toks, tmp_path, "--activations", "int8")
    ref8 = ref_llama.forward(ref_model, toks, int8_inputs=True)
    assert_logits_close(got8, ref8, TOL_SYNTH, f"{mix} (int8 activations)")
    # The rounding moves logits by ~10x the tolerance, so this comparison tells the two apart.
    assert np.abs(ref8 - ref).max() > 5 * TOL_SYNTH * ref.std()
    info = frugal.ok("info", fr_path).stdout.decode()
    for t in set(MIXES[mix].values()):
        assert t in info, f"frugal info does not name {t}:\n{info}"


@pytest.mark.parametrize("version, message", [
    (None, "frugal.format_version"),
    (frugal_format.FORMAT_VERSION + 1, f"version {frugal_format.FORMAT_VERSION + 1}"),
])
def test_mismatched_format_version_is_refused(frugal, tmp_path, version, message):
    a = np.ones((8, 64), np.float32)
    path = tmp_path / "v.gguf"
    write_tensors(path, {"w": ("I4S_G32", a)}, version=version)
    r = frugal.run("dequant", "-m", path, "--tensor", "w", "-o", tmp_path / "out.bin")
    assert r.returncode == 2, r
    err_text = r.stderr.decode()
    lines = err_text.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err_text
