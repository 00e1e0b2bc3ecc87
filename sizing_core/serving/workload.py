"""The load a setup serves, as its own input: mean prompt and output lengths and either an arrival rate
(open loop) or a number of clients (closed loop). ``--context`` stays the engine's ``max_model_len``: a request
holds its prompt plus the tokens generated so far, ``I + O/2`` on average over its decode life, not the context."""

from __future__ import annotations

from dataclasses import dataclass

#: how requests arrive: Poisson (benchmark_serving's --request-rate), evenly spaced (burstiness -> inf: a constant
#: rate), K clients each sending its next request when the last one ends, or every request at once
LOAD_KINDS = ("rate", "rate-constant", "concurrency", "burst")


@dataclass(frozen=True)
class Workload:
    input_tokens: int
    output_tokens: int
    rate: float | None = None  # requests per second (open loop)
    concurrency: int | None = None  # clients in a closed loop (or the size of a burst)
    kind: str = ""  # one of LOAD_KINDS; "" = rate when a rate is given, else concurrency
    num_prompts: int | None = None  # a burst's size; a run's length (closed loops start with a burst of K)
    output_cv2: float = 0.0  # squared coefficient of variation of the output lengths (fixed 0, ShareGPT ~1)
    #: every request has exactly these lengths (a benchmark's random dataset with --ignore-eos), not only these
    #: means: closed-loop clients then stay in lock-step however many steps a wave's prompts take
    fixed_lengths: bool = False

    def __post_init__(self) -> None:
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise ValueError("input and output tokens must be at least 1")
        if (self.rate is None) == (self.concurrency is None):
            raise ValueError("a load is a request rate or a concurrency, exactly one of them")
        if self.rate is not None and self.rate <= 0:
            raise ValueError("the request rate must be positive")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError("the concurrency must be at least 1")
        if not self.kind:
            object.__setattr__(self, "kind", "rate" if self.rate is not None else "concurrency")
        if self.kind == "burst" and self.concurrency is None:
            raise ValueError("a burst is given as its size (concurrency = the prompts sent at once)")
        if self.kind not in LOAD_KINDS:
            raise ValueError(f"load kind {self.kind!r} is not one of {', '.join(LOAD_KINDS)}")

    def too_long_for(self, max_model_len: int) -> str | None:
        """Why a request of this load cannot run under ``max_model_len`` (the engine refuses a prompt whose prompt
        and output exceed it), or None."""
        if self.input_tokens + self.output_tokens <= max_model_len:
            return None
        return (f"a request of {self.input_tokens:,} + {self.output_tokens:,} tokens is longer than --context "
                f"{max_model_len:,} (the engine's maximum model length): raise --context")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    @property
    def held_tokens(self) -> float:
        """Tokens a running request holds on average over its decode life: the prompt and half the output."""
        return self.input_tokens + self.output_tokens / 2

    @property
    def arrival_cv2(self) -> float:
        """Squared coefficient of variation of the inter-arrival times (Poisson 1, evenly spaced 0)."""
        return 0.0 if self.kind == "rate-constant" else 1.0
