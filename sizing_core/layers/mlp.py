"""Feed-forward kinds: dense (gated or plain), mixture of experts, and DeciLM's linear replacement blocks."""

from __future__ import annotations

from typing import ClassVar

from ..record import checked, record
from ..tensors import Role, Tensor, matrix, vector
from .base import CachesNothing, Kind


@record
class LinearReplacement(CachesNothing):
    """DeciLM (Nemotron-NAS) blocks whose attention or FFN was replaced by one hidden x hidden linear layer."""

    kind: ClassVar[str] = "linear"
    title: ClassVar[str | None] = "linear replacements"

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        return [matrix(prefix, "linear", Role.ATTN_OUTPUT, hidden, hidden, layer)]


@record
class DenseMLP(Kind):
    """Gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down; Nemotron-H relu2) feed-forward."""

    kind: ClassVar[str] = "dense"
    intermediate: int = checked(kind=int, gt=0)
    gated: bool = True
    bias: bool = False

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.mlp"
        out = [matrix(p, "up_proj", Role.FFN_UP, self.intermediate, hidden, layer),
               matrix(p, "down_proj", Role.FFN_DOWN, hidden, self.intermediate, layer)]
        if self.gated:
            out.insert(0, matrix(p, "gate_proj", Role.FFN_GATE, self.intermediate, hidden, layer))
        if self.bias:
            out.append(vector(p, "bias", self.intermediate * (2 if self.gated else 1) + hidden, layer))
        return out

    def inactive_params(self, hidden: int) -> int:
        return 0


@record
class MoE(Kind):
    """Mixture of experts: a router, ``num_experts`` routed experts of which ``top_k`` run per token, optional
    always-on shared experts (``shared_intermediate`` is their combined width) and optional dense MLP beside it
    (Gemma 4 26B-A4B). ``latent_size`` (Nemotron 3 Super) runs routed experts in a smaller latent space."""

    kind: ClassVar[str] = "moe"
    num_experts: int = checked(kind=int, gt=0)
    top_k: int = checked(kind=int, gt=0)
    expert_intermediate: int = checked(kind=int, gt=0)
    shared_intermediate: int = 0
    shared_gate: bool = False  # Qwen2-MoE style sigmoid gate on the shared expert
    dense_intermediate: int = 0
    gated: bool = True
    expert_bias: bool = False  # gpt-oss expert biases
    router_bias: bool = False
    latent_size: int = 0

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.mlp"
        width = self.latent_size or hidden
        e, inter = self.num_experts, self.expert_intermediate
        out = [matrix(p, "gate", Role.ROUTER, e, hidden, layer)]
        if self.router_bias:
            out.append(vector(p, "gate.bias", e, layer))
        if self.gated:
            out.append(matrix(p, "experts.gate_proj", Role.FFN_GATE_EXPS, inter, width, layer, e))
        out += [matrix(p, "experts.up_proj", Role.FFN_UP_EXPS, inter, width, layer, e),
                matrix(p, "experts.down_proj", Role.FFN_DOWN_EXPS, width, inter, layer, e)]
        if self.expert_bias:
            out.append(vector(p, "experts.bias", e * (inter * (2 if self.gated else 1) + width), layer))
        if self.latent_size:
            out += [matrix(p, "fc1_latent_proj", Role.ATTN_OTHER, self.latent_size, hidden, layer),
                    matrix(p, "fc2_latent_proj", Role.ATTN_OTHER, hidden, self.latent_size, layer)]
        if self.shared_intermediate:
            s = self.shared_intermediate
            if self.gated:
                out.append(matrix(p, "shared_experts.gate_proj", Role.FFN_GATE_SHEXP, s, hidden, layer))
            out += [matrix(p, "shared_experts.up_proj", Role.FFN_UP_SHEXP, s, hidden, layer),
                    matrix(p, "shared_experts.down_proj", Role.FFN_DOWN_SHEXP, hidden, s, layer)]
            if self.shared_gate:
                out.append(vector(p, "shared_expert_gate", hidden, layer))
        if self.dense_intermediate:
            out += DenseMLP(intermediate=self.dense_intermediate).tensors(f"{prefix}.dense", hidden, layer)
        return out

    def routed_params(self, hidden: int) -> int:
        width = self.latent_size or hidden
        per_expert = (3 if self.gated else 2) * width * self.expert_intermediate
        if self.expert_bias:
            per_expert += self.expert_intermediate * (2 if self.gated else 1) + width
        return self.num_experts * per_expert

    def inactive_params(self, hidden: int) -> int:
        """Routed-expert parameters a token does not touch: all but ``top_k`` of ``num_experts``."""
        return self.routed_params(hidden) * (self.num_experts - self.top_k) // self.num_experts


MLP = DenseMLP | MoE | LinearReplacement
