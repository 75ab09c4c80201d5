"""Models for the exporter's tests and examples that torchvision lacks.

gpt2(): a GPT-2-shaped decoder (token + position embeddings, pre-LayerNorm
blocks of causal self-attention and a 4x MLP, final LayerNorm, LM head tied
to the token embedding). The defaults are GPT-2 small (124M parameters:
12 layers, 12 heads, width 768, 50257-token vocabulary, 1024 positions);
tests pass smaller sizes. FX-traceable: no data-dependent control flow.
"""

import math

import torch
import torch.fx
from torch import nn


def positions_like(idx, position_ids):
    """Position ids for the sequence length of `idx` (a leaf of the trace:
    slicing by a traced length is not traceable)."""
    return position_ids[:, : idx.size(1)]


def causal_fill(att, mask):
    """Masks attention scores above the diagonal (a leaf of the trace)."""
    t = att.size(-1)
    return att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))


torch.fx.wrap("positions_like")
torch.fx.wrap("causal_fill")


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, positions):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        mask = torch.tril(torch.ones(positions, positions)).view(1, 1, positions, positions)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        head = c // self.heads
        q = q.view(b, t, self.heads, head).transpose(1, 2)
        k = k.view(b, t, self.heads, head).transpose(1, 2)
        v = v.view(b, t, self.heads, head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        att = causal_fill(att, self.mask)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, width, heads, positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, positions)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, positions=1024, width=768, layers=12, heads=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.h = nn.ModuleList([Block(width, heads, positions) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2
        # Position ids as a buffer, as Hugging Face's GPT-2 keeps them.
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0),
                             persistent=False)

    def forward(self, idx):
        pos = positions_like(idx, self.position_ids)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt2(**kwargs):
    """GPT-2 small by default; keyword arguments override the sizes."""
    torch.manual_seed(0)
    return GPT2(**kwargs)


def gpt2_tiny():
    """Same structure, test-sized (2 layers, width 64, 1000 tokens)."""
    return gpt2(vocab=1000, positions=64, width=64, layers=2, heads=4)


class MHABlock(nn.Module):
    """A pre-LayerNorm block around nn.MultiheadAttention (one call_module
    node to torch.fx; its work happens in F.multi_head_attention_forward)."""

    def __init__(self, width, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, dropout=dropout, batch_first=True)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        h = self.ln_1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + self.drop(a)
        return x + self.drop(self.mlp(self.ln_2(x)))


class GPTMHA(nn.Module):
    """GPT-like: token embedding tied to the LM head, a learned position
    table read as a parameter (a get_attr node), a causal mask buffer every
    block reads, blocks of nn.MultiheadAttention and an MLP, dropout."""

    def __init__(self, vocab=128, context=16, width=32, layers=4, heads=4, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(context, width) * 0.02)
        self.layers = nn.ModuleList([MHABlock(width, heads, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied
        mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, idx):
        x = self.tok(idx) + self.pos
        for block in self.layers:
            x = block(x, self.mask)
        return self.head(self.ln_f(x))


def gpt_mha(**kwargs):
    torch.manual_seed(0)
    return GPTMHA(**kwargs)


def mlp_seq(features=16, hidden=32, outputs=4, layers=8):
    """An nn.Sequential of Linear and Tanh layers: fairscale's kind of model,
    whose units are its children."""
    torch.manual_seed(0)
    mods = [nn.Linear(features, hidden), nn.Tanh()]
    for _ in range(layers - 2):
        mods += [nn.Linear(hidden, hidden), nn.Tanh()]
    mods.append(nn.Linear(hidden, outputs))
    return nn.Sequential(*mods)
