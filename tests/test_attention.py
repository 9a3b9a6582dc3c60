"""The tiny-head attention kernel against PyTorch's SDPA, its backend rule, and the GELU option."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from topotrain.training import attention
from topotrain.training.attention import TinyHeadAttention, causal_attention, resolve_attention
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.train import TrainConfig, fingerprint_settings

pytest.importorskip("numba")
CPU = torch.device("cpu")


def sdpa_reference(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
    """Causal attention written out with PyTorch's SDPA on the heads' own layout."""
    B, T, C3 = qkv.shape
    C, D = C3 // 3, C3 // 3 // n_head
    q, k, v = (z.reshape(B, T, n_head, D).permute(0, 2, 1, 3) for z in qkv.split(C, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.permute(0, 2, 1, 3).reshape(B, T, C)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize(
    ("n_head", "head_dim", "T"),
    [(4, 8, 128), (4, 12, 128), (2, 16, 37), (1, 8, 1), (2, 12, 2), (1, 16, 3)],
)  # query rows go in pairs: odd and even T, the last pair short
def test_kernel_matches_sdpa_outputs_and_gradients(n_head, head_dim, T):
    gen = torch.Generator().manual_seed(head_dim + T)
    qkv = torch.randn(3, T, 3 * n_head * head_dim, generator=gen)
    dy = torch.randn(3, T, n_head * head_dim, generator=gen)
    grads = []
    for fn in (lambda x: TinyHeadAttention.apply(x, n_head), lambda x: sdpa_reference(x, n_head)):
        x = qkv.clone().requires_grad_(True)
        y = fn(x)
        y.backward(dy)
        grads.append((y.detach(), x.grad))
    (y, g), (y_ref, g_ref) = grads
    assert rel(y, y_ref) < 1e-5
    assert rel(g, g_ref) < 1e-5


def test_first_row_attends_only_to_itself():
    """Row 0 of causal attention is v_0 exactly, whatever q and k are (a closed form)."""
    qkv = torch.randn(2, 5, 3 * 8)
    y = TinyHeadAttention.apply(qkv, 1)
    assert torch.allclose(y[:, 0], qkv[:, 0, 16:24], atol=1e-7)


def test_without_grad_no_probabilities_are_kept_and_output_is_the_same():
    qkv = torch.randn(2, 20, 3 * 16)
    with torch.no_grad():
        y = TinyHeadAttention.apply(qkv, 2)
    assert not y.requires_grad
    assert rel(y, sdpa_reference(qkv, 2)) < 1e-5


def test_result_does_not_depend_on_the_thread_count():
    qkv = torch.randn(8, 64, 3 * 32, requires_grad=True)
    outs = []
    for threads in (1, 2):
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            x = qkv.detach().clone().requires_grad_(True)
            y = TinyHeadAttention.apply(x, 4)
            y.sum().backward()
            outs.append((y.detach(), x.grad))
        finally:
            torch.set_num_threads(old)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def test_model_with_the_kernel_matches_the_stock_model():
    cfg = GPTConfig(n_layer=2, n_head=2, n_embd=24, block_size=32)
    torch.manual_seed(0)
    stock = GPT(cfg)
    torch.manual_seed(0)
    fast = GPT(cfg, attention="numba")
    idx = torch.randint(128, (4, 32))
    losses = []
    for model in (stock, fast):
        _, loss = model(idx, idx)
        loss.backward()
        losses.append(loss.detach())
    assert losses[0].item() == pytest.approx(losses[1].item(), rel=1e-6)
    for (name, a), b in zip(stock.named_parameters(), fast.parameters(), strict=True):
        assert rel(b.grad, a.grad) < 1e-5, name


def test_backend_rule(monkeypatch):
    cuda = torch.device("cuda")
    assert resolve_attention("auto", CPU) == "numba"
    assert resolve_attention("auto", CPU, head_dim=8) == "numba"
    assert resolve_attention("auto", CPU, head_dim=12) == "numba"
    assert resolve_attention("auto", CPU, head_dim=16) == "sdpa"  # where SDPA is as fast
    assert resolve_attention("auto", CPU, head_dim=4) == "sdpa"  # no kernel compiled for it
    assert resolve_attention("numba", CPU, head_dim=16) == "numba"  # asked for: given
    with pytest.raises(
        ValueError, match=r"compiled for head dims \(8, 12, 16\); this model's is 6"
    ):
        resolve_attention("numba", CPU, head_dim=6)
    assert resolve_attention("auto", CPU, compiled=True) == "sdpa"
    assert resolve_attention("auto", cuda) == "sdpa"
    assert resolve_attention("sdpa", CPU) == "sdpa"
    with pytest.raises(ValueError, match="this run is on cuda: use auto or sdpa"):
        resolve_attention("numba", cuda)
    with pytest.raises(ValueError, match="on cpu with train.compile"):
        resolve_attention("numba", CPU, compiled=True)
    with pytest.raises(ValueError, match="train.attention must be one of"):
        resolve_attention("flash", CPU)
    monkeypatch.setattr(attention, "numba_error", lambda: "numba is not importable (test)")
    assert resolve_attention("auto", CPU) == "sdpa"  # the pure-PyTorch fallback
    with pytest.raises(ValueError, match="numba is not importable"):
        resolve_attention("numba", CPU)


def test_causal_attention_checks_dtype_for_the_kernel():
    with pytest.raises(ValueError, match="float32 on CPU"):
        causal_attention(torch.randn(1, 4, 24, dtype=torch.float64), 1, "numba")
    x = torch.randn(1, 4, 24, dtype=torch.float64)
    assert causal_attention(x, 1, "sdpa").dtype == torch.float64


def test_tanh_gelu_option():
    cfg = GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=8)
    exact, tanh = (
        GPT(cfg).transformer.h[0].mlp.gelu,
        GPT(cfg, gelu="tanh").transformer.h[0].mlp.gelu,
    )
    x = torch.linspace(-3, 3, 13)
    assert torch.allclose(exact(x), 0.5 * x * (1 + torch.erf(x / 2**0.5)), atol=1e-6)
    closed = 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x**3)))
    assert torch.allclose(tanh(x), closed, atol=1e-6)
    assert not torch.allclose(tanh(x), exact(x), atol=1e-5)
    with pytest.raises(ValueError, match="gelu must be one of"):
        GPT(cfg, gelu="relu")
    with pytest.raises(ValueError, match=r"train\.gelu='fast': must be one of exact, tanh"):
        TrainConfig(gelu="fast")
    with pytest.raises(ValueError, match=r"train\.attention='flash': must be one of auto, sdpa"):
        TrainConfig(attention="flash")


def test_stock_kernels_keep_old_fingerprints_and_others_change_them():
    cfg = TrainConfig()
    stock = fingerprint_settings(cfg, "sdpa")
    assert "attention" not in stock and "gelu" not in stock  # as before these options existed
    assert fingerprint_settings(cfg, "numba")["attention"] == "numba"
    assert fingerprint_settings(TrainConfig(gelu="tanh"), "sdpa")["gelu"] == "tanh"


def test_kernel_head_dims_agree_with_the_compiled_kernels():
    from topotrain.training.attention_kernels import HEAD_DIMS

    assert HEAD_DIMS == attention.KERNEL_HEAD_DIMS


IMPORT_ORDER = """
import hashlib, os, sys
from pathlib import Path
if sys.argv[1] == "numba-first":
    os.environ["NUMBA_NUM_THREADS"] = "2"  # a two-thread pool, sized before topotrain can
    import numba  # noqa: F401
