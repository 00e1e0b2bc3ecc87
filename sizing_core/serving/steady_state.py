"""The steady state of a setup at a load: the running batch as a fixed point, the prefill queue, and
saturation. Analytical: a few hundred step evaluations per answer.

Open loop at ``R`` requests/s (Poisson, or evenly spaced): with ``T`` the mean step, a request decodes for
``(O - 1) T``, so the decoding batch is ``B = R (O - 1) T`` (Little's law) and each step carries ``p = R I T``
prompt tokens; a token's step holds its own request and the others, ``T = step(1 + B, I + O/2, p)``, solved for
its smallest root. No root below the scheduler's limits
(``max_num_seqs`` or slots, the step's token budget, the KV pool at ``I + O/2`` tokens a request) means the rate
is above what the setup sustains: ``saturated``, and :func:`max_rate` is the largest rate with a root.

- ITL = ``T`` (decode and the prompt chunks interleaved with it);
- TTFT = request handling (``engines.speed.TTFT_FLOOR_MS``) + the rest of the scheduling window under way when
  it arrives (``N T / 2`` while the engine is busy: one step, or vLLM V0's ``--num-scheduler-steps N``) + the wait for prefill capacity + its own prefill (chunks of what the step
  budget leaves beside the decodes, or SGLang's prefill batches). The wait is M/G/1 (Pollaczek-Khinchine with
  Kingman's arrival term): ``W = Q x rho / (1 - rho) x S x (c_a^2 + c_s^2) / 2``, ``rho`` the share of the prefill
  capacity in use, ``S`` one prompt's prefill, ``Q`` the scheduler's fitted ``queue_factor`` (a prompt joining
  vLLM's next mixed step seldom waits a whole share; SGLang's waits for the prefill batches ahead, each pausing the
  decodes: fitted at 3.7x the M/G/1 wait); its 90th percentile from the exponential tail,
  ``W90 = W ln(10 rho) / rho``;
- E2E = TTFT + (O - 1) ITL.

Closed loop of ``K`` clients: ``X = K / E2E`` requests/s with ``B = X (O - 1) T``, ``p = X I T``, solved by a damped
iteration, the prompts ahead in the prefill queue by Schweitzer's approximate mean value analysis (each waits for
the others' share of the prefill capacity); clients beyond what the scheduler runs at once wait outside (``saturated``). A run of N prompts starts
with a burst of K prompts at once, whose extra TTFT counts in the run's mean by ``K / N``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..engines.speed import TTFT_FLOOR_MS
from .scheduler import Limits, Scheduler
from .step import StepModel
from .workload import Workload

# --- fitted at a load (scripts/calibrate_serving.py --fit) --------------------------------------------------------
#: request handling before the first forward pass at a load (HTTP, chat template, tokenising, handing the request to
#: the scheduler process): engines.speed's TTFT_FLOOR_MS (fitted on batch-1 TTFT rows) times this, per engine (their
#: API servers differ: SGLang's tokenizer manager, vLLM's API server process); ``*`` for the others
FLOOR_FACTOR = {"vllm": 0.7804, "sglang": 1.055, "*": 1.413}
#: the API server takes requests in one at a time (HTTP, chat template, tokenising): a burst of N queues for
#: N x (this + the prompt's tokens x FRONT_TOKEN_US) / 2 on average; per engine, as their API servers differ
FRONT_MS = {"vllm": 4.721, "sglang": 9.262, "*": 5.065}
FRONT_TOKEN_US = 0.29  # tokenising: per prompt token
SERVICE_CV2 = 0.0  # squared coefficient of variation of one prompt's prefill time (fixed lengths)
# ------------------------------------------------------------------------------------------------------------------
DEFAULT_NUM_PROMPTS = 1000  # benchmark_serving's default run length, for the backlog of a saturated run
RHO_CAP = 0.98


@dataclass(frozen=True)
class State:
    step_ms: float  # T: the mean step (ITL)
    batch: float  # mean decoding requests
    prefill_tokens: float  # prompt tokens per step
    prefill_ms: float  # S: one prompt's prefill once scheduled
    wait_ms: float  # mean wait for prefill capacity
    wait_p90_ms: float
    rho: float  # share of the prefill capacity in use
    throughput: float  # requests/s
    outside_wait_ms: float = 0.0  # closed loop: waiting for a free slot


class Solver:
    def __init__(self, model: StepModel, scheduler: Scheduler, workload: Workload) -> None:
        self.model, self.sched, self.w = model, scheduler, workload
        self.limits: Limits = scheduler.limits(workload)
        if model.dp_attention > 1:  # each DP-attention rank pages a pool of its own
            self.limits = replace(self.limits, kv_tokens=self.limits.kv_tokens * model.dp_attention)
        self.floor = TTFT_FLOOR_MS[model.family] * FLOOR_FACTOR.get(model.engine.id, FLOOR_FACTOR["*"])
        self.front_ms = (FRONT_MS.get(model.engine.id, FRONT_MS["*"])
                         + workload.input_tokens * FRONT_TOKEN_US / 1000)  # one prompt's turn at the API server
        self.held = workload.held_tokens
        self.window = scheduler.window_steps()  # steps per scheduling decision
        self.decodes = max(workload.output_tokens - 1, 0)

    def step(self, batch: float, prefill: float) -> float:
        return self.sched.step_ms(self.model, batch, self.held, prefill, self.w.input_tokens, self.limits)

    def running_cap(self) -> float:
        """Requests the scheduler can run at once: its limit, and the KV pool at ``I + O/2`` tokens each."""
        return max(0.0, min(self.limits.max_running, self.limits.kv_tokens / self.held))

    def work_ms(self, batch: float) -> float:
        """One prompt's share of the prefill capacity: ``I / room`` of a step carrying a full chunk beside the
        ``batch`` decodes (vLLM, llama.cpp), or of a full prefill batch (SGLang)."""
        limits, prompt = self.limits, self.w.input_tokens
        if self.sched.mixed:
            room = max(limits.token_budget - batch, 1.0)
            return prompt / room * self.step(batch, room)
        return prompt / limits.token_budget * self.model.prefill_ms(limits.token_budget, prompt)

    def _queue(self, batch: float, rate: float, cv2a: float) -> tuple:
        """(S, rho, W, W90) of the prefill queue at this state, open loop: M/G/1 (Kingman) with the prompt's
        share of the prefill capacity as its service."""
        service = self.sched.prefill_service_ms(self.model, batch, self.held, self.w, self.limits)
        work = self.work_ms(batch)
        rho = min(max(rate * work / 1000, 0.0), RHO_CAP)
        wait = self.sched.queue_factor * rho / (1 - rho) * work * (cv2a + SERVICE_CV2) / 2
        wait90 = wait * math.log(10 * rho) / rho if rho > 0.1 else 0.0
        return service, rho, wait, wait90

    # --- open loop --------------------------------------------------------------------------------------------
    # In the variable u = requests arriving per step (R x T), a step decodes B = u (O - 1) requests and prefills
    # p = u I tokens, takes T(u) = step(B, p), and serves X(u) = u / T(u) requests/s: the rate R is met where
    # X(u) = R, and the largest X(u) below the limits is the most the setup sustains.
    def _u_cap(self) -> float:
        caps = [math.inf]
        if self.decodes:
            caps.append(self.running_cap() / self.decodes)
        if self.sched.mixed:
            caps.append(self.limits.token_budget / (self.decodes + self.w.input_tokens))
        return min(caps)

    def _step_u(self, u: float) -> float:
        """The step a token sees: its own request and the Poisson number of others decoding, ``1 + B``."""
        return self.step(min(u * self.decodes + 1, max(self.running_cap(), 1.0)), u * self.w.input_tokens)

    def _rate_u(self, u: float) -> float:
        return u / self._step_u(u) * 1000

    def _peak(self) -> tuple[float, float]:
        """(u, X(u)) of the highest rate below the limits: a geometric grid, then a golden-section refinement."""
        cap = self._u_cap()
        if not cap > 0:
            return 0.0, 0.0
        if cap == math.inf:
            cap = 1e6
        grid = [cap * 0.75 ** i for i in range(48)]
        best = max(grid, key=self._rate_u)
        lo, hi = best * 0.75, min(best / 0.75, cap)
        for _ in range(20):
            a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
            if self._rate_u(a) < self._rate_u(b):
                lo = a
            else:
                hi = b
        u = (lo + hi) / 2
        return (u, self._rate_u(u)) if self._rate_u(u) >= self._rate_u(best) else (best, self._rate_u(best))

    def max_rate(self) -> float:
        """The largest request rate with a steady state below the limits (requests/s)."""
        if not hasattr(self, "_peak_cache"):
            self._peak_cache = self._peak()
        return self._peak_cache[1]

    def open_step(self, rate: float) -> float | None:
        """The mean step at ``rate``: the smallest ``u`` with ``X(u) = rate`` (None above :meth:`max_rate`)."""
        if rate > self.max_rate():
            return None
        lo, hi = 0.0, self._peak_cache[0]
        for _ in range(40):
            mid = (lo + hi) / 2
            if self._rate_u(mid) < rate:
                lo = mid
            else:
                hi = mid
        return self._step_u(hi)

    def open_state(self, rate: float) -> State | None:
        t = self.open_step(rate)
        if t is None:
            return None
        batch, prefill = rate * self.decodes * t / 1000, rate * self.w.input_tokens * t / 1000
        service, rho, wait, wait90 = self._queue(batch, rate, self.w.arrival_cv2)
        return State(step_ms=t, batch=batch, prefill_tokens=prefill, prefill_ms=service, wait_ms=wait,
                     wait_p90_ms=wait90, rho=rho, throughput=rate)

    def overloaded_run(self, rate: float, prompts: int, steps: int = 80) -> tuple[float, float, float]:
        """(mean wait for a slot in ms, token-weighted ITL in ms, mean decoding batch) of a run of ``prompts``
        arriving at ``rate`` above :meth:`max_rate`: a fluid model. The schedulers admit waiting prompts while
        they can (prefill first), so the running batch grows, serving ``X(B)``, until what the engine runs at
        once; only then do prompts queue, and those left at the run's end drain at the engine's rate."""
        decodes = max(self.decodes, 1)
        cap = max(self.running_cap(), 1.0)
        dt = prompts / rate / steps
        batch = waiting = wait_area = batch_area = tokens = weighted = 0.0
        served = 1.0
        for _ in range(steps):
            u = batch / decodes
            t = self._step_u(u)
            served = u / t * 1000  # requests/s at this batch
            admit = min(rate * dt + waiting, max(cap - batch, 0.0) + served * dt)
            waiting += rate * dt - admit
            batch = min(cap, max(0.0, batch + admit - served * dt))
            wait_area += waiting * dt
            batch_area += batch * dt
            tokens += served * decodes * dt
            weighted += served * decodes * dt * t
        wait_area += waiting * waiting / (2 * max(served, 1e-9))  # the queue left at the end drains
        itl = weighted / tokens if tokens else self._step_u(cap / decodes)
        return wait_area / prompts * 1000, itl, batch_area / (steps * dt)

    # --- closed loop ------------------------------------------------------------------------------------------
    def closed_state(self, clients: int) -> State:
        cap = max(self.running_cap(), 1.0)
        inside = min(float(clients), cap)
        t = self.step(0.0, 0.0)
        x = 0.0
        service = wait = wait90 = rho = 0.0
        batch = prefill = 0.0
        busy = min(1.0, inside - 1)  # another request's window is under way when one arrives (none for one client)
        queued = 0.0  # prompts waiting for or in prefill (Schweitzer's approximate mean value analysis)
        for _ in range(200):
            service = self.sched.prefill_service_ms(self.model, batch, self.held, self.w, self.limits)
            work = self.work_ms(batch)
            wait = work * queued * (inside - 1) / inside  # the others' prompts ahead of this one
            rho = min(x * work / 1000, RHO_CAP)
            wait90 = 1.8 * wait
            # in the engine, from arrival to the last token
            engine = busy * self.window * t / 2 + service + wait + self.decodes * t
            x = min(clients / (self.floor + engine), inside / engine) * 1000  # requests/s
            batch, prefill = x * self.decodes * t / 1000, x * self.w.input_tokens * t / 1000
            queued = x * (service + wait) / 1000
            seen = 1 + batch * (inside - 1) / inside  # a token's own request and the others decoding
            new = self.step(seen, prefill)
            if abs(new - t) < 1e-6 * t:
                t = new
                break
            t = 0.5 * t + 0.5 * new
        e2e = clients / x * 1000
        outside = max(0.0, e2e - (self.floor + busy * self.window * t / 2 + service + wait + self.decodes * t))
        return State(step_ms=t, batch=batch, prefill_tokens=prefill, prefill_ms=service, wait_ms=wait,
                     wait_p90_ms=wait90, rho=rho, throughput=x, outside_wait_ms=outside)

    def burst_extra_ms(self, clients: float, state: State) -> float:
        """Mean extra TTFT of ``clients`` prompts sent at once over the steady state's: they queue for the step
        budget (or the prefill batches) one behind the other."""
        n = min(clients, max(self.running_cap(), 1.0))
        if self.sched.mixed:
            room = max(self.limits.token_budget - state.batch, 1.0)
            per_step = self.step(state.batch, room)
            total = n * self.w.input_tokens / room * per_step
        else:
            total = n * self.w.input_tokens / self.limits.token_budget * self.model.prefill_ms(
                self.limits.token_budget, self.w.input_tokens)
        # the API server takes the prompts in one after the other
        front = clients * self.front_ms / 2
        return max(0.0, total / 2 - state.prefill_ms - state.wait_ms) + front
