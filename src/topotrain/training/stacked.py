"""The ensemble's one computation: its members' parameters stacked on a leading member axis.

``stack_members`` stacks the members' models (``torch.func.stack_module_state``) and AdamW states
and builds the vmap of ``functional_call(GPT)`` over them; ``ensemble_step`` is one update of every
member: the objective is the sum of the member losses (each member's gradient is its own), each
member's gradient is clipped by its own norm (``clip_members``), and AdamW on the stacked tensors
is elementwise. ``unstack_member`` copies a member's slice back into a single run's model and
optimizer. (The trainer around it: ``training.ensemble``.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.func import functional_call, stack_module_state, vmap
from torch.optim import Optimizer

from topotrain.training.attention import member_backend
from topotrain.training.model import GPT, compile_model
from topotrain.training.train import TrainConfig, adamw


@dataclass
class Stack:
    """The members' parameters stacked on axis 0 (leaves), their AdamW, and ``losses``:
    (params, x, y) with (M, B, T) batches → the (M,) member losses."""

    params: dict[str, torch.Tensor]
    optimizer: Optimizer
    losses: Callable


def stack_optimizer_states(optimizers: list[Optimizer]) -> dict:
    """The members' AdamW states as one state dict of the stacked parameters: moments stacked on
    axis 0; the step and the hyperparameters are the members' common ones."""
    states = [o.state_dict() for o in optimizers]
    first = states[0]

    def stacked(index: int, name: str, value: torch.Tensor) -> torch.Tensor:
        return value if name == "step" else torch.stack([s["state"][index][name] for s in states])

    state = {
        i: {k: stacked(i, k, v) for k, v in entry.items()} for i, entry in first["state"].items()
    }
    return {"state": state, "param_groups": first["param_groups"]}


def member_optimizer_state(optimizer: Optimizer, i: int) -> dict:
    """Member ``i``'s slice of the stacked AdamW's state dict, copied: a single run's state dict."""
    full = optimizer.state_dict()
    state = {
        index: {k: (v if k == "step" else v[i]).clone() for k, v in entry.items()}
        for index, entry in full["state"].items()
    }
    return {"state": state, "param_groups": full["param_groups"]}


def stack_members(
    models: list[GPT], optimizers: list[Optimizer], cfg: TrainConfig, attention: str, compiled: bool
) -> Stack:
    """Stack the members' parameters and AdamW states; ``losses`` is the vmap of the members'
    model over them (on a parameterless meta GPT: ``functional_call`` keeps the head tied)."""
    params, _ = stack_module_state(models)
    model_cfg, device = models[0].config, next(models[0].parameters()).device
    with torch.device("meta"):
        base = GPT(model_cfg, member_backend(attention, device), cfg.gelu)
    values = list(params.values())  # a member's matrices have 2 axes, here 3
    optimizer = adamw([p for p in values if p.dim() >= 3], [p for p in values if p.dim() < 3], cfg)
    if optimizers[0].state:  # resumed: AdamW moments to carry on
        optimizer.load_state_dict(stack_optimizer_states(optimizers))

    def loss(member_params: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return functional_call(base, member_params, (x, y))[1]

    losses = vmap(loss)
    return Stack(params, optimizer, compile_model(losses, device) if compiled else losses)


def clip_members(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each member's gradient (axis 0 of every tensor) as ``clip_grad_norm_`` clips one run's:
    g ← g·min(1, max_norm / (‖g_i‖ + 1e-6)), ‖g_i‖ the 2-norm over all of member i's entries.
    Returns the (M,) norms before clipping."""
    per_tensor = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads])
    norms = torch.linalg.vector_norm(per_tensor, dim=0)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))
    return norms


def ensemble_step(
    stack: Stack, x: torch.Tensor, y: torch.Tensor, lr: float, grad_clip: float
) -> torch.Tensor:
    """One AdamW update of every member at ``lr`` on (M, B, T) batches; returns the (M, 2) rows
    [train loss, gradient norm before clipping] on the device, without a host sync."""
    for group in stack.optimizer.param_groups:
        group["lr"] = lr
    stack.optimizer.zero_grad(set_to_none=True)
    losses = stack.losses(stack.params, x, y)
    losses.sum().backward()  # the sum's gradient is each member's own
    norms = clip_members([p.grad for p in stack.params.values()], grad_clip)
    stack.optimizer.step()
    return torch.stack([losses.detach(), norms], dim=1)


def unstack_member(stack: Stack, i: int, model: GPT, optimizer: Optimizer) -> None:
    """Copy member ``i``'s slice of the stacked weights and AdamW state into its own model and
    optimizer (a single run's, for evaluation and its files)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(stack.params[name][i])
    if stack.optimizer.state:
        optimizer.load_state_dict(member_optimizer_state(stack.optimizer, i))
