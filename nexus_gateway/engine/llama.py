"""The one module that imports `llama_cpp`: small owners of llama.cpp's native handles, each with `close()`.

    LlamaModel    a GGUF loaded once: tokenizer, vocabulary, shape of its KV cache
    LlamaContext  one context with several sequences in a unified KV cache (one sequence per session):
                  decode, sequence ops (rm / cp / add), a sequence's state out and back in, logits
    LlamaEmbedding  a GGUF opened for embeddings (the `gguf:PATH` embedder): one pooled vector a text

Everything here is synchronous and owned by one thread (the engine worker); a context refuses calls
from any other thread. llama.cpp's own log lines go to the `nexus_gateway.engine.llama` logger at
debug level, so nothing reaches stdout. Failures become `EngineError`, translated here and only here.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import llama_cpp as lc
import numpy as np

from nexus_gateway.engine.threads import ThreadGovernor
from nexus_gateway.errors import EngineError, GrammarRejected

logger = logging.getLogger(__name__)

KVType = Literal["f16", "q8_0", "f32"]
_KV_TYPES: dict[str, int] = {"f32": lc.GGML_TYPE_F32, "f16": lc.GGML_TYPE_F16, "q8_0": lc.GGML_TYPE_Q8_0}
# ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5 (continues the previous line's level).
# llama.cpp is chatty at INFO, so its INFO goes to DEBUG; its warnings and errors stay what they are.
_LOG_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING, 4: logging.ERROR}
_last_level = [logging.DEBUG]


_EXPECTED = ("using full-size SWA cache", "was not control-type")
"""Warnings llama.cpp prints on every load here that need no action: the full SWA cache is asked for
(`swa_full` below) and the packaged Gemma's `</s>` token type is a known quirk of its file. Kept at DEBUG."""


def _log_line(level: int, text: bytes, user_data: Any) -> None:
    mapped = _last_level[0] if level == 5 else _LOG_LEVELS.get(level, logging.DEBUG)
    _last_level[0] = mapped
    message = text.decode("utf-8", errors="replace").rstrip()
    if message:
        logger.log(logging.DEBUG if any(known in message for known in _EXPECTED) else mapped, "%s", message)


_forward_log = lc.llama_log_callback(_log_line)
"""The C callback llama.cpp logs through (kept referenced for the life of the process)."""

_backend_lock = threading.Lock()
_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            lc.llama_log_set(_forward_log, ctypes.c_void_p(0))
            lc.llama_backend_init()
            _backend_ready = True


