"""The Pythia branch: EleutherAI/pythia-* (GPT-NeoX) hub revisions ``step{n}`` → topology records.

A revision is resolved once to its cached snapshot folder (``fetch_revision``, the only hub call);
everything after reads that folder: the model and tokenizer (``load_model``) and the raw weight
matrices (``revision_weight_matrices``, no model built). The hub cache is $HF_HOME/hub (or
$HF_HUB_CACHE); HF_HUB_OFFLINE=1 resolves from the cache only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from topotrain.config import DEFAULTS
from topotrain.devices import resolve_device
from topotrain.hub import revision_name
from topotrain.sources.hub_files import HubFetchError, fetch_snapshot
from topotrain.sources.hub_files import download_hint as revision_hint
from topotrain.sources.weights import weight_matrices

_EMBEDDINGS = DEFAULTS["pythia"]["embeddings"]  # the schema's defaults


class PythiaError(HubFetchError):
    """A Pythia revision cannot be resolved or loaded; the message says how to pre-download it."""


def download_hint(model_id: str, step: int) -> str:
    """How to pre-fill the cache for one revision, and which variables point at it."""
    return revision_hint(model_id, revision_name(step))


def fetch_revision(model_id: str, step: int) -> dict:
    """Resolve ``model_id`` at revision step{n} to its cached snapshot, downloading if online the
    weights of one format only (``hub_files.fetch_snapshot``).

    Returns {"model", "step", "revision", "snapshot", "commit" (the snapshot folder's name),
    "files", "sha256" ({weight file: sha256}), "downloaded" (the weight files this fetch brought
    into the cache)}. Any failure (unknown revision, offline without
    cache, no network, no weights) raises PythiaError at once.
    """
    try:
        snapshot = fetch_snapshot(model_id, revision_name(step))
    except HubFetchError as err:
        raise PythiaError(str(err)) from err
    return {
        "model": model_id,
        "step": int(step),
        **{
            k: snapshot[k]
            for k in ("revision", "snapshot", "commit", "files", "sha256", "downloaded")
        },
    }


def snapshot_label(snapshot: str | Path) -> str:
    """'org/name@step{n} (commit …)' read from a hub-cache snapshot path; the path if not in one."""
    snap = Path(snapshot)
    repo = snap.parent.parent
    if snap.parent.name != "snapshots" or not repo.name.startswith("models--"):
        return str(snap)
    refs = repo / "refs"
    names = [r.name for r in sorted(refs.glob("*")) if r.is_file() and r.read_text() == snap.name]
    model = repo.name.removeprefix("models--").replace("--", "/")
    return f"{model}@{','.join(names) or '?'} (commit {snap.name}, {snap})"


def resolve_dtype(dtype: str, device: str):
    """torch dtype: 'auto' = float16 on CUDA, float32 elsewhere; else torch.<dtype>."""
    import torch

    if dtype == "auto":
        return torch.float16 if str(device).startswith("cuda") else torch.float32
    return getattr(torch, dtype)


def load_model(
    snapshot_or_model_id: str | Path,
    step: int | None = None,
    device: str = "cpu",
    dtype: str = "auto",
):
    """(model, tokenizer) in eval mode from a snapshot folder, or from
    (model id, step) via fetch_revision.

    Always loads from the resolved snapshot folder with local_files_only=True: no hub call here.
    A missing pad token is set to eos; truncation keeps each text's first tokens (right side).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = Path(snapshot_or_model_id)
    if not source.is_dir():
        if step is None:
            raise ValueError(f"{snapshot_or_model_id} is no snapshot folder: pass step to fetch it")
        source = Path(fetch_revision(str(snapshot_or_model_id), step)["snapshot"])
    device = resolve_device(device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            source, local_files_only=True, dtype=resolve_dtype(dtype, device)
        )
    except Exception as err:
        raise PythiaError(
            f"cannot load {snapshot_label(source)}: {type(err).__name__}: {err}"
        ) from err
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.truncation_side = "right"
    return model.to(device).eval(), tokenizer


def is_heading(text: str) -> bool:
    """WikiText section headings look like '= Title =' or '= = Sub = =' once stripped."""
    return text.startswith("=") and text.endswith("=")


def select_texts(
    paragraphs: Sequence[str],
    n_texts: int = _EMBEDDINGS["n_texts"],
    min_chars: int = _EMBEDDINGS["min_chars"],
    seed: int = _EMBEDDINGS["text_seed"],
) -> list[str]:
    """n_texts stripped paragraphs of ≥ min_chars characters, headings excluded, chosen without
    replacement by a seeded RNG and returned in their original order."""
    stripped = [p.strip() for p in paragraphs]
    kept = [i for i, p in enumerate(stripped) if len(p) >= min_chars and not is_heading(p)]
    if len(kept) < n_texts:
        raise ValueError(
            f"only {len(kept)} of {len(stripped)} paragraphs have >= {min_chars} characters and "
            f"are no heading; need n_texts={n_texts}"
        )
    chosen = np.sort(np.random.default_rng(seed).choice(len(kept), size=n_texts, replace=False))
    return [stripped[kept[i]] for i in chosen]


def batch_statistics(model, input_ids, attention_mask):
    """(pooled (b, d) float32, Σ NLL in nats, n targets) of one padded batch.

    pooled = mean of the last hidden layer (the base model's output, after its final layer norm)
    over the mask's tokens; targets are tokens t ≥ 1 of each text, predicted from tokens < t. The
    output head runs on the predicting positions only (not on padding or each text's last token:
    at vocabulary 50,304 the logits are most of the pass). Positions restart at 0 at each text's
    first token, so left and right padding give the same result.
    """
    import torch.nn.functional as F

    mask = attention_mask.bool()
    if not mask.any(dim=1).all():
        raise ValueError("a text has no tokens after tokenisation")
    positions = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
    hidden = model.base_model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=positions
    ).last_hidden_state
    targets = mask[:, 1:] & mask[:, :-1]
    logits = model.get_output_embeddings()(hidden[:, :-1][targets]).float()
    nll = F.cross_entropy(logits, input_ids[:, 1:][targets], reduction="sum")
    hidden = hidden.float().masked_fill(~mask[..., None], 0.0)  # NaN-safe at pads
    pooled = hidden.sum(dim=1) / mask.sum(dim=1, keepdim=True)
    return pooled, float(nll), int(targets.sum())


