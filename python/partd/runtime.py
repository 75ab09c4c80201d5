"""partd.runtime - a small reference pipeline runtime for a partd plan, for
torch versions without ``torch.distributed.pipelining`` (Debian's 1.13).

Two ways to run a plan's export:

- ``pipe(layers, export)``: a ``fairscale``-format export (``balance``,
  ``chunks``, ``checkpoint``) through ``torch.distributed.pipeline.sync.Pipe``
  (torchgpipe's GPipe, in torch since 1.8). ``layers`` is the
  ``nn.Sequential`` the balance counts: the model itself when it is one (its
  units are its children), or ``partd.apply.layers(model, result)``. The
  caller initialises RPC (``torch.distributed.rpc.init_rpc``), as Pipe needs.

- ``PipelineRank(stages, schedule, rank, loss_fn)``: one rank of a
  ``pytorch``-format export, the CSV of PyTorch's ``_load_csv``
  (``compute_only``: one row per rank, one cell per compute action
  ``<stage><F|B|I|W><microbatch>``; ``parse_csv``), run in the order the rank's
  row says with blocking receives and asynchronous sends over
  ``torch.distributed`` (gloo on loopback in the tests). ``F`` runs the
  stage's forward, ``B`` its whole backward; a split backward runs ``I``,
  the gradient with respect to the stage's inputs
  (``torch.autograd.grad`` w.r.t. the inputs only, the graph kept), and
  later ``W``, the gradient with respect to its parameters, accumulated into
  ``.grad``. ``stages`` are ``partd.apply.split``'s (a rank needs only its
  own). Each message carries a small header (tensor count, dtypes, shapes),
  so no shapes are agreed beforehand; a value that is not a tensor cannot
  cross between ranks (an error naming it).

The loss of a step is the mean of the microbatches' ``loss_fn(output,
target)``: the gradients are those of the unsplit model on the whole batch
when ``loss_fn`` averages over equal microbatches. Parameters that several
stages on different ranks hold (``partd.apply.tied``) have their gradients
summed across ranks at the end of ``step``.
"""

import csv
import io
import re

import torch
import torch.distributed as dist

from .apply import ApplyError

__all__ = ["Action", "Schedule", "parse_csv", "PipelineRank", "pipe", "ScheduleError"]


class ScheduleError(ValueError):
    """A schedule (CSV) that breaks the rules a pipeline runtime needs."""


# ---------------------------------------------------------------------------
# Schedules
# ---------------------------------------------------------------------------

_ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")


class Action(tuple):
    """(stage, kind, microbatch), written as PyTorch writes it: '3F1'."""

    __slots__ = ()

    def __new__(cls, stage, kind, microbatch):
        return super().__new__(cls, (stage, kind, microbatch))

    stage = property(lambda self: self[0])
    kind = property(lambda self: self[1])
    microbatch = property(lambda self: self[2])

    def __str__(self):
        return f"{self[0]}{self[1]}{self[2]}"

    @classmethod
    def parse(cls, text):
        m = _ACTION.match(text.strip())
        if not m:
            raise ScheduleError(f"{text!r} is not a compute action <stage><F|B|I|W><microbatch>")
        return cls(int(m.group(1)), m.group(2), int(m.group(3)))