def default_threads() -> int:
    """llama.cpp threads when none are configured: the cores this process may use, all of them up to 4,
    else half (up to 8: one batch's work does not spread further on a CPU)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores if cores <= 4 else min(8, cores // 2))


@dataclass(frozen=True, kw_only=True)
class ContextSettings:
    n_ctx: int = 4096
    n_batch: int = 512
    """Tokens per llama_decode call; prefill and compile split text at the same boundaries."""
    n_seq_max: int = 10
    threads: int | None = None
    """CPU threads for prompt batches; when unset, `default_threads()`: every core on a small machine (up to 4),
    half of them (up to 8) on a larger one. On a small machine the host waits for the tool call while the
    gateway works, and Qwen2.5-Coder-0.5B on 2 quiet cores read 88 tokens/s with 2 threads against 55 with 1
    (decoding 25 against 14.5). llama.cpp's threads spin-wait for each other, so on oversubscribed cores every
    extra thread costs (on 2 cores at load 10, one grammar-constrained call took 1.7-4.9 s with 1 thread and
    20-106 s with 2): unset, the count is the ceiling, and each decode takes only the cores other processes
    left over (engine/threads.py); set, it is used as it is."""
    decode_threads: int | None = None
    """CPU threads for one-token decodes; `threads` when unset."""
    scoring_rows: int = 64
    """Rows of logits one decode can return beyond one per sequence: teacher-forced scoring (the re-ranker)
    reads a request's tokens after every candidate in batches of this many. One batch of 22 rows took 0.68 s
    where two of 11 took 1.0-1.1 s (Qwen2.5-Coder-0.5B, 1 thread); six candidates' 100 rows took 0.81-1.18 s
    in batches of 64 where one candidate a batch took 1.05-1.46 s. Each row is n_vocab floats (0.6 MB for
    Qwen's 152k), reserved once."""
    flash_attn: bool = True
    kv_type: KVType = "f16"

    def kv_layout(self) -> str:
        """What a sequence's saved state depends on, besides the model: part of the model fingerprint."""
        return f"kv={self.kv_type};fa={int(self.flash_attn)};swa_full=1;unified=1"

    @property
    def n_threads(self) -> int:
        return self.threads or default_threads()

    @property
    def n_decode_threads(self) -> int:
        return self.decode_threads or self.n_threads

    @property
    def n_outputs(self) -> int:
        """Rows of logits a decode may ask for (`decode_each`, `decode_all`): at least one per sequence, and
        `scoring_rows`; larger batches are split."""
        return min(self.n_batch, max(self.n_seq_max, self.scoring_rows))


@dataclass(frozen=True)
class ModelInfo:
    description: str
    n_layer: int
    n_head_kv: int
    n_embd: int
    n_swa: int
    n_vocab: int
    n_ctx_train: int
    chat_template: str | None
    architecture: str
    """`general.architecture` from the GGUF (`qwen2`, `gemma3`, ...): the model family."""


class LlamaModel:
    """A GGUF model; tokenizer and shape. Thread-safe for tokenizing; closed once."""

    def __init__(self, path: Path, *, gpu_layers: int = 0) -> None:
        _init_backend()
        params = lc.llama_model_default_params()
        params.n_gpu_layers = gpu_layers
        handle = lc.llama_model_load_from_file(str(path).encode(), params)
        if not handle:
            raise EngineError(f"{path}: llama.cpp could not load this GGUF model (see the log for the reason)")
        self._handle: Any = handle
        self._vocab = lc.llama_model_get_vocab(handle)
        self.path = path
        desc = ctypes.create_string_buffer(256)
        lc.llama_model_desc(handle, desc, len(desc))
        template = lc.llama_model_chat_template(handle, None)
        self.info = ModelInfo(
            description=desc.value.decode("utf-8", errors="replace"),
            n_layer=lc.llama_model_n_layer(handle),
            n_head_kv=lc.llama_model_n_head_kv(handle),
            n_embd=lc.llama_model_n_embd(handle),
            n_swa=lc.llama_model_n_swa(handle),
            n_vocab=lc.llama_vocab_n_tokens(self._vocab),
            n_ctx_train=lc.llama_model_n_ctx_train(handle),
            chat_template=template.decode("utf-8", errors="replace") if template else None,
            architecture=self.meta("general.architecture") or "",
        )

    def meta(self, key: str) -> str | None:
        """One GGUF metadata value as text (`general.license`, ...), None when the file does not have it."""
        buffer = ctypes.create_string_buffer(1024)
        size = lc.llama_model_meta_val_str(self._handle, key.encode(), buffer, len(buffer))
        return buffer.value.decode("utf-8", errors="replace") if size >= 0 else None

    def metadata(self) -> dict[str, str]:
        """Every GGUF metadata key with its value as text (arrays are not listed by llama.cpp)."""
        out: dict[str, str] = {}
        key, value = ctypes.create_string_buffer(256), ctypes.create_string_buffer(1024)
        for i in range(lc.llama_model_meta_count(self._handle)):
            if lc.llama_model_meta_key_by_index(self._handle, i, key, len(key)) >= 0:
                lc.llama_model_meta_val_str_by_index(self._handle, i, value, len(value))
                out[key.value.decode("utf-8", errors="replace")] = value.value.decode("utf-8", errors="replace")
        return out

    @property
    def handle(self) -> Any:
        if self._handle is None:
            raise EngineError(f"{self.path}: the model is closed")
        return self._handle

    def tokenize(self, text: str, *, bos: bool = False, special: bool = False) -> list[int]:
        """Token ids of `text`; `bos` adds the model's begin token, `special` parses `<start_of_turn>` and kin."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        while True:
            buffer = (lc.llama_token * capacity)()
            count = lc.llama_tokenize(self._vocab, data, len(data), buffer, capacity, bos, special)
            if count >= 0:
                return list(buffer[:count])
            capacity = -count

    def detokenize(self, tokens: list[int]) -> str:
        pieces = bytearray()
        buffer = ctypes.create_string_buffer(128)
        for token in tokens:
            size = lc.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, False)
            pieces += buffer.raw[: max(size, 0)]
        return pieces.decode("utf-8", errors="replace")

    def is_end(self, token: int) -> bool:
        return bool(lc.llama_vocab_is_eog(self._vocab, token))

    def close(self) -> None:
        if self._handle is not None:
            lc.llama_model_free(self._handle)
            self._handle = None

    def __enter__(self) -> LlamaModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LlamaContext:
    """One llama.cpp context: a unified KV cache holding several sequences, owned by the thread that made it."""

    def __init__(self, model: LlamaModel, settings: ContextSettings) -> None:
        params = lc.llama_context_default_params()
        params.n_ctx = settings.n_ctx
        params.n_batch = params.n_ubatch = settings.n_batch
        params.n_seq_max = settings.n_seq_max
        # Most decodes need logits only after their last token: a full n_batch of rows over a 262k
        # vocabulary would reserve half a gigabyte of output buffer for nothing.
        params.n_outputs_max = settings.n_outputs
        params.n_threads, params.n_threads_batch = settings.n_decode_threads, settings.n_threads
        params.flash_attn_type = lc.LLAMA_FLASH_ATTN_TYPE_ENABLED if settings.flash_attn else 0
        params.type_k = params.type_v = _KV_TYPES[settings.kv_type]
        params.swa_full = True  # sliding-window layers keep every position: needed to save, shift and share sequences
        params.kv_unified = True  # one cell pool: seq_cp shares cells instead of copying them
        handle = lc.llama_init_from_model(model.handle, params)
        if not handle:
            raise EngineError(f"{model.path}: llama.cpp could not create a context (n_ctx={settings.n_ctx})")
        self._handle: Any = handle
        self._memory = lc.llama_get_memory(handle)
        self._batch = lc.llama_batch_init(settings.n_batch, 0, 1)
        self._owner = threading.get_ident()
        self.model = model
        self.settings = settings
        self.n_ctx = lc.llama_n_ctx(handle)
        self.can_shift = bool(lc.llama_memory_can_shift(self._memory))
        self.governor = ThreadGovernor(settings.n_threads, os.cpu_count() or 1) if settings.threads is None else None
        """Unless threads are configured: fewer threads while other processes keep the cores busy (threads.py)."""
        self.threads = settings.n_threads
        """The threads the last decode ran with (prompt batches; one-token decodes at most `n_decode_threads`)."""

    def _check(self) -> Any:
        if self._handle is None:
            raise EngineError("the llama.cpp context is closed")
        if threading.get_ident() != self._owner:
            raise RuntimeError("a LlamaContext is owned by the thread that created it; go through the engine worker")
        return self._handle

    def decode(self, seq: int, tokens: list[int], pos: int, *, logits: bool = True) -> np.ndarray | None:
        """Decode `tokens` into sequence `seq` from position `pos`, in `n_batch` chunks counted from the first
        token; return the next-token logits after the last one (a float32 copy) when `logits` is set."""
        handle = self._check()
        if not tokens:
            raise ValueError("nothing to decode")
        batch, step = self._batch, self.settings.n_batch
        for start in range(0, len(tokens), step):
            chunk = tokens[start : start + step]
            last = start + step >= len(tokens)
            batch.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = pos + start + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = 0
            batch.logits[len(chunk) - 1] = 1 if (logits and last) else 0
            self._run(handle, batch)
        if not logits:
            return None
        row = lc.llama_get_logits_ith(handle, batch.n_tokens - 1)
        return np.ctypeslib.as_array(row, shape=(self.model.info.n_vocab,)).copy()

    def decode_each(self, steps: Sequence[tuple[int, Sequence[int], int]]) -> list[np.ndarray]:
        """Tokens for each of several sequences, in one batch: `(seq, tokens, pos)` each, the tokens going to
        positions `pos`, `pos + 1`, ...; for each step the next-token logits after every one of its tokens
        (a float32 array of a row per token, in order). Concurrent sessions' decoding steps share one pass
        over the weights this way, and a step of a few tokens (a draft to check: decoding.py) costs little
        more than a step of one. Batches hold at most `n_outputs` tokens, the rows with logits a context
        reserves."""
        handle = self._check()
        if not steps or any(not tokens for _, tokens, _ in steps):
            raise ValueError("every step needs a token")
        batch, n_vocab = self._batch, self.model.info.n_vocab
        rows = [np.empty((len(tokens), n_vocab), dtype=np.float32) for _, tokens, _ in steps]
        flat = [(which, i) for which, (_, tokens, _) in enumerate(steps) for i in range(len(tokens))]
        size = self.settings.n_outputs
        for start in range(0, len(flat), size):
            chunk = flat[start : start + size]
            batch.n_tokens = len(chunk)
            for slot, (which, i) in enumerate(chunk):
                seq, tokens, pos = steps[which]
                batch.token[slot], batch.pos[slot], batch.n_seq_id[slot], batch.logits[slot] = tokens[i], pos + i, 1, 1
                batch.seq_id[slot][0] = seq
            self._run(handle, batch)
            out = np.ctypeslib.as_array(lc.llama_get_logits(handle), shape=(len(chunk), n_vocab))
            for slot, (which, i) in enumerate(chunk):
                rows[which][i] = out[slot]
        return rows

    def decode_all(self, steps: Sequence[tuple[int, Sequence[int], int]], *, skip: int = 0) -> list[np.ndarray]:
        """Decode each `(seq, tokens, pos)` of `steps` (tokens to positions `pos`, `pos + 1`, ...), every step in
        the same batches, and return for each the next-token logits after every one of its tokens but the first
        `skip` (decoded for their context only), rows in order, float32: what teacher-forced scoring needs.
        One pass over the weights reads every step's tokens (several tools scored for one request cost about a
        fifth less than one after the other). Batches hold at most `n_outputs` rows and `n_batch` tokens."""
        handle = self._check()
        if not steps or any(len(tokens) <= skip for _, tokens, _ in steps):
            raise ValueError("nothing to decode")
        batch, n_vocab = self._batch, self.model.info.n_vocab
        rows = [np.empty((len(tokens) - skip, n_vocab), dtype=np.float32) for _, tokens, _ in steps]
        chunks: list[list[tuple[int, int]]] = [[]]
        outputs = 0
        for which, (_, tokens, _) in enumerate(steps):
            for i in range(len(tokens)):
                wanted = i >= skip
                if len(chunks[-1]) == self.settings.n_batch or (wanted and outputs == self.settings.n_outputs):
                    chunks.append([])
                    outputs = 0
                chunks[-1].append((which, i))
                outputs += wanted
        for chunk in chunks:
            batch.n_tokens = len(chunk)
            for slot, (which, i) in enumerate(chunk):
                seq, tokens, pos = steps[which]
                batch.token[slot], batch.pos[slot], batch.n_seq_id[slot] = tokens[i], pos + i, 1
                batch.logits[slot] = int(i >= skip)
                batch.seq_id[slot][0] = seq
            self._run(handle, batch)
            for slot, (which, i) in enumerate(chunk):
                if i >= skip:
                    row = lc.llama_get_logits_ith(handle, slot)
                    rows[which][i - skip] = np.ctypeslib.as_array(row, shape=(n_vocab,))
        return rows

    def _run(self, handle: Any, batch: Any) -> None:
        if self.governor is not None and (threads := self.governor.threads()) != self.threads:
            lc.llama_set_n_threads(handle, min(threads, self.settings.n_decode_threads), threads)
            logger.debug("engine: %d threads (other processes used %.2f cores)", threads, self.governor.others)
            self.threads = threads
        status = lc.llama_decode(handle, batch)
        if status == 1:
            raise EngineError(
                f"the model context is full ({self.n_ctx} tokens); close sessions or raise the engine's n_ctx"
            )
        if status != 0:
            raise EngineError(f"llama_decode failed with status {status}")

    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool:
        """Drop positions [p0, p1) of `seq` (-1 is open-ended); False when a partial removal is impossible."""
        self._check()
        return bool(lc.llama_memory_seq_rm(self._memory, seq, p0, p1))

    def seq_cp(self, src: int, dst: int) -> None:
        """Give `dst` every cell of `src` (shared cells: no copy of the data in a unified cache)."""
        self._check()
        lc.llama_memory_seq_cp(self._memory, src, dst, -1, -1)

    def seq_add(self, seq: int, delta: int) -> None:
        """Move every position of `seq` by `delta`; llama.cpp re-rotates the keys before the next decode."""
        self._check()
        if not self.can_shift:
            raise EngineError(
                f"{self.model.path}: this model's KV cache cannot be shifted, so blocks cannot be spliced"
            )
        lc.llama_memory_seq_add(self._memory, seq, -1, -1, delta)

    def seq_range(self, seq: int) -> tuple[int, int]:
        """Smallest and largest position held by `seq`, (-1, -1) when it is empty."""
        self._check()
        return lc.llama_memory_seq_pos_min(self._memory, seq), lc.llama_memory_seq_pos_max(self._memory, seq)

    def save_seq(self, seq: int) -> bytes:
        """The saved state of one sequence (its cells' positions, keys and values)."""
        handle = self._check()
        size = lc.llama_state_seq_get_size(handle, seq)
        buffer = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data(handle, buffer, size, seq)
        if written == 0:
            raise EngineError(f"llama.cpp could not save sequence {seq}")
        return bytes(memoryview(buffer)[:written])

    def restore_seq(self, seq: int, data: Any, offset: int, length: int) -> bool:
        """Load a saved sequence state from `data[offset:offset+length]` (a writable buffer such as a
        copy-on-write mmap; read without copying) into the empty sequence `seq`. False when llama.cpp refuses."""
        handle = self._check()
        view = (ctypes.c_uint8 * length).from_buffer(data, offset)
        try:
            return bool(lc.llama_state_seq_set_data(handle, view, length, seq) == length)
        finally:
            del view

    def clear(self) -> None:
        """Empty every sequence."""
        self._check()
        lc.llama_memory_clear(self._memory, True)

    def close(self) -> None:
        if self._handle is not None:
            lc.llama_batch_free(self._batch)
            lc.llama_free(self._handle)
            self._handle = None

    def __enter__(self) -> LlamaContext:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
"""`llama_token_data` as a numpy record, so a whole vocabulary is handed to llama.cpp without a Python loop."""


class LlamaEmbedding:
    """A GGUF model with a context that pools its last hidden states into one vector per text: the model's
    own pooling (CLS for BERT-style models, mean for nomic-embed and kin), or the mean when the model
    declares none (a chat model such as the packaged Gemma). Texts are cut to `n_ctx` tokens. Calls are
    serialized by a lock (the semantic index embeds from worker threads); `close()` frees it."""

    def __init__(self, path: Path, *, n_ctx: int = 512, threads: int | None = None) -> None:
        self.model = LlamaModel(path)
        self.n_embd = self.model.info.n_embd
        self.n_ctx = n_ctx
        self._lock = threading.Lock()
        try:
            self._handle = self._context(lc.LLAMA_POOLING_TYPE_UNSPECIFIED, threads)
            if lc.llama_pooling_type(self._handle) == lc.LLAMA_POOLING_TYPE_NONE:
                lc.llama_free(self._handle)
                self._handle = self._context(lc.LLAMA_POOLING_TYPE_MEAN, threads)
        except BaseException:
            self.model.close()
            raise
        self._batch = lc.llama_batch_init(n_ctx, 0, 1)

    def _context(self, pooling: int, threads: int | None) -> Any:
        params = lc.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = self.n_ctx
        params.n_seq_max = 1
        params.embeddings = True
        params.pooling_type = pooling
        params.n_threads = params.n_threads_batch = threads or default_threads()
        handle = lc.llama_init_from_model(self.model.handle, params)
        if not handle:
            raise EngineError(f"{self.model.path}: llama.cpp could not create an embedding context")
        return handle

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            if self._handle is None:
                raise EngineError(f"{self.model.path}: the embedding model is closed")
            return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        tokens = self.model.tokenize(text, bos=True)[: self.n_ctx] or self.model.tokenize(" ", bos=True)
        lc.llama_memory_clear(lc.llama_get_memory(self._handle), True)
        batch = self._batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, i, 1, 1
            batch.seq_id[i][0] = 0
        status = lc.llama_decode(self._handle, batch)
        if status != 0:
            raise EngineError(f"{self.model.path}: embedding failed (llama_decode status {status})")
        vector = lc.llama_get_embeddings_seq(self._handle, 0)
        if not vector:
            raise EngineError(f"{self.model.path}: llama.cpp returned no pooled embedding for this model")
        return [float(x) for x in vector[: self.n_embd]]

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                lc.llama_batch_free(self._batch)
                lc.llama_free(self._handle)
                self._handle = None
                self.model.close()


class GrammarSampler:
    """A GBNF grammar over a model's vocabulary (llama.cpp's grammar sampler): which tokens may come next.

    `choose(logits)` is the grammar-constrained greedy pick: the best-scoring token the grammar allows.
    It asks the grammar about the `shortlist` best tokens first, then 64 times as many, and only scans
    the whole vocabulary when none of them is allowed: the same token as masking every logit.
    `accept(token)` advances the grammar (also over tokens already in the prompt). Owned by the engine
    thread; `close()` frees it.
    """

    def __init__(self, model: LlamaModel, grammar: str, *, root: str = "root", shortlist: int = 64) -> None:
        handle = lc.llama_sampler_init_grammar(model._vocab, grammar.encode(), root.encode())
        if not handle:
            raise GrammarRejected("llama.cpp could not parse the grammar (see the log for the reason)")
        self._handle: Any = handle
        self._n_vocab = model.info.n_vocab
        self._shortlist = shortlist

    def _check(self) -> Any:
        if self._handle is None:
            raise EngineError("the grammar sampler is closed")
        return self._handle

    def accept(self, token: int) -> None:
        lc.llama_sampler_accept(self._check(), token)

    def _best_allowed(self, ids: np.ndarray, logits: np.ndarray) -> int | None:
        data = np.zeros(len(ids), dtype=_TOKEN_DATA)
        data["id"], data["logit"] = ids, logits
        pointer = data.ctypes.data_as(ctypes.POINTER(lc.llama_token_data))
        array = lc.llama_token_data_array(data=pointer, size=len(ids), selected=-1, sorted=False)
        lc.llama_sampler_apply(self._check(), ctypes.byref(array))
        scores = data["logit"][: array.size]
        best = int(np.argmax(scores))
        return int(data["id"][best]) if np.isfinite(scores[best]) else None

    def choose(self, logits: np.ndarray) -> int | None:
        """The highest-logit token the grammar allows next; None when it allows none (it is complete)."""
        order: np.ndarray | None = None
        for count in (self._shortlist, self._shortlist * 64):
            if count >= self._n_vocab:
                break
            top = np.argpartition(-logits, count - 1)[:count]
            chosen = self._best_allowed(top, logits[top])
            if chosen is not None:
                return chosen
        order = np.arange(self._n_vocab, dtype=np.int64)
        return self._best_allowed(order, logits)

    def close(self) -> None:
        if self._handle is not None:
            lc.llama_sampler_free(self._handle)
            self._handle = None

    def __enter__(self) -> GrammarSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def schema_to_gbnf(schema: str, prop_order: list[str] | None = None) -> str:
    """llama.cpp's JSON Schema -> GBNF converter (pure Python; raises on schemas it cannot express)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(schema, prop_order))
