"""The PyTorch twin of examples/gpt/model: the same character GPT (token
and position embeddings, pre-LN blocks of causal self-attention with one
fused query/key/value projection and a GELU MLP, a final LayerNorm, the
head tied to the token embedding), its initialization, learning-rate
schedule, training step (clipping by the global norm, AdamW with weight
decay on the Linear weights only) and a KV-cache sampler, written to mean
exactly what the Go code means.

The parameters are held in peel's layout under peel's names: a Linear
weight W is [in, out] (the model computes x @ W + B), and state(model)
names the leaves as peel's checkpoint does ("WTE", "Blocks[0].Attn.QKV.W",
"LNF.Scale", ...), in the order of the Go Params tree.

Imported by torch_gpt.py (the reference run whose outputs the Go test
compares with) and by bench/peers/torch_func.py (the gpt_* peer
workloads). Written for torch 1.13 (Debian's python3-torch).
"""
import math

import torch
import torch.nn.functional as F

LN_EPS = 1e-5


def _param(dtype, *shape):
    return torch.nn.Parameter(torch.zeros(*shape, dtype=dtype))


class Block(torch.nn.Module):
    """One pre-LN block's parameters (peel's model.Block)."""

    def __init__(self, width, dtype):
        super().__init__()
        w = width
        self.ln1_scale, self.ln1_bias = _param(dtype, w), _param(dtype, w)
        self.qkv_w, self.qkv_b = _param(dtype, w, 3 * w), _param(dtype, 3 * w)
        self.attn_proj_w, self.attn_proj_b = _param(dtype, w, w), _param(dtype, w)
        self.ln2_scale, self.ln2_bias = _param(dtype, w), _param(dtype, w)
        self.fc_w, self.fc_b = _param(dtype, w, 4 * w), _param(dtype, 4 * w)
        self.mlp_proj_w, self.mlp_proj_b = _param(dtype, 4 * w, w), _param(dtype, w)

    def named(self, prefix):
        """The block's leaves under peel's names, in the Go tree's order."""
        return [
            (prefix + ".LN1.Scale", self.ln1_scale), (prefix + ".LN1.Bias", self.ln1_bias),
            (prefix + ".Attn.QKV.W", self.qkv_w), (prefix + ".Attn.QKV.B", self.qkv_b),
            (prefix + ".Attn.Proj.W", self.attn_proj_w), (prefix + ".Attn.Proj.B", self.attn_proj_b),
            (prefix + ".LN2.Scale", self.ln2_scale), (prefix + ".LN2.Bias", self.ln2_bias),
            (prefix + ".MLP.FC.W", self.fc_w), (prefix + ".MLP.FC.B", self.fc_b),
            (prefix + ".MLP.Proj.W", self.mlp_proj_w), (prefix + ".MLP.Proj.B", self.mlp_proj_b),
        ]