class Schedule:
    """Each rank's list of compute actions, checked: every stage runs on one
    rank, and for every microbatch once F and either B or I then W, F before
    the backward, I before its W. Attributes: actions (list per rank),
    stage_to_rank, n_stages, n_microbatches."""

    def __init__(self, actions):
        self.actions = [list(row) for row in actions]
        self.stage_to_rank = {}
        done = {}
        for rank, row in enumerate(self.actions):
            for a in row:
                if self.stage_to_rank.setdefault(a.stage, rank) != rank:
                    raise ScheduleError(f"stage {a.stage} is on ranks "
                                        f"{self.stage_to_rank[a.stage]} and {rank}")
                kinds = done.setdefault((a.stage, a.microbatch), [])
                if a.kind in kinds:
                    raise ScheduleError(f"{a} appears twice")
                need = {"F": (), "B": ("F",), "I": ("F",), "W": ("I",)}[a.kind]
                if any(k not in kinds for k in need):
                    raise ScheduleError(f"rank {rank} runs {a} before "
                                        f"{a.stage}{need[0]}{a.microbatch}")
                if a.kind == "B" and "I" in kinds or a.kind == "I" and "B" in kinds:
                    raise ScheduleError(f"stage {a.stage} microbatch {a.microbatch} has "
                                        "both B and I")
                kinds.append(a.kind)
        self.n_stages = len(self.stage_to_rank)
        if sorted(self.stage_to_rank) != list(range(self.n_stages)):
            raise ScheduleError(f"stages must be 0..n-1, got {sorted(self.stage_to_rank)}")
        micro = {m for _, m in done}
        self.n_microbatches = len(micro)
        if sorted(micro) != list(range(self.n_microbatches)):
            raise ScheduleError(f"microbatches must be 0..M-1, got {sorted(micro)}")
        for j in range(self.n_stages):
            for m in range(self.n_microbatches):
                kinds = done.get((j, m), [])
                if "F" not in kinds or not ("B" in kinds or {"I", "W"} <= set(kinds)):
                    raise ScheduleError(f"stage {j} microbatch {m} needs F and B, or F, I "
                                        f"and W (has {''.join(kinds) or 'nothing'})")


def parse_csv(text):
    """A Schedule from PyTorch's compute-only CSV (``_load_csv``): row r is
    rank r's actions in order; empty cells are idle slots."""
    rows = []
    for row in csv.reader(io.StringIO(text)):
        rows.append([Action.parse(cell) for cell in row if cell.strip()])
    return Schedule(rows)


# ---------------------------------------------------------------------------
# One rank of a pytorch-format schedule
# ---------------------------------------------------------------------------

_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
           torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