sys.path.insert(0, {tests!r})
from conftest import write_random_tokens
from topotrain.training.model import GPTConfig
from topotrain.training.train import TrainConfig, train_model
model = GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=16)
cfg = TrainConfig(steps=30, checkpoint_interval=10, batch_size=4, warmup_steps=5, eval_batches=2,
                  eval_batch_size=4, seed=7, device="cpu", threads=1, attention="numba")
root = Path(sys.argv[2])
corpus = write_random_tokens(root)
for k in range(2):
    train_model(model, cfg, *corpus, root / f"out{{k}}", root / f"state{{k}}", progress=False)
    files = sorted((root / f"out{{k}}").iterdir())
    print(hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest())
"""


def test_numba_training_is_bit_identical_whatever_was_imported_first(tmp_path):
    """Two trainings in a process that imported numba with a two-thread pool first give the
    bytes of two trainings in a clean process (before the fix the first one differed: the pool's
    launch reset torch's OpenMP thread count)."""
    import subprocess
    import sys
    from pathlib import Path

    code = IMPORT_ORDER.format(tests=str(Path(__file__).parent))
    env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_NUM_THREADS"}
    digests = {}
    for mode in ("clean", "numba-first"):
        (tmp_path / mode).mkdir()
        out = subprocess.run(
            [sys.executable, "-c", code, mode, str(tmp_path / mode)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests[mode] = out.stdout.split()
    assert digests["numba-first"] == digests["clean"] and len(set(digests["clean"])) == 1