class GPT(torch.nn.Module):
    """A GPT of peel's model.Config (vocab, context, layers, heads, width,
    dropout) with parameters of dtype. Parameters start zero: call init
    (or load) before use."""

    def __init__(self, vocab, context, layers, heads, width, dropout=0.0, dtype=torch.float64):
        super().__init__()
        if width % heads != 0:
            raise ValueError(f"{heads} heads do not divide the width {width}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout {dropout} is outside [0, 1)")
        self.vocab, self.context, self.layers = vocab, context, layers
        self.heads, self.width, self.dropout = heads, width, dropout
        self.dtype = dtype
        self.wte = _param(dtype, vocab, width)
        self.wpe = _param(dtype, context, width)
        self.blocks = torch.nn.ModuleList([Block(width, dtype) for _ in range(layers)])
        self.lnf_scale, self.lnf_bias = _param(dtype, width), _param(dtype, width)

    def named(self):
        """[(peel name, Parameter)] in the order of the Go Params tree."""
        out = [("WTE", self.wte), ("WPE", self.wpe)]
        for i, b in enumerate(self.blocks):
            out += b.named(f"Blocks[{i}]")
        out += [("LNF.Scale", self.lnf_scale), ("LNF.Bias", self.lnf_bias)]
        return out

    def _drop(self, x):
        if self.training and self.dropout > 0:
            return F.dropout(x, self.dropout, True)
        return x

    def _ln(self, x, scale, bias):
        return F.layer_norm(x, (self.width,), scale, bias, LN_EPS)

    def _heads(self, x):
        """x [B, T, 3C] → q, k, v [B, H, T, C/H] (model.go's heads)."""
        b, t, c3 = x.shape
        c = c3 // 3
        x = x.reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        return x[0], x[1], x[2]

    @staticmethod
    def _merge(y):
        """[B, H, T, d] → [B, T, H·d]."""
        b, h, t, d = y.shape
        return y.transpose(1, 2).reshape(b, t, h * d)

    def _attend(self, q, k, v, mask):
        """softmax(q·kᵀ/√d masked)·v with dropout on the weights; mask is
        bool [Tq, Tk], true where the key is visible."""
        d = q.shape[-1]
        att = torch.matmul(q, k.transpose(-1, -2)) * (1 / math.sqrt(d))
        att = torch.where(mask, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        att = self._drop(torch.softmax(att, -1))
        return torch.matmul(att, v)

    @staticmethod
    def _linear(x, w, b):
        """x @ w + b as torch.nn.Linear computes it (F.linear, the weight
        read transposed in place): the product, then the bias added into
        it in place (addmm for 2-D inputs), as peel's nn.Linear."""
        return F.linear(x, w.t(), b)

    def _mlp(self, b, x):
        h = F.gelu(self._linear(x, b.fc_w, b.fc_b))
        return self._linear(h, b.mlp_proj_w, b.mlp_proj_b)

    def _block(self, b, x, mask):
        q, k, v = self._heads(self._linear(self._ln(x, b.ln1_scale, b.ln1_bias), b.qkv_w, b.qkv_b))
        y = self._linear(self._merge(self._attend(q, k, v, mask)), b.attn_proj_w, b.attn_proj_b)
        x = x + self._drop(y)
        return x + self._drop(self._mlp(b, self._ln(x, b.ln2_scale, b.ln2_bias)))

    def forward(self, idx):
        """The logits [B, T, vocab] of the int64 tokens idx [B, T]."""
        if idx.dim() != 2 or idx.dtype != torch.int64 or not 1 <= idx.shape[1] <= self.context:
            raise ValueError(f"tokens {idx.dtype}{list(idx.shape)} are not int64[batch, 1…{self.context}]")
        t = idx.shape[1]
        x = self._drop(F.embedding(idx, self.wte) + self.wpe[:t])
        pos = torch.arange(t)
        mask = pos.reshape(t, 1) >= pos.reshape(1, t)
        for b in self.blocks:
            x = self._block(b, x, mask)
        x = self._ln(x, self.lnf_scale, self.lnf_bias)
        return torch.matmul(x, self.wte.t())

    def loss(self, idx, targets):
        """The mean cross-entropy over all B·T positions."""
        logits = self(idx)
        b, t, v = logits.shape
        return F.cross_entropy(logits.reshape(b * t, v), targets.reshape(b * t))

    def decode(self, idx, pos, cache):
        """Runs idx [B, S] at positions pos … pos+S-1 attending to the cached
        positions before pos and causally to each other; writes the new keys
        and values into cache (per layer (K, V), each [B, H, context, d]) and
        returns the logits of the last position [B, vocab]. No dropout."""
        s = idx.shape[1]
        if pos + s > self.context:
            raise ValueError(f"positions {pos}…{pos + s - 1} pass the context {self.context}")
        x = F.embedding(idx, self.wte) + self.wpe[pos:pos + s]
        end = pos + s
        qpos = torch.arange(pos, end).reshape(s, 1)
        mask = torch.arange(end).reshape(1, end) <= qpos
        for b, (kc, vc) in zip(self.blocks, cache):
            q, k, v = self._heads(torch.matmul(self._ln(x, b.ln1_scale, b.ln1_bias), b.qkv_w) + b.qkv_b)
            kc[:, :, pos:end] = k
            vc[:, :, pos:end] = v
            d = q.shape[-1]
            att = torch.matmul(q, kc[:, :, :end].transpose(-1, -2)) * (1 / math.sqrt(d))
            if s > 1:
                att = torch.where(mask, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
            y = torch.matmul(torch.softmax(att, -1), vc[:, :, :end])
            x = x + torch.matmul(self._merge(y), b.attn_proj_w) + b.attn_proj_b
            x = x + self._mlp(b, self._ln(x, b.ln2_scale, b.ln2_bias))
        last = self._ln(x[:, -1], self.lnf_scale, self.lnf_bias)
        return torch.matmul(last, self.wte.t())


def init(model, generator):
    """Draws model's parameters as model.Init does (not its random
    numbers): Linear weights and both embeddings normal with standard
    deviation 0.02, Attn.Proj.W and MLP.Proj.W 0.02/√(2·layers), biases
    zero, LayerNorm scales one and biases zero. The normals are drawn in
    float64 from generator, in the order of the Go tree, and cast to the
    model's dtype."""
    proj = 0.02 / math.sqrt(2 * max(model.layers, 1))
    with torch.no_grad():
        for name, p in model.named():
            if name.endswith(".Scale"):
                p.fill_(1)
            elif name.endswith(".B") or name.endswith(".Bias"):
                p.zero_()
            else:
                std = proj if name.endswith(".Proj.W") else 0.02  # Attn.Proj.W, MLP.Proj.W
                p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64) * std)
    return model


def state(model):
    """{peel name: tensor} (detached copies, [in, out] weights), in the Go
    tree's order."""
    return {name: p.detach().clone() for name, p in model.named()}


def load(model, tensors):
    """Copies tensors {peel name: tensor} into model (cast to its dtype);
    every parameter must be there with its shape, and nothing else."""
    named = dict(model.named())
    extra = set(tensors) - set(named)
    if extra:
        raise KeyError(f"no parameters named {sorted(extra)}")
    with torch.no_grad():
        for name, p in named.items():
            if name not in tensors:
                raise KeyError(f"no tensor for {name}")
            t = tensors[name]
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"{name} is {list(t.shape)}, want {list(p.shape)}")
            p.copy_(t.to(p.dtype))
    return model