class PipelineRank:
    """Rank `rank` of a pipeline that runs `schedule` (a Schedule or CSV
    text). stages: {stage id: module} of this rank's stages (partd.apply.
    split's ``stage_<k>``; others are ignored). loss_fn(output, target) ->
    scalar, for the last stage. tied: partd.apply.tied(result, split) (the
    groups whose gradients are summed across ranks). Ranks are the world's
    (torch.distributed initialised by the caller); group: the process group
    of the sends and receives (default: the world)."""

    def __init__(self, stages, schedule, rank, loss_fn, tied=None, group=None):
        self.schedule = parse_csv(schedule) if isinstance(schedule, str) else schedule
        self.rank = rank
        self.loss_fn = loss_fn
        self.group = group
        mine = [j for j, r in self.schedule.stage_to_rank.items() if r == rank]
        missing = [j for j in mine if j not in stages]
        if missing:
            raise ScheduleError(f"rank {rank} runs stages {mine} but has no module for {missing}")
        self.stages = {j: stages[j] for j in mine}
        self.last = self.schedule.n_stages - 1
        self._pending = []  # asynchronous sends of this step
        # a process group per tied parameter held on several ranks (every
        # rank creates every group, in the same order, as torch requires)
        self.tied = []
        for g in tied or []:
            ranks = sorted({self._peer(k) for k in g["stages"]})
            if len(ranks) > 1:
                self.tied.append((g, ranks, dist.new_group(ranks)))

    # -- messages ----------------------------------------------------------------
    def _peer(self, stage):
        return self.schedule.stage_to_rank[stage]

    def _tag(self, stage, microbatch, grad):
        # one tag per cut, microbatch and direction (activations go forward
        # from `stage`, gradients come back to it)
        return (microbatch * (self.schedule.n_stages + 1) + stage) * 2 + int(grad)

    def _send(self, tensors, to_stage, tag):
        peer = self._peer(to_stage)
        header = [len(tensors)]
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise ApplyError(f"a {type(t).__name__} crosses from one rank to another "
                                 f"(to stage {to_stage}): only tensors can; cut elsewhere")
            if t.dtype not in _DTYPES:
                raise ApplyError(f"a {t.dtype} tensor crosses to stage {to_stage}: this "
                                 f"runtime sends {', '.join(map(str, _DTYPES))}")
            header += [_DTYPES.index(t.dtype), t.dim(), *t.shape]
        header = torch.tensor(header, dtype=torch.int64)
        for t in [torch.tensor([len(header)]), header, *[t.detach().contiguous() for t in tensors]]:
            # the tensor stays referenced until its send has completed
            self._pending.append((dist.isend(t, peer, group=self.group, tag=tag), t))

    def _recv(self, from_stage, tag):
        peer = self._peer(from_stage)
        size = torch.zeros(1, dtype=torch.int64)
        dist.recv(size, peer, group=self.group, tag=tag)
        header = torch.zeros(int(size), dtype=torch.int64)
        dist.recv(header, peer, group=self.group, tag=tag)
        header = header.tolist()
        out, i = [], 1
        for _ in range(header[0]):
            dtype, ndim = _DTYPES[header[i]], header[i + 1]
            shape = header[i + 2:i + 2 + ndim]
            i += 2 + ndim
            t = torch.empty(shape, dtype=dtype)
            dist.recv(t, peer, group=self.group, tag=tag)
            out.append(t)
        return out

    # -- actions -------------------------------------------------------------------
    def _forward(self, j, m, microbatches, targets):
        if j == 0:
            inputs = list(microbatches[m])
        elif self._peer(j - 1) == self.rank:
            inputs = [t.detach() if isinstance(t, torch.Tensor) else t
                      for t in self._local.pop(("act", j - 1, m))]
        else:
            inputs = self._recv(j - 1, self._tag(j - 1, m, grad=False))
        leaves = []
        if j > 0:
            for t in inputs:
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    t.requires_grad_(True)
                    leaves.append(t)
        with torch.enable_grad():
            out = self.stages[j](*inputs)
        if j == self.last:
            loss = self.loss_fn(out, targets[m])
            self._losses.append(loss.detach())
            outs, grads = [loss / self.schedule.n_microbatches], None
        else:
            out = _as_tuple(out)
            if self._peer(j + 1) == self.rank:
                self._local[("act", j, m)] = list(out)
            else:
                self._send(list(out), j + 1, self._tag(j, m, grad=False))
            outs, grads = [t for t in out if isinstance(t, torch.Tensor) and t.is_floating_point()], []
        self._state[(j, m)] = {"leaves": leaves, "outs": outs, "grads": grads}

    def _output_grads(self, j, m):
        """Gradients of stage j's floating-point outputs for microbatch m."""
        state = self._state[(j, m)]
        if j == self.last:
            return state
        if self._peer(j + 1) == self.rank:
            state["grads"] = self._local.pop(("grad", j + 1, m))
        else:
            state["grads"] = self._recv(j + 1, self._tag(j, m, grad=True))
        return state

    def _pass_input_grads(self, j, m, grads):
        if j == 0:
            return
        grads = [g if g is not None else torch.zeros_like(leaf)
                 for g, leaf in zip(grads, self._state[(j, m)]["leaves"])]
        if self._peer(j - 1) == self.rank:
            self._local[("grad", j, m)] = grads
        else:
            self._send(grads, j - 1, self._tag(j - 1, m, grad=True))

    @staticmethod
    def _differentiable(state):
        pairs = [(o, g) for o, g in zip(state["outs"], state["grads"] or [None] * len(state["outs"]))
                 if o.requires_grad]
        return [o for o, _ in pairs], (None if state["grads"] is None else [g for _, g in pairs])

    def _backward(self, j, m):
        state = self._output_grads(j, m)
        outs, grads = self._differentiable(state)
        if outs:
            torch.autograd.backward(outs, grads)
        self._pass_input_grads(j, m, [leaf.grad for leaf in state["leaves"]])
        del self._state[(j, m)]

    def _input_grad(self, j, m):
        state = self._output_grads(j, m)
        outs, grads = self._differentiable(state)
        got = [None] * len(state["leaves"])
        if outs and state["leaves"]:
            got = torch.autograd.grad(outs, state["leaves"], grads, retain_graph=True,
                                      allow_unused=True)
        self._pass_input_grads(j, m, list(got))

    def _weight_grad(self, j, m):
        state = self._state.pop((j, m))
        outs, grads = self._differentiable(state)
        params = [p for p in self.stages[j].parameters() if p.requires_grad]
        if not outs or not params:
            return
        for p, g in zip(params, torch.autograd.grad(outs, params, grads, allow_unused=True)):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g

    # -- a step ----------------------------------------------------------------------
    def step(self, inputs=None, target=None):
        """One training step: runs this rank's actions in order. inputs: the
        batch (a tensor or a tuple), needed by the rank of stage 0; target:
        the batch's targets, needed by the rank of the last stage; both are
        cut into the schedule's microbatches along their first dimension.
        Returns the step's loss (the mean over microbatches) on the rank of
        the last stage, None elsewhere. Gradients accumulate in .grad."""
        n = self.schedule.n_microbatches
        microbatches = targets = None
        if 0 in self.stages:
            if inputs is None:
                raise ValueError(f"rank {self.rank} runs stage 0: step() needs the inputs")
            chunks = [torch.tensor_split(t, n) if isinstance(t, torch.Tensor) else [t] * n
                      for t in _as_tuple(inputs)]
            microbatches = list(zip(*chunks))
        if self.last in self.stages:
            if target is None:
                raise ValueError(f"rank {self.rank} runs the last stage: step() needs the target")
            targets = torch.tensor_split(target, n)
        self._state, self._local, self._losses, self._pending = {}, {}, [], []
        run = {"F": lambda j, m: self._forward(j, m, microbatches, targets),
               "B": self._backward, "I": self._input_grad, "W": self._weight_grad}
        try:
            for a in self.schedule.actions[self.rank]:
                run[a.kind](a.stage, a.microbatch)
            for work, _ in self._pending:
                work.wait()
        finally:
            self._pending = []
        self._sum_tied()
        if self.last in self.stages:
            return torch.stack(self._losses).mean()
        return None

    def _sum_tied(self):
        """Sums the gradients of parameters that stages on several ranks hold
        across those ranks (each contributes the sum over its own stages,
        which share the tensor)."""
        for g, ranks, group in self.tied:
            if self.rank not in ranks:
                continue
            k = next(k for k in g["stages"] if k in self.stages)
            param = self.stages[k].get_parameter(g["names"][k])
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            dist.all_reduce(param.grad, group=group)