def embed_texts(
    model,
    tokenizer,
    texts: Sequence[str],
    max_length: int = 128,
    batch_size: int = 16,
    device: str | None = None,
) -> tuple[np.ndarray, float, int]:
    """(E float64 (n, d), Σ NLL (nats), n_tokens) of texts, each one window of its first
    max_length tokens; perplexity = exp(Σ NLL / n_tokens) over the windows' tokens 2..L.

    Texts are batched by token length (longest first) to cut padding; E keeps the input order.
    """
    import torch

    device = device or next(model.parameters()).device
    lengths = [
        len(ids)
        for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    ]
    order = np.argsort(-np.asarray(lengths), kind="stable")
    pooled, nll_sum, n_tokens = [], 0.0, 0
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(
                [texts[i] for i in order[start : start + batch_size]],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            ).to(device)
            p, nll, n = batch_statistics(model, batch["input_ids"], batch["attention_mask"])
            pooled.append(p.cpu().numpy())
            nll_sum, n_tokens = nll_sum + nll, n_tokens + n
    E = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float64)
    E[order] = np.concatenate(pooled)
    return E, nll_sum, n_tokens


def perplexity(nll_sum: float, n_tokens: int) -> float:
    """exp(Σ NLL / n_tokens) (NLL in nats); ValueError without tokens."""
    if n_tokens < 1:
        raise ValueError("perplexity needs at least one predicted token")
    return math.exp(nll_sum / n_tokens)


def revision_weight_matrices(snapshot: str | Path) -> dict[str, np.ndarray]:
    """Every 2-D floating tensor of a snapshot's weights, float32, keyed as in the checkpoint
    (e.g. gpt_neox.layers.0.attention.query_key_value.weight); no model is built."""
    return weight_matrices(snapshot, snapshot_label(snapshot))


def revision_doc(revision: dict, **fields) -> dict:
    """A per-revision record: the revision's model, step, commit and weights_sha256 ({weight
    file: sha256} from fetch_revision; absent if an older topotrain fetched it), then fields."""
    doc = {"model": revision["model"], "step": revision["step"], "commit": revision["commit"]}
    if "sha256" in revision:
        doc["weights_sha256"] = revision["sha256"]
    return {**doc, **fields}


def weights_present(revision: dict) -> None:
    """PythiaError when a fetched revision's weight files are gone from the cache (released by
    keep_weights: false, or deleted), naming the fix."""
    gone = [f for f in revision["sha256"] if not (Path(revision["snapshot"]) / f).is_file()]
    if gone:
        raise PythiaError(
            f"{revision['model']} {revision['revision']}: the weights {gone} are gone from the "
            f"cache {revision['snapshot']} (keep_weights: false releases them once the records are "
            "written). To compute its records again, fetch it again: snakemake --forcerun "
            f"fetch_pythia, or {download_hint(revision['model'], revision['step'])}"
        )
