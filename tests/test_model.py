"""The GPT: exact parameter counts, shapes, causal masking, initialisation."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from torch.nn import functional as F

from topotrain.config import n_params
from topotrain.training.model import GPT, CausalSelfAttention, GPTConfig

# The study's model family (config.yaml) and its required sizes.
FAMILY = {
    "tiny-3k": ((8, 1, 1), 2_936),
    "small-7k": ((16, 1, 2), 7_408),
    "med-21k": ((24, 2, 2), 20_640),
    "large-46k": ((32, 3, 4), 46_368),
    "xl-97k": ((48, 3, 4), 97_200),
}


def make(d: int, n_layer: int, n_head: int, **kw) -> GPT:
    return GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=d, **kw))


@pytest.mark.parametrize("name", FAMILY)
def test_parameter_count_matches_family_table_and_closed_form(name):
    (d, n_layer, n_head), expected = FAMILY[name]
    model = make(d, n_layer, n_head)
    assert model.num_params() == expected
    assert model.num_params() == n_params(d, n_layer)


def test_head_is_tied_to_token_embedding_and_counted_once():
    model = make(16, 1, 2)
    assert model.lm_head.weight is model.transformer.wte.weight
    every_tensor = sum(t.numel() for t in model.state_dict().values())
    assert model.num_params() == every_tensor - 128 * 16


def test_init_logs_parameter_count(caplog):
    with caplog.at_level(logging.INFO, logger="topotrain.training.model"):
        make(8, 1, 1)
    assert "2936 parameters" in caplog.text


def test_width_not_divisible_by_heads_is_rejected_naming_both():
    with pytest.raises(ValueError, match=r"n_embd=10.*n_head=4"):
        GPTConfig(n_layer=1, n_head=4, n_embd=10)


def test_forward_and_backward_shapes():
    torch.manual_seed(0)
    model = make(16, 2, 2, block_size=32)
    idx = torch.randint(128, (3, 20))
    logits, loss = model(idx, torch.randint(128, (3, 20)))
    assert logits.shape == (3, 20, 128) and loss.shape == ()
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
    assert model(idx)[1] is None


def test_loss_matches_cross_entropy_of_returned_logits():
    torch.manual_seed(1)
    model = make(8, 1, 1, block_size=16)
    idx, targets = torch.randint(128, (2, 16)), torch.randint(128, (2, 16))
    logits, loss = model(idx, targets)
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    by_hand = -log_probs.gather(-1, targets.unsqueeze(-1)).mean()
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-5)


def test_initial_loss_is_close_to_uniform_over_vocabulary():
    torch.manual_seed(2)
    model = make(48, 3, 4)
    idx = torch.randint(128, (8, 128))
    _, loss = model(idx, torch.randint(128, (8, 128)))
    assert abs(loss.item() - math.log(128)) < 0.1


def test_future_tokens_do_not_change_earlier_logits():
    torch.manual_seed(3)
    model = make(24, 2, 2, block_size=32)
    idx = torch.randint(128, (2, 32))
    changed = idx.clone()
    changed[:, 20] = (changed[:, 20] + 1) % 128
    before, after = model(idx)[0], model(changed)[0]
    torch.testing.assert_close(before[:, :20], after[:, :20], rtol=0, atol=1e-6)
    assert not torch.allclose(before[:, 20:], after[:, 20:])


def test_attention_matches_explicit_masked_softmax():
    torch.manual_seed(4)
    config = GPTConfig(n_layer=1, n_head=4, n_embd=32)
    attn = CausalSelfAttention(config)
    x = torch.randn(2, 10, 32)
    q, k, v = (x @ attn.c_attn.weight.T + attn.c_attn.bias).split(32, dim=-1)
    heads = [z.view(2, 10, 4, 8).transpose(1, 2) for z in (q, k, v)]
    scores = heads[0] @ heads[1].transpose(-1, -2) / math.sqrt(8)
    scores = scores.masked_fill(torch.ones(10, 10).triu(1).bool(), float("-inf"))
    y = (F.softmax(scores, dim=-1) @ heads[2]).transpose(1, 2).reshape(2, 10, 32)
    expected = y @ attn.c_proj.weight.T + attn.c_proj.bias
    torch.testing.assert_close(attn(x), expected, rtol=1e-5, atol=1e-6)


def test_sequence_longer_than_context_is_rejected():
    model = make(8, 1, 1, block_size=16)
    with pytest.raises(ValueError, match="17.*16"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_init_is_gpt2_scheme():
    torch.manual_seed(5)
    model = make(48, 3, 4)
    for name, p in model.named_parameters():
        if name.endswith("bias") and "ln" not in name:
            assert torch.count_nonzero(p) == 0, name
    residual = torch.cat([b.mlp.c_proj.weight.flatten() for b in model.transformer.h])
    hidden = torch.cat([b.mlp.c_fc.weight.flatten() for b in model.transformer.h])
    assert residual.std().item() == pytest.approx(0.02 / math.sqrt(2 * 3), rel=0.05)
    assert hidden.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.transformer.wpe.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_the_config_words_are_translated_once():
    from topotrain.training.model import GPTConfig

    cfg = GPTConfig.from_study({"d_model": 24, "n_layer": 2, "n_head": 2}, 64, 100)
    assert (cfg.n_embd, cfg.n_layer, cfg.n_head, cfg.block_size, cfg.vocab_size) == (
        24,
        2,
        2,
        64,
        100,
    )