def decayed(name):
    """Whether the parameter name is weight-decayed (model.Decayed): the
    Linear weights, not biases, LayerNorms or embeddings."""
    return len(name) > 2 and name.endswith(".W")


def optimizer(model, weight_decay, beta1, beta2, eps=1e-8):
    """torch.optim.AdamW over two groups: the Linear weights with
    weight_decay and the rest with none. The learning rate is set by
    train_step."""
    named = model.named()
    groups = [
        {"params": [p for n, p in named if decayed(n)], "weight_decay": weight_decay},
        {"params": [p for n, p in named if not decayed(n)], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=0.0, betas=(beta1, beta2), eps=eps)


def schedule(h, count):
    """The learning rate at step count (the updates before this one) of
    hyper h (a dict with lr, min_lr, warmup, decay_steps), computed as
    peel's optim.WarmupCosineDecay(0, lr, warmup, decay_steps, min_lr)
    computes it, in float64."""
    lr, warmup, decay = h["lr"], h["warmup"], h["decay_steps"]
    if warmup <= 0 or decay <= warmup:
        raise ValueError("schedule: needs 0 < warmup < decay_steps")
    alpha = h["min_lr"] / lr if lr != 0 else 0.0
    if count < warmup:
        # polynomial(init 0, end lr, power 1, n warmup)
        t = min(max(float(count), 0.0), float(warmup))
        frac = 1.0 - t / float(warmup)
        return frac ** 1.0 * (0.0 - lr) + lr
    # cosine(lr, decay-warmup, alpha) at count-warmup
    n = decay - warmup
    t = min(float(count - warmup), float(n))
    c = (math.cos(t * (math.pi / float(n))) + 1.0) * 0.5
    return (c * (1 - alpha) + alpha) * lr


def clip_by_global_norm(params, clip):
    """Scales the gradients of params in place as optim.ClipByGlobalNorm
    does: by 1 when their global norm is below clip, else by
    clip/max(norm, clip) (no epsilon). Returns (norm, clipped) as a float
    and a bool."""
    grads = [p.grad for p in params]
    sq = None
    for g in grads:
        s = torch.sum(g * g)
        sq = s if sq is None else sq + s
    norm = torch.sqrt(sq)
    if norm.item() < clip:
        return norm.item(), False
    factor = clip / torch.maximum(norm, torch.tensor(clip, dtype=norm.dtype))
    for g in grads:
        g.mul_(factor)
    return norm.item(), True


def train_step(model, opt, x, y, lr, clip):
    """One training step: the loss of x → y (dropout as the model is
    configured and in training mode), its gradients, clipping to the
    global norm clip (0: none), and opt's step at learning rate lr.
    Returns the loss before the update as a float; model.last_norm and
    model.last_clipped say what the clipping saw and did."""
    opt.zero_grad(set_to_none=True)
    loss = model.loss(x, y)
    loss.backward()
    model.last_norm, model.last_clipped = None, False
    if clip > 0:
        model.last_norm, model.last_clipped = clip_by_global_norm([p for _, p in model.named()], clip)
    for g in opt.param_groups:
        g["lr"] = lr
    opt.step()
    return loss.item()


def empty_cache(model, batch):
    """Per layer (K, V), zeros [batch, heads, context, width/heads]."""
    shape = (batch, model.heads, model.context, model.width // model.heads)
    return [(torch.zeros(shape, dtype=model.dtype), torch.zeros(shape, dtype=model.dtype))
            for _ in range(model.layers)]


def pick(logits, temperature, top_k, generator=None):
    """One token per row of logits [B, vocab]: the most likely with
    temperature 0, else a draw from softmax(logits/temperature) among the
    top_k most likely (0: all)."""
    if temperature <= 0:
        return torch.argmax(logits, -1)
    logits = logits / temperature
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, -1).values[:, -1:]
        logits = torch.where(logits < kth, torch.tensor(torch.finfo(logits.dtype).min, dtype=logits.dtype),
                             logits)
    return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).reshape(-1)


@torch.no_grad()
def generate(model, prompt, n, temperature=1.0, top_k=0, generator=None):
    """n tokens [B, n] following prompt [B, P] (int64): the prompt fills
    the KV cache in one pass, then each token is decoded alone from the
    cache. P+n-1 must not exceed the context."""
    b, p = prompt.shape
    if n < 1 or p < 1 or p + n - 1 > model.context:
        raise ValueError(f"a prompt of {p} tokens and {n} new ones do not fit the context of {model.context}")
    cache = empty_cache(model, b)
    tok = pick(model.decode(prompt, 0, cache), temperature, top_k, generator)
    out = [tok]
    for i in range(1, n):
        tok = pick(model.decode(tok.reshape(b, 1), p + i - 1, cache), temperature, top_k, generator)
        out.append(tok)
    return torch.stack(out, 1)
