"""The small language model of examples/self_distillation.py: a tokenizer, a decoder-only
transformer, its training step and batched sampling with a key-value cache (torch only).

The tokenizer reads text as words (with their leading space), single digits, and single
characters: a word the vocabulary lacks is spelled in characters, so the model can write any
ASCII text, and numbers are always digit by digit (it can copy a value it has never seen).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

PAD, BOS = "<pad>", "<bos>"
CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
DIGITS = [f" {d}" for d in range(10)]
_PIECES = re.compile(r" ?[A-Za-z_]+| ?\d|\n|.")


@dataclass(frozen=True)
class Tokenizer:
    """Words, digits and characters <-> ids. Non-ASCII characters read as '?'."""

    vocab: tuple[str, ...]

    @classmethod
    def build(cls, texts: Iterable[str], max_words: int = 250, min_count: int = 3) -> Tokenizer:
        """A vocabulary of the characters, the digits and the commonest words of `texts`."""
        counts = Counter(
            piece
            for text in texts
            for piece in _PIECES.findall(text)
            if len(piece.strip()) > 1 and piece.strip()[0].isalpha()
        )
        words = sorted(w for w, n in counts.most_common(max_words) if n >= min_count)
        return cls((PAD, BOS, *CHARS, *DIGITS, *words))

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ids", {t: i for i, t in enumerate(self.vocab)})

    @property
    def pad(self) -> int:
        return 0

    @property
    def bos(self) -> int:
        return 1

    @property
    def newline(self) -> int:
        return self._ids["\n"]  # type: ignore[attr-defined,no-any-return]

    def encode(self, text: str) -> list[int]:
        ids: dict[str, int] = self._ids  # type: ignore[attr-defined]
        out: list[int] = []
        for piece in _PIECES.findall(text):
            if piece in ids:
                out.append(ids[piece])
            else:
                out += [ids.get(c, ids["?"]) for c in piece]
        return out

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.vocab[i] for i in ids if i > 1)


@dataclass(frozen=True)
class ModelSize:
    """A transformer's shape."""

    layers: int = 3
    width: int = 96
    heads: int = 4
    context: int = 320


class Block(nn.Module):
    """Pre-norm attention and MLP, with an optional key-value cache."""

    def __init__(self, size: ModelSize) -> None:
        super().__init__()
        self.heads = size.heads
        self.norm1 = nn.LayerNorm(size.width)
        self.qkv = nn.Linear(size.width, 3 * size.width)
        self.proj = nn.Linear(size.width, size.width)
        self.norm2 = nn.LayerNorm(size.width)
        self.mlp = nn.Sequential(
            nn.Linear(size.width, 4 * size.width), nn.GELU(), nn.Linear(4 * size.width, size.width)
        )

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x)), (k, v)


