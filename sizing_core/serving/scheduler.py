"""How each engine's scheduler shares a step between running requests and waiting prompts, one class
per engine type, found through :data:`SCHEDULERS` by the engine's class (its nearest ancestor with a scheduler:
MLX serves through llama-server and gets the llama.cpp server's).

- vLLM V1: continuous batching with chunked prefill always on; a step carries every running request's decode token
  and up to ``max_num_batched_tokens`` - decodes of prompt tokens; at most ``max_num_seqs`` running; requests
  preempted when the paged KV pool is full (``vllm/v1/core/sched/scheduler.py``). V0's multi-step scheduling
  (``--num-scheduler-steps N``) decides once per ``N`` steps (``vllm/engine/llm_engine.py``'s multi-step path).
- SGLang: prefill batches of up to ``chunked_prefill_size`` tokens run apart from decode batches (mixed chunks are
  off by default), so decodes wait while a prefill batch runs; the token pool bounds the running requests
  (``managers/scheduler.py``, ``schedule_policy.py``).
- llama.cpp server: ``--parallel`` slots (4 with the unified cache by default), each step one batch of every
  slot's next token and prompt tokens up to ``n_batch`` (2048), the unified KV cache of ``n_ctx`` cells shared.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engines import Engine
from ..engines.llamacpp import LlamaCpp
from ..engines.memory import EngineStartup
from ..engines.sglang import SGLang as SGLangEngine
from ..engines.vllm import VLLM
from ..gpus import GPU
from .step import StepModel
from .workload import Workload


@dataclass(frozen=True)
class Limits:
    max_running: float  # requests the scheduler runs at once (max_num_seqs, slots)
    token_budget: float  # tokens one step (or one prefill batch) carries
    kv_tokens: float  # tokens the KV pool holds (all running requests together)


class Scheduler:
    """The shared mechanics: a mixed step (decode and prompt chunks together) unless ``mixed`` is False."""

    engine_type: type[Engine] = Engine
    mixed = True
    #: on the M/G/1 wait of the prefill queue (fitted at a load, scripts/calibrate_serving.py --fit): an arriving
    #: prompt joins the next mixed step's chunk beside the decodes, so it seldom waits a whole prompt's share
    queue_factor = 0.1723
    #: the launch command states how many requests run at once (vLLM's --max-num-seqs): at a load it is the
    #: scheduler's running count, not the memory plan's one request
    launch_states_running = False

    def __init__(self, engine: Engine, gpu: GPU, start: EngineStartup | None) -> None:
        self.engine, self.gpu, self.start = engine, gpu, start

    def limits(self, workload: Workload) -> Limits:
        raise NotImplementedError

    @classmethod
    def memory_requests(cls, workload: Workload) -> int:
        """Requests of ``max_model_len`` the memory plan holds at this load: vLLM and SGLang page one pool (what
        memory leaves), so one; llama.cpp's server gives each slot its own ``n_ctx / slots`` cells."""
        return 1

    def window_steps(self) -> int:
        """Steps the engine runs per scheduling decision: a waiting prompt is admitted at the next decision."""
        return 1

    def kv_tokens(self) -> float:
        if self.start is None or self.start.kv_cache_tokens <= 0:
            return float("inf")
        return float(self.start.kv_cache_tokens)

    def step_ms(self, model: StepModel, batch: float, held: float, prefill: float, prompt: float,
                limits: Limits) -> float:
        """Mean step time with ``batch`` decoding requests and ``prefill`` prompt tokens per decode step."""
        if self.mixed:
            return model.step(batch, held, prefill, prompt).total_ms
        decode = model.step(batch, held).total_ms
        if prefill <= 0:
            return decode
        batches = prefill / limits.token_budget  # prefill batches per decode step, each full
        return decode + batches * model.prefill_ms(limits.token_budget, prompt)

    def prefill_service_ms(self, model: StepModel, batch: float, held: float, workload: Workload,
                           limits: Limits) -> float:
        """Time from a prompt's first scheduled chunk to its first token: its chunks, each in a step that also
        decodes the running batch (mixed), or its prefill batch (apart)."""
        prompt = workload.input_tokens
        if self.mixed:
            room = max(limits.token_budget - batch, min(limits.token_budget, 256.0))
            chunks = max(1, -(-prompt // int(room)))
            return chunks * model.step(batch, held, min(prompt, room), prompt).total_ms
        chunks = max(1, -(-prompt // int(limits.token_budget)))
        return chunks * model.prefill_ms(min(prompt, limits.token_budget), prompt)


class VllmV1(Scheduler):
    engine_type = VLLM
    launch_states_running = True
    mixed = True

    def window_steps(self) -> int:
        assert isinstance(self.engine, VLLM)
        return max(1, self.engine.num_scheduler_steps or 1)

    def limits(self, workload: Workload) -> Limits:
        from ..engines.memory import CURRENT_VLLM, parse_version, vllm_defaults

        budget, seqs = vllm_defaults(self.gpu, parse_version(self.engine.version) or CURRENT_VLLM)
        if self.start is not None:
            budget = self.start.max_num_batched_tokens or budget
            seqs = self.start.max_num_seqs or seqs
        budget = self.engine.max_num_batched_tokens or budget
        seqs = self.engine.max_num_seqs or seqs
        return Limits(max_running=float(seqs), token_budget=float(budget), kv_tokens=self.kv_tokens())


#: SGLang's chunked_prefill_size and cuda-graph batch by GPU memory (server_args, late 2025)
def _sglang_chunk(gpu: GPU) -> int:
    from ..engines.memory import cuda_total_bytes
    from ..units import GIB

    gb = cuda_total_bytes(gpu) / GIB
    return 2048 if gb < 35 else 4096 if gb < 60 else 8192 if gb < 160 else 16384


class SGLang(Scheduler):
    engine_type = SGLangEngine
    mixed = False
    #: a prompt waits for the prefill batches ahead of it, each pausing the decodes (fitted: 3.7x the M/G/1 wait)
    queue_factor = 3.74

    def limits(self, workload: Workload) -> Limits:
        budget = self.engine.max_num_batched_tokens or _sglang_chunk(self.gpu)
        running = self.engine.max_num_seqs or 4096  # max_running_requests: the token pool decides
        return Limits(max_running=float(running), token_budget=float(budget), kv_tokens=self.kv_tokens())


class LlamaCppServer(Scheduler):
    engine_type = LlamaCpp
    mixed = True
    DEFAULT_SLOTS = 4  # --parallel -1 (auto) with the unified KV cache
    N_BATCH = 2048

    @classmethod
    def slots(cls, workload: Workload) -> int:
        return workload.concurrency if not workload.open_loop and workload.concurrency else cls.DEFAULT_SLOTS

    @classmethod
    def memory_requests(cls, workload: Workload) -> int:
        return cls.slots(workload)

    def limits(self, workload: Workload) -> Limits:
        slots = self.engine.max_num_seqs or self.slots(workload)
        return Limits(max_running=float(slots), token_budget=float(self.N_BATCH), kv_tokens=self.kv_tokens())


#: the engine schedulers by engine id (ollama and MLX answer as llama.cpp's server)
SCHEDULERS: dict[type[Engine], type[Scheduler]] = {cls.engine_type: cls for cls in (VllmV1, SGLang, LlamaCppServer)}


def scheduler_class(engine: Engine) -> type[Scheduler]:
    """The scheduler of ``engine``'s class or of its nearest ancestor that has one (else llama.cpp server's)."""
    return next((SCHEDULERS[t] for t in type(engine).__mro__ if t in SCHEDULERS), LlamaCppServer)


def scheduler_for(engine: Engine, gpu: GPU, start: EngineStartup | None) -> Scheduler:
    return scheduler_class(engine)(engine, gpu, start)


def launch_states_running(engine: Engine) -> bool:
    return scheduler_class(engine).launch_states_running


def memory_requests(engine: Engine, workload: Workload) -> int:
    """Requests of ``max_model_len`` tokens to plan memory for at ``workload`` (``fit`` at a load)."""
    return scheduler_class(engine).memory_requests(workload)
