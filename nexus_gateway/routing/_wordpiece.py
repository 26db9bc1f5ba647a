"""BERT's uncased WordPiece tokenizer in pure Python, so the MiniLM embedder needs no tokenizer package.

It reproduces the `BertNormalizer` + `BertPreTokenizer` + `WordPiece` pipeline of Hugging Face `tokenizers`
(clean text, space out CJK characters, strip accents, lowercase, split on whitespace and punctuation, greedy
longest-match-first sub-words, a word that cannot be covered becomes `[UNK]`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

_MAX_WORD_CHARS = 100


class WordPieceTokenizer:
    """Maps text to BERT token ids: `[CLS] pieces... [SEP]`, cut to `max_length` tokens."""

    def __init__(self, vocab: Sequence[str]) -> None:
        self._ids = {token: index for index, token in enumerate(vocab)}
        self.cls_id = self._ids["[CLS]"]
        self.sep_id = self._ids["[SEP]"]
        self.unk_id = self._ids["[UNK]"]
        self.pad_id = self._ids["[PAD]"]
        self._word_ids = lru_cache(maxsize=65536)(self._wordpiece)

    @classmethod
    def from_file(cls, path: Path) -> WordPieceTokenizer:
        with path.open(encoding="utf-8") as handle:
            return cls([line.rstrip("\n") for line in handle])

    def encode(self, text: str, max_length: int) -> list[int]:
        ids = [self.cls_id]
        for word in _pre_tokenize(_normalize(text)):
            ids.extend(self._word_ids(word))
            if len(ids) >= max_length - 1:
                break
        return [*ids[: max_length - 1], self.sep_id]

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > _MAX_WORD_CHARS:
            return (self.unk_id,)
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self._ids.get(piece)
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return (self.unk_id,)
            start = end
        return tuple(pieces)


def _normalize(text: str) -> str:
    chars: list[str] = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD or _is_control(char):
            continue
        if _is_whitespace(char):
            chars.append(" ")
        elif _is_cjk(code):
            chars.extend((" ", char, " "))
        else:
            chars.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(chars))
    return "".join(char for char in decomposed if unicodedata.category(char) != "Mn").lower()


def _pre_tokenize(text: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if char.isspace():
            if current:
                words.append("".join(current))
                current = []
        elif _is_punctuation(char):
            if current:
                words.append("".join(current))
                current = []
            words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )
