"""Tokenizers for the tests, built with the `tokenizers` package (never with the engine).

- bpe_from_gguf: the byte-level BPE a GGUF file describes (tokens + merges + pre-tokenizer
  name), as a `tokenizers.Tokenizer`, so the references can tokenize text independently.
- tiny_byte_level_bpe: a small byte-level BPE (256 byte tokens, a few merges, chat specials)
  for the synthetic checkpoints the tests write; saved as tokenizer.json or into GGUF metadata.
"""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

# Special tokens of the tiny tokenizer, appended after bytes and merges (SmolLM-like names).
TINY_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# Merges of the tiny tokenizer, in rank order ("Ġ" is the byte-level space).
TINY_MERGES = [
    ("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("a", "n"), ("e", "r"), ("o", "n"),
    ("Ġ", "a"), ("r", "e"), ("a", "t"), ("Ġ", "s"), ("e", "n"), ("Ġ", "o"), ("o", "r"),
    ("Ġ", "w"), ("e", "s"), ("i", "s"), ("Ġ", "c"), ("i", "t"), ("Ġ", "i"), ("Ġ", "b"),
    ("Ġ", "f"), ("Ġ", "p"), ("Ġ", "m"), ("l", "l"), ("o", "u"), ("in", "g"), ("Ġ", "h"),
    ("e", "d"), ("Ġ", "d"), ("a", "r"), ("Ġo", "f"), ("Ġa", "n"), ("Ġan", "d"), ("Ġ", "l"),
    ("i", "c"), ("Ġt", "o"), ("a", "l"), ("Ġ", "n"), ("Ġ", "e"),
]


def byte_alphabet() -> list[str]:
    """The 256 printable characters GPT-2 byte-level BPE maps bytes to, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(
        range(0xAE, 0x100)
    )
    table = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def tiny_vocab() -> tuple[list[str], list[tuple[str, str]], list[int]]:
    """(tokens by id, merges, GGUF token types) of the tiny tokenizer."""
    tokens = byte_alphabet()
    for a, b in TINY_MERGES:
        merged = a + b
        assert merged not in tokens, merged
        tokens.append(merged)
    types = [1] * len(tokens)
    for s in TINY_SPECIALS:
        tokens.append(s)
        types.append(3)  # control
    return tokens, list(TINY_MERGES), types


def tiny_byte_level_bpe() -> Tokenizer:
    tokens, merges, _ = tiny_vocab()
    n_plain = len(tokens) - len(TINY_SPECIALS)
    vocab = {t: i for i, t in enumerate(tokens[:n_plain])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in TINY_SPECIALS])
    for i, s in enumerate(TINY_SPECIALS):
        assert tok.token_to_id(s) == n_plain + i
    return tok


def bpe_from_gguf(path: str) -> Tokenizer:
    """The GGUF file's byte-level BPE as a tokenizers.Tokenizer (gpt2-family vocabularies)."""
    from gguf import GGUFReader

    r = GGUFReader(path)

    def field(k, d=None):
        f = r.fields.get(k)
        return d if f is None else f.contents()

    if field("tokenizer.ggml.model") != "gpt2":
        raise ValueError("only byte-level BPE (tokenizer.ggml.model == gpt2) is supported here")
    tokens = field("tokenizer.ggml.tokens")
    types = field("tokenizer.ggml.token_type", [1] * len(tokens))
    merges = [tuple(m.split(" ", 1)) for m in field("tokenizer.ggml.merges")]
    pre = field("tokenizer.ggml.pre", "default")
    specials = [t for t, ty in zip(tokens, types) if ty in (3, 4)]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        # SmolLM / cosmo2: every digit on its own, then the GPT-2 split.
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level]
        )
    elif pre in ("gpt2", "default"):
        tok.pre_tokenizer = byte_level
    else:
        raise ValueError(f"pre-tokenizer {pre!r} not reproduced here")
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok
