"""Cache specs: what one layer caches on one GPU, one small class per cache kind, each answering for its own pages.

The shape is vLLM's ``vllm/v1/kv_cache_interface.py``: a layer class says what it caches (``Kind.cache_specs``),
the spec says how many bytes a page holds, how many blocks a request of ``max_model_len`` tokens takes with
``max_num_batched_tokens`` scheduled per step, and which specs may share a cache group (``merge``). The engines'
pool code (``kv_layout``) is generic over specs: it never asks a spec what kind it is.

- :class:`FullAttentionSpec`: K and V of every token of the context (``token_bytes`` per token);
  :class:`MLALatentSpec`: one latent per token, no factor 2, replicated on every TP rank (DeepSeek V3.2's indexer
  keys ride in the same page); :class:`CompressedSparseSpec`: DeepSeek-V4's compressed attention, its bytes of a
  request of the reference length spread per token. All three grow with the whole context.
- :class:`SlidingWindowSpec`: at most ``window`` tokens are attended; vLLM keeps ``window - 1 +
  max_num_batched_tokens`` tokens plus one block, llama.cpp ``window + n_ubatch`` cells padded to 256 per sequence;
  :class:`ChunkedLocalSpec`: Llama 4's chunked-local attention, kept as a window of one chunk.
- :class:`StateSpec`: a fixed state per request (linear attention, SSM, short convolutions), one page per request
  (two with vLLM's prefix-cache ``align`` mode); :class:`CrossAttentionSpec`: keys and values of the encoder's
  tokens, computed once per request, a fixed state as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


def cdiv(a: float, b: float) -> int:
    return int(-(-a // b))


def pad(n: int, to: int) -> int:
    return cdiv(n, to) * to


@dataclass(frozen=True)
class CacheSpec:
    """Base of the cache specs: ``token_bytes`` per cached token, ``state_bytes`` per request (fixed)."""

    token_bytes: float = 0.0
    state_bytes: float = 0.0

    @property
    def window(self) -> int:
        """Tokens attended at most (0: the whole context)."""
        return 0

    @cached_property
    def key(self) -> tuple:
        """Specs of equal key share a cache group (cached: specs are memoised per model and asked per GPU kind)."""
        return (type(self), round(self.token_bytes, 3), round(self.state_bytes, 3), self.window)

    # --- how the cache grows: exactly one of the three is not None ------------------------------------------
    @property
    def context_token_bytes(self) -> float | None:
        """Bytes per token kept for the whole context (None: the cache does not grow with the whole context)."""
        return None

    @property
    def window_token_bytes(self) -> float | None:
        """Bytes per token kept within the window (None: not windowed)."""
        return None

    @property
    def request_state_bytes(self) -> float | None:
        """Bytes kept per request whatever the context (None: the cache is paged by tokens)."""
        return None

    # --- paging ---------------------------------------------------------------------------------------------
    def page_bytes(self, block_size: int) -> float:
        """Bytes of one page of ``block_size`` tokens (a state spec: its state)."""
        return self.token_bytes * block_size

    def tokens_per_block(self, page: float, block_size: int) -> int:
        """Tokens one page of ``page`` bytes holds for this spec (a spec without bytes: ``block_size``)."""
        return int(page // self.token_bytes) if self.token_bytes else block_size

    def blocks_per_request(self, block_tokens: int, max_model_len: int, max_num_batched_tokens: int,
                           state_pages: int = 1) -> int:
        """Blocks of ``block_tokens`` tokens a request of ``max_model_len`` tokens takes at most."""
        raise NotImplementedError

    def bytes_per_request(self, max_model_len: int, max_num_batched_tokens: int, block_size: int,
                          state_pages: int = 1) -> float:
        """What a request of ``max_model_len`` tokens holds at most, in whole pages of ``block_size`` tokens."""
        blocks = self.blocks_per_request(block_size, max_model_len, max_num_batched_tokens, state_pages)
        return blocks * self.page_bytes(block_size)

    def as_full_attention(self) -> CacheSpec:
        """This spec as an engine without a hybrid cache manager sizes it (windows kept as full attention)."""
        return self

    def llamacpp_kv_bytes(self, n_ctx: int, n_seq: int, n_ubatch: int, *, unified: bool = False,
                          swa_full: bool = False) -> float:
        """Bytes of llama.cpp's KV buffer for this layer: ``n_ctx`` cells in total over ``n_seq`` sequences."""
        return 0.0

    @staticmethod
    def merge(specs: list[CacheSpec]) -> CacheSpec:
        """The one spec of a cache group: its layers' specs must be equal (same class, bytes and window)."""
        first = specs[0]
        for s in specs[1:]:
            if s.key != first.key:
                raise ValueError(f"cache specs of one group differ: {first} and {s}")
        return first


@dataclass(frozen=True)
class FullAttentionSpec(CacheSpec):
    """K and V of every token of the context."""

    @property
    def context_token_bytes(self) -> float | None:
        return self.token_bytes

    def blocks_per_request(self, block_tokens: int, max_model_len: int, max_num_batched_tokens: int,
                           state_pages: int = 1) -> int:
        return cdiv(max_model_len, block_tokens)

    def llamacpp_kv_bytes(self, n_ctx: int, n_seq: int, n_ubatch: int, *, unified: bool = False,
                          swa_full: bool = False) -> float:
        return n_ctx * self.token_bytes


@dataclass(frozen=True)
class MLALatentSpec(FullAttentionSpec):
    """One compressed latent (``kv_lora_rank + qk_rope_head_dim``) per token, the same on every TP rank."""


@dataclass(frozen=True)
class CompressedSparseSpec(FullAttentionSpec):
    """DeepSeek-V4's compressed sparse attention: a window of raw tokens plus compressed entries, as bytes per token
    of a request of the reference length."""


@dataclass(frozen=True)
class SlidingWindowSpec(CacheSpec):
    """Attention over the last ``window`` tokens: the cache stops growing at the window."""

    sliding_window: int = 0

    @property
    def window(self) -> int:
        return self.sliding_window

    @property
    def window_token_bytes(self) -> float | None:
        return self.token_bytes

    def blocks_per_request(self, block_tokens: int, max_model_len: int, max_num_batched_tokens: int,
                           state_pages: int = 1) -> int:
        """vLLM: ``window - 1 + max_num_batched_tokens`` tokens at most, plus one block a step may straddle."""
        return cdiv(min(self.window - 1 + max_num_batched_tokens, max_model_len), block_tokens) + 1

    def as_full_attention(self) -> CacheSpec:
        return FullAttentionSpec(token_bytes=self.token_bytes)

    def llamacpp_kv_bytes(self, n_ctx: int, n_seq: int, n_ubatch: int, *, unified: bool = False,
                          swa_full: bool = False) -> float:
        """``pad256(min(n_ctx_seq, window + n_ubatch))`` cells per sequence (``--swa-full``: all ``n_ctx``;
        ``--kv-unified``: one pool of ``window x n_seq + n_ubatch``)."""
        if swa_full:
            return n_ctx * self.token_bytes
        if unified:
            return pad(min(n_ctx, self.window * n_seq + n_ubatch), 256) * self.token_bytes
        per_seq = n_ctx // max(n_seq, 1)
        return n_seq * pad(min(per_seq, self.window + n_ubatch), 256) * self.token_bytes


@dataclass(frozen=True)
class ChunkedLocalSpec(SlidingWindowSpec):
    """Llama 4's chunked-local attention: at most one chunk (``window``) is cached, sized as a window of it."""


@dataclass(frozen=True)
class StateSpec(CacheSpec):
    """A fixed state per request (linear attention, SSM, short convolution): one page per request."""

    @property
    def request_state_bytes(self) -> float | None:
        return self.state_bytes

    def page_bytes(self, block_size: int) -> float:
        return self.state_bytes

    def blocks_per_request(self, block_tokens: int, max_model_len: int, max_num_batched_tokens: int,
                           state_pages: int = 1) -> int:
        return state_pages


@dataclass(frozen=True)
class CrossAttentionSpec(StateSpec):
    """Keys and values of the encoder's tokens (Mllama's image tokens), computed once per request and fixed."""