class TinyLM(nn.Module):
    """A decoder-only transformer over a Tokenizer's ids, with learned positions."""

    def __init__(self, vocab: int, size: ModelSize) -> None:
        super().__init__()
        self.size = size
        self.embed = nn.Embedding(vocab, size.width)
        self.position = nn.Embedding(size.context, size.width)
        self.blocks = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.norm = nn.LayerNorm(size.width)
        self.head = nn.Linear(size.width, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.apply(_init)

    def forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        cache: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Logits of every position; `mask` (batch, 1, queries, keys) True where a query may
        look (None: causal), `cache` the keys and values of the positions before."""
        if positions is None:
            positions = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        x = self.embed(ids) + self.position(positions)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, mask, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.head(self.norm(x)), new_cache

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters() if p is not self.head.weight)


def _init(module: nn.Module) -> None:
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


@dataclass(frozen=True)
class Example:
    """A training sequence: token ids and which of them the loss is taken on."""

    ids: tuple[int, ...]
    trained: tuple[bool, ...]


def encode_segments(tokenizer: Tokenizer, segments: Sequence[tuple[str, bool]]) -> Example:
    """Encode (text, trained) segments one by one, after a BOS (never trained)."""
    ids, trained = [tokenizer.bos], [False]
    for text, train in segments:
        piece = tokenizer.encode(text)
        ids += piece
        trained += [train] * len(piece)
    return Example(tuple(ids), tuple(trained))


def train_steps(
    model: TinyLM,
    optimizer: torch.optim.Optimizer,
    examples: Sequence[Example],
    *,
    steps: int,
    batch: int,
    generator: torch.Generator,
    device: str,
    lr_at: Callable[[int], float] | None = None,
) -> list[float]:
    """`steps` optimizer steps of next-token loss on the trained tokens of `examples`, each on
    a batch drawn with replacement; returns each step's loss. Sequences longer than the
    model's context keep their end."""
    if not examples:
        raise ValueError("train_steps: expected at least one example, found none")
    context = model.size.context
    losses: list[float] = []
    model.train()
    for step in range(steps):
        if lr_at is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
        picks = torch.randint(len(examples), (batch,), generator=generator).tolist()
        chosen = [examples[i] for i in picks]
        length = min(context + 1, max(len(e.ids) for e in chosen))
        ids = torch.zeros(batch, length, dtype=torch.long)
        weight = torch.zeros(batch, length)
        for row, example in enumerate(chosen):
            tail = example.ids[-length:]
            ids[row, : len(tail)] = torch.tensor(tail)
            weight[row, : len(tail)] = torch.tensor(example.trained[-length:], dtype=torch.float)
        ids, weight = ids.to(device), weight.to(device)
        logits, _ = model(ids[:, :-1])
        loss_each = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
        )
        target_weight = weight[:, 1:].reshape(-1)
        loss = (loss_each * target_weight).sum() / target_weight.sum().clamp(min=1.0)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def sample(
    model: TinyLM,
    prompts: Sequence[Sequence[int]],
    *,
    lines: int,
    max_new: int,
    temperature: float,
    newline: int,
    generator: torch.Generator,
    device: str,
) -> list[list[int]]:
    """Continue each prompt until it has written `lines` newlines or `max_new` tokens.

    The prompts are left-padded into one batch (their positions counted from their own start)
    and continued together with a key-value cache. A prompt longer than the model's context
    keeps its end, leaving room for `max_new` tokens.
    """
    model.eval()
    keep = model.size.context - max_new
    prompts = [list(p[-keep:]) for p in prompts]
    batch, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros(batch, width, dtype=torch.long)
    real = torch.zeros(batch, width, dtype=torch.bool)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        real[row, width - len(prompt) :] = True
    positions = (real.long().cumsum(1) - 1).clamp(min=0)
    causal = torch.tril(torch.ones(width, width, dtype=torch.bool))
    mask = (causal[None] & real[:, None, :]) | torch.eye(width, dtype=torch.bool)[None]
    ids, real, positions, mask = (z.to(device) for z in (ids, real, positions, mask))
    logits, cache = model(ids, positions, mask[:, None])
    last = logits[:, -1]
    position = positions[:, -1]
    written: list[list[int]] = [[] for _ in range(batch)]
    newlines = torch.zeros(batch, dtype=torch.long, device=device)
    for _ in range(max_new):
        probs = F.softmax(last.float() / max(temperature, 1e-6), dim=-1)
        token = torch.multinomial(probs.cpu(), 1, generator=generator).to(device)
        done = newlines >= lines
        for row in torch.nonzero(~done).flatten().tolist():
            written[row].append(int(token[row, 0]))
        newlines += ((token[:, 0] == newline) & ~done).long()
        if bool((newlines >= lines).all()):
            break
        real = torch.cat([real, torch.ones(batch, 1, dtype=torch.bool, device=device)], dim=1)
        position = position + 1
        logits, cache = model(token, position[:, None], real[:, None, None, :], cache)
        last = logits[:, -1]
    return written


def new_optimizer(model: TinyLM, lr: float) -> torch.optim.Optimizer:
    """AdamW with the usual transformer settings."""
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)


def cosine_lr(base: float, total: int) -> Callable[[int], float]:
    """A warm-up-then-cosine learning rate over `total` steps."""
    warm = max(1, total // 20)

    def lr_at(step: int) -> float:
        if step < warm:
            return base * (step + 1) / warm
        return base * max(0.05, 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm))))

    return lr_at