# ---------------------------------------------------------------------------
# fairscale-format exports through torch's Pipe
# ---------------------------------------------------------------------------


class _Stage(torch.nn.Module):
    """Consecutive layers as one module (Pipe flattens an nn.Sequential, and
    on the CPU makes each of its children a partition of its own)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, *inputs):
        for layer in self.layers:
            out = layer(*inputs)
            inputs = out if isinstance(out, tuple) else (out,)
        return out


def pipe(layers, export):
    """torch.distributed.pipeline.sync.Pipe running a fairscale-format export
    (a dict: balance, chunks, checkpoint) of `layers` (an nn.Sequential whose
    children are what the balance counts)."""
    from torch.distributed.pipeline.sync import Pipe

    if not isinstance(layers, torch.nn.Sequential):
        raise ApplyError("pipe() takes the nn.Sequential the balance counts "
                         "(the model, or partd.apply.layers(model, result))")
    balance = export.get("balance")
    if not isinstance(balance, list) or not all(isinstance(b, int) and b >= 1 for b in balance):
        raise ApplyError(f"the export's balance must be a list of integers >= 1, got {balance!r}")
    if sum(balance) != len(layers):
        raise ApplyError(f"the export's balance {balance} counts {sum(balance)} layers, the "
                         f"module has {len(layers)}: it was made for another model")
    children = list(layers.children())
    stages, start = [], 0
    for b in balance:
        stages.append(_Stage(children[start:start + b]))
        start += b
    return Pipe(torch.nn.Sequential(*stages), chunks=export.get("chunks", 1),
                checkpoint=export.get("checkpoint", "except_last"))
