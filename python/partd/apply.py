"""partd.apply - a partd plan applied to the model it was made for.

Three calls, each checking the plan against the model and raising
ApplyError rather than building a model that computes something else:

- ``split(model, result, example_inputs)``: a ``torch.fx.GraphModule`` whose
  forward calls one submodule per partition or stage, ``stage_0``,
  ``stage_1``, ... (FX's ``split_module`` shape, its "module with
  submodules"), and returns what ``model`` returns. The plan's stages come
  from ``partitions[].nodes`` (every mode's full result) or, for a training
  result without nodes, from ``partitions[].units`` and
  ``summary.unit_depth`` (contract, "Units"). The graph is the exporter's
  trace (``partd.exporter.trace``), so node names are the plan's.

  Stages form a chain, as a pipeline runs them: stage k takes the values
  live across the cut before it (the model's inputs for the first) and
  returns those live across the cut after it, as a tuple (tensors a later
  stage reads pass through the stages between); the last returns the
  model's output. ``stage_k.partd_inputs`` / ``partd_outputs`` name them.
  A stage holds the submodules it calls and the parameters and buffers it
  reads (``get_attr``) under their names in the model: the same objects,
  so a parameter two stages use (tied embeddings) is one tensor and its
  gradients add up in one process. A parameter read by a ``get_attr`` node
  is held by every stage that reads it, as partd counts it.

- ``checkpoint(module, result)``: recomputes in backward what the plan
  checkpoints: a training plan's ``partitions[].checkpointed`` units, and a
  SAC plan's modules with a discard ratio above 0 (``sac.ac_decisions``),
  with non-reentrant ``torch.utils.checkpoint``. On the module ``split``
  returned, each checkpointed run of nodes becomes a submodule of its stage
  (``checkpoint_0``, ...) that is checkpointed; on the model itself, the
  modules named are checkpointed where they are (units must then be modules).
  SAC's op-level policies (``sac.op_policies``) become a selective
  checkpointing policy where torch has
  ``torch.utils.checkpoint.create_selective_checkpoint_contexts`` (2.4 and
  later); older torch (Debian's 1.13) checkpoints those modules whole and
  warns: more recomputation than planned, never more memory.

- ``tied(result, module=None)``: the parameters whose gradients must be
  summed across stages (the plan's ``tied_params``), with, given the module
  ``split`` returned, the name under which each stage holds each of them.

Names: a node's ``module`` (the exporter's, and the units made of it) is the
fqn ``named_modules`` gives (``h.0.attn``); SAC's module statistics, and so
``sac.ac_decisions``, name modules PyTorch's way, the root's class first
(``GPT2.h.0.attn``). ``checkpoint`` takes the root's class off and
refuses a name that does not start with it.
"""

import copy
import operator
import warnings

import torch
import torch.fx
import torch.utils.checkpoint

from . import exporter

__all__ = ["ApplyError", "split", "checkpoint", "tied", "layers", "units", "stages",
           "stage_nodes", "op_policy_decisions", "trace"]

OPERATIONS = ("call_module", "call_function", "call_method")

trace = exporter.trace


class ApplyError(ValueError):
    """The plan does not fit the model, or cannot be applied as it says."""


# ---------------------------------------------------------------------------
# Units and stages
# ---------------------------------------------------------------------------


def node_module(node):
    """The fqn of the module that owns an FX node, as the exporter writes it
    ("" for the root's own operations)."""
    if node.op == "call_module":
        return node.target
    return node.meta.get("partd_module", "")


def _unit_key(module, depth):
    return ".".join(module.split(".")[:depth]) if module else None


def units(nodes, unit_depth):
    """[(unit name, [nodes])] of the operation nodes among `nodes`, in
    order: maximal runs whose module has the same first `unit_depth`
    components, named by that key, or by the run's first node when it has
    no module; the k-th run (k >= 2) of a name gets "#k" (contract, Units)."""
    if not isinstance(unit_depth, int) or unit_depth < 1:
        raise ApplyError(f"unit_depth must be an integer >= 1, got {unit_depth!r}")
    runs = []
    for node in nodes:
        if node.op not in OPERATIONS:
            continue
        key = _unit_key(node_module(node), unit_depth)
        if runs and runs[-1][0] == key:
            runs[-1][2].append(node)
        else:
            runs.append((key, key if key is not None else node.name, [node]))
    seen, out = {}, []
    for _, name, members in runs:
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name}#{seen[name]}", members))
    return out


def _partitions(result):
    if not isinstance(result, dict) or not isinstance(result.get("partitions"), list) \
            or not result["partitions"]:
        raise ApplyError("not a partd result: no partitions[]")
    parts = result["partitions"]
    ids = [p.get("id") for p in parts]
    if sorted(ids) != list(range(len(parts))):
        raise ApplyError(f"partitions[].id must be 0..{len(parts) - 1}, got {ids}")
    return sorted(parts, key=lambda p: p["id"])


def stage_nodes(gm, result):
    """[[node, ...] per partition id] of the traced graph `gm`, from the
    result's partitions[].nodes or, failing those, its units. Raises
    ApplyError when the plan names nodes or units the graph lacks, leaves
    some out, or its nodes and units disagree."""
    parts = _partitions(result)
    ops = [n for n in gm.graph.nodes if n.op in OPERATIONS]
    by_name = {n.name: n for n in ops}
    have_nodes = all(isinstance(p.get("nodes"), list) for p in parts)
    have_units = all(isinstance(p.get("units"), list) for p in parts)
    depth = (result.get("summary") or {}).get("unit_depth")
    by_units = None
    if have_units and depth is not None:
        by_units = _stages_from_units(ops, parts, depth)
    if have_nodes:
        stages = []
        for p in parts:
            stage = []
            for name in p["nodes"]:
                if name not in by_name:
                    raise ApplyError(f"partition {p['id']} names node {name!r}, which the "
                                     "model's graph lacks: the plan was made for another "
                                     "model (or another trace of it)")
                stage.append(by_name[name])
            stages.append(stage)
        if by_units is not None and [[n.name for n in s] for s in stages] != \
                [[n.name for n in s] for s in by_units]:
            raise ApplyError("the result's partitions[].nodes and partitions[].units "
                             f"(unit_depth {depth}) disagree about this model's graph")
    elif by_units is not None:
        stages = by_units
    else:
        raise ApplyError("the result lists no partitions[].nodes (and no units with "
                         "summary.unit_depth): plan it with options.result.detail \"full\"")
    seen = {}
    for k, stage in enumerate(stages):
        for n in stage:
            if n.name in seen:
                raise ApplyError(f"node {n.name!r} is in partitions {seen[n.name]} and {k}")
            seen[n.name] = k
    missing = [n.name for n in ops if n.name not in seen]
    if missing:
        raise ApplyError(f"the plan leaves out {len(missing)} operation(s) of the model's "
                         f"graph ({', '.join(missing[:5])}): it was made for another model")
    return stages


def _stages_from_units(ops, parts, depth):
    named = units(ops, depth)
    by_name = {name: members for name, members in named}
    stages, listed = [], []
    for p in parts:
        stage = []
        for name in p["units"]:
            if name not in by_name:
                raise ApplyError(f"partition {p['id']} holds unit {name!r}, which the model's "
                                 f"graph at unit_depth {depth} lacks (its units: "
                                 f"{', '.join(n for n, _ in named[:8])}, ...)")
            stage.extend(by_name[name])
            listed.append(name)
        stages.append(stage)
    if listed != [name for name, _ in named]:
        raise ApplyError("the plan's units are not the model's units in order "
                         f"(unit_depth {depth}): the plan was made for another model")
    for stage in stages:  # nodes in graph order within a stage
        stage.sort(key=lambda n: ops.index(n))
    return stages


def _stage_order(stages):
    """Partition ids in an order where every value is made before it is
    read (their ids when those are, as in every pipeline plan)."""
    owner = {n: k for k, stage in enumerate(stages) for n in stage}
    deps = [set() for _ in stages]
    for k, stage in enumerate(stages):
        for n in stage:
            for a in n.all_input_nodes:
                if a in owner and owner[a] != k:
                    deps[k].add(owner[a])
    order, done = [], set()
    while len(order) < len(stages):
        ready = [k for k in range(len(stages)) if k not in done and deps[k] <= done]
        if not ready:
            raise ApplyError("the plan's partitions depend on each other in a cycle")
        order.append(ready[0])
        done.add(ready[0])
    return order


# ---------------------------------------------------------------------------
# split
# ---------------------------------------------------------------------------


_fetch = exporter._fetch_attr


class _PartdGraphModule(torch.fx.GraphModule):
    """A GraphModule whose partd_* attributes survive copy.deepcopy (torch's
    GraphModule rebuilds itself from its graph and keeps nothing else)."""

    def __deepcopy__(self, memo):
        fake = torch.nn.Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        new = type(self).__mro__[1](fake, fake.__dict__["_graph"], self._get_name())
        for key, value in fake.__dict__.items():
            if key.startswith("partd_"):
                setattr(new, key, value)
        return new


def _subgraph(gm, nodes, inputs, outputs, last_output=None, class_name="Stage"):
    """A GraphModule computing `nodes` (in order) from `inputs` (its
    placeholders) and returning the tuple of `outputs`, or `last_output`
    (the original output's structure). get_attr nodes the nodes read are
    copied in; submodules and attributes keep their names."""
    g = torch.fx.Graph()
    env, attrs = {}, {}
    for v in inputs:
        env[v] = g.placeholder(v.name)
        env[v].meta = dict(v.meta)

    def lookup(v):
        if v not in env:
            if v.op != "get_attr":
                raise ApplyError(f"node {v.name!r} is read before it is computed")
            env[v] = g.get_attr(v.target)
            env[v].meta = dict(v.meta)
            attrs[v.target] = _fetch(gm, v.target)
        return env[v]

    for n in nodes:
        for a in n.all_input_nodes:
            lookup(a)
        env[n] = g.node_copy(n, lookup)
        if n.op == "call_module":
            attrs[n.target] = gm.get_submodule(n.target)
    if last_output is not None:
        g.output(torch.fx.graph.map_arg(last_output, lookup))
    else:
        g.output(tuple(lookup(v) for v in outputs))
    return _PartdGraphModule(attrs, g, class_name)


def split(model, result, example_inputs=None, *, check=True, gm=None):
    """The model as a GraphModule of its plan's stages (see the module's
    docstring). With example_inputs and check, both are run once on them
    (eval mode, no autograd; modes, buffers and the random generator
    restored) and must give the same output, else ApplyError. gm: the
    exporter's trace of `model` when already made."""
    gm = gm if gm is not None else trace(model)
    stages = stage_nodes(gm, result)
    order = _stage_order(stages)
    depth = (result.get("summary") or {}).get("unit_depth")
    unit_of = {}
    if depth is not None:
        for name, members in units(gm.graph.nodes, depth):
            for n in members:
                unit_of[n] = name
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    position = {k: i for i, k in enumerate(order)}
    made_in = {n: position[k] for k, stage in enumerate(stages) for n in stage}
    for p in placeholders:
        made_in[p] = -1
    # the last stage (in order) that reads each value; the output counts as
    # a stage after the last
    live_until = {v: max((made_in[u] if u.op in OPERATIONS else len(order) for u in v.users),
                         default=-1)
                  for v in made_in}
    top = torch.fx.Graph()
    values = []
    for p in placeholders:
        if p.args:  # a default value
            ph = top.placeholder(p.target, type_expr=p.type, default_value=p.args[0])
        else:
            ph = top.placeholder(p.target, type_expr=p.type)
        ph.meta = dict(p.meta)
        values.append(ph)
    carried = list(placeholders)
    submodules = {}
    for i, k in enumerate(order):
        stage = stages[k]
        last = i == len(order) - 1
        for n in stage:
            n.meta["partd_stage"] = k
            if n in unit_of:
                n.meta["partd_unit"] = unit_of[n]
        outputs = [] if last else [v for v in gm.graph.nodes
                                   if v in made_in and made_in[v] <= i < live_until[v]]
        sub = _subgraph(gm, stage, carried, outputs,
                        last_output=out_node.args[0] if last else None,
                        class_name=f"Stage{k}")
        sub.partd_stage = k
        sub.partd_inputs = [v.name for v in carried]
        sub.partd_outputs = None if last else [v.name for v in outputs]
        name = f"stage_{k}"
        submodules[name] = sub
        call = top.call_module(name, tuple(values))
        if last:
            top.output(call)
        else:
            values = [top.call_function(operator.getitem, (call, j)) for j in range(len(outputs))]
            carried = outputs
    split_gm = _PartdGraphModule(submodules, top, "PartdSplit")
    split_gm.partd_stage_order = list(order)
    split_gm.partd_root = type(model).__name__
    if check and example_inputs is not None:
        _check_same(model, split_gm, example_inputs)
    return split_gm


def layers(model, result, example_inputs=None):
    """The model as an nn.Sequential of the plan's units, in order (what a
    fairscale-format export's balance counts for a training plan; each unit
    takes what the one before it returns): a training result's units at its
    summary.unit_depth. An nn.Sequential model whose units are its children
    is returned as it is."""
    depth = (result.get("summary") or {}).get("unit_depth")
    if depth is None:
        raise ApplyError("layers() needs a training result (summary.unit_depth)")
    gm = trace(model)
    named = units(gm.graph.nodes, depth)
    if isinstance(model, torch.nn.Sequential) and \
            [name for name, _ in named] == [name for name, _ in model.named_children()]:
        return model
    per_unit = {"partitions": [{"id": i, "nodes": [n.name for n in members]}
                               for i, (_, members) in enumerate(named)]}
    split_gm = split(model, per_unit, example_inputs, gm=gm)
    seq = torch.nn.Sequential(*[module for _, module in stages(split_gm)])
    seq.partd_units = [name for name, _ in named]
    return seq


def _check_same(model, split_gm, example_inputs):
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    modes = [(m, m.training) for m in model.modules()]
    try:
        with exporter._Measuring(model, "cpu"), torch.no_grad():
            model.eval()
            want = model(*inputs)
            got = split_gm(*inputs)
    finally:
        for m, training in modes:
            m.training = training
    flat_want, flat_got = exporter._flat_tensors(want), exporter._flat_tensors(got)
    if len(flat_want) != len(flat_got) or any(
            a.shape != b.shape or not torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
            for a, b in zip(flat_want, flat_got)):
        raise ApplyError("the split model does not compute what the model computes on the "
                         "example inputs")


def _is_split(module):
    return isinstance(module, torch.fx.GraphModule) and hasattr(module, "partd_stage_order")


def stages(split_gm):
    """[(stage id, stage module)] of split()'s module, in stage order."""
    if not _is_split(split_gm):
        raise ApplyError("expected the module partd.apply.split returned")
    return [(k, getattr(split_gm, f"stage_{k}")) for k in split_gm.partd_stage_order]


# ---------------------------------------------------------------------------
# checkpoint
# ---------------------------------------------------------------------------


def _checkpoint_call(fn, context_fn, args, kwargs):
    """fn(*args, **kwargs), checkpointed: non-reentrant, so that
    torch.autograd.grad and a split backward work through it; context_fn:
    a selective policy (torch 2.4+)."""
    extra = {"use_reentrant": False}
    if context_fn is not None:
        extra["context_fn"] = context_fn
    return torch.utils.checkpoint.checkpoint(fn, *args, **extra, **kwargs)


class _Checkpoint(torch.nn.Module):
    """A run of a stage's nodes (`unit`, a GraphModule) checkpointed."""

    def __init__(self, unit, context_fn=None):
        super().__init__()
        self.unit = unit
        self.context_fn = context_fn

    def forward(self, *args):
        return _checkpoint_call(self.unit, self.context_fn, args, {})


_CHECKPOINTED = {}  # a module class -> its checkpointed subclass


def _checkpointed(module, context_fn=None):
    """Makes a module of the model checkpoint its forward, by giving it a
    subclass of its class whose forward does: its parameters keep their
    names, and copies of it (copy.deepcopy) checkpoint too."""
    cls = type(module)
    if cls not in _CHECKPOINTED:
        def forward(self, *args, **kwargs):
            inner = super(sub, self).forward
            return _checkpoint_call(inner, self._partd_context_fn, args, kwargs)
        sub = type(f"Checkpointed{cls.__name__}", (cls,), {"forward": forward})
        _CHECKPOINTED[cls] = sub
    module.__class__ = _CHECKPOINTED[cls]
    module._partd_context_fn = context_fn
    return module


def _outline(stage, members, index, context_fn=None):
    """Moves the run of nodes `members` of a stage GraphModule into a
    checkpointed submodule `checkpoint_<index>` and calls it instead."""
    graph = stage.graph
    member_set = set(members)
    inputs = []
    for n in members:
        for a in n.all_input_nodes:
            if a not in member_set and a.op != "get_attr" and a not in inputs:
                inputs.append(a)
    outputs = [n for n in members if any(u not in member_set for u in n.users)]
    unit = _subgraph(stage, members, inputs, outputs, class_name="Unit")
    name = f"checkpoint_{index}"
    stage.add_submodule(name, _Checkpoint(unit, context_fn))
    with graph.inserting_before(members[0]):
        call = graph.call_module(name, tuple(inputs))
        for j, out in enumerate(outputs):
            got = graph.call_function(operator.getitem, (call, j))
            got.meta = dict(out.meta)
            out.replace_all_uses_with(got)
    for n in reversed(members):
        graph.erase_node(n)
    # get_attr nodes only the unit read are its own now
    for n in list(graph.nodes):
        if n.op == "get_attr" and not n.users:
            graph.erase_node(n)
    graph.lint()
    stage.delete_all_unused_submodules()
    stage.recompile()


def _runs(nodes, pick):
    """Maximal runs of consecutive operation nodes for which pick(node)."""
    runs, current = [], []
    for n in nodes:
        if n.op not in OPERATIONS:
            continue
        if pick(n):
            current.append(n)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _sac_modules(result, root):
    """{fqn within the model: (discard ratio, op policy or None)} of a SAC
    result's modules with a ratio above 0."""
    sac = result.get("sac") or {}
    out = {}
    policies = sac.get("op_policies") or {}
    for name, ratio in (sac.get("ac_decisions") or {}).items():
        if not ratio > 0:
            continue
        if name == root:
            fqn = ""
        elif name.startswith(root + "."):
            fqn = name[len(root) + 1:]
        else:
            raise ApplyError(f"sac.ac_decisions names {name!r}, which is not inside the "
                             f"model's root {root!r} (SAC names are the root's class, then "
                             "the module's fqn): the plan was made for another model")
        out[fqn] = (ratio, policies.get(name))
    return out


def _selective(policy):
    """A context_fn applying an op-level policy, or None where torch has no
    selective checkpointing."""
    make = getattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts", None)
    if policy is None or make is None:
        return None
    from torch.utils.checkpoint import CheckpointPolicy

    def context_fn():
        decide = op_policy_decisions(policy)

        def policy_fn(ctx, op, *args, **kwargs):
            if op is torch.ops.aten.detach.default:  # as the exporter: not an op of the module
                return CheckpointPolicy.PREFER_RECOMPUTE
            save = decide(ctx.is_recompute)
            return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        return make(policy_fn)
    return context_fn


def op_policy_decisions(policy):
    """A function that, called once per aten operation of a module's forward
    (is_recompute False) or of its recomputation (True), returns whether
    the policy saves that operation's output (1) or recomputes it (0): the
    k-th operation gets policy[k], counted apart for forward and
    recomputation. More operations than the policy has is an ApplyError:
    the module is not the one the plan measured."""
    policy = [int(p) for p in policy]
    counts = {False: 0, True: 0}

    def decide(is_recompute):
        k = counts[bool(is_recompute)]
        counts[bool(is_recompute)] = k + 1
        if k >= len(policy):
            raise ApplyError(f"the module runs more operations than its op-level policy "
                             f"lists ({len(policy)}): it is not the module the plan measured")
        return bool(policy[k])
    return decide


def _warn_op_level(names):
    if names and not hasattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts"):
        warnings.warn(f"torch {torch.__version__} has no "
                      "torch.utils.checkpoint.create_selective_checkpoint_contexts (torch 2.4+): "
                      f"the op-level policies of {', '.join(sorted(names))} are applied as "
                      "whole-module checkpointing (every operation recomputed: more "
                      "recomputation than planned, never more memory)", stacklevel=3)


def checkpoint(module, result):
    """Makes `module` recompute in backward what `result` checkpoints (see
    the module's docstring); returns it. module: the module split()
    returned (any plan), or the model itself (the plan's checkpointed units
    must then be modules of it)."""
    parts = _partitions(result)
    if getattr(module, "partd_checkpointed", False):
        raise ApplyError("checkpoint() was applied to this module already")
    root = module.partd_root if _is_split(module) else type(module).__name__
    sac = _sac_modules(result, root)
    _warn_op_level([n for n, (_, p) in sac.items() if p is not None])
    if _is_split(module):
        _checkpoint_split(module, parts, sac)
    else:
        _checkpoint_model(module, parts, sac)
    module.partd_checkpointed = True
    return module


def _checkpoint_split(split_gm, parts, sac):
    count = 0
    for k, stage in stages(split_gm):
        wanted = list(parts[k].get("checkpointed") or [])
        nodes = list(stage.graph.nodes)
        have = {n.meta.get("partd_unit") for n in nodes}
        for unit in wanted:
            if unit not in have:
                raise ApplyError(f"stage {k} checkpoints unit {unit!r}, which it does not hold")
        runs = [(run, None) for unit in wanted
                for run in _runs(nodes, lambda n, u=unit: n.meta.get("partd_unit") == u)]
        for fqn, (_, policy) in sac.items():
            inside = (lambda n, f=fqn: True) if fqn == "" else \
                (lambda n, f=fqn: node_module(n) == f or node_module(n).startswith(f + "."))
            runs += [(run, _selective(policy)) for run in _runs(nodes, inside)]
        for run, context_fn in runs:
            _outline(stage, run, count, context_fn)
            count += 1


def _checkpoint_model(model, parts, sac):
    targets = {}
    for p in parts:
        for unit in p.get("checkpointed") or []:
            targets[unit] = None
    for fqn, (_, policy) in sac.items():
        targets[fqn] = _selective(policy)
    for fqn, context_fn in targets.items():
        try:
            sub = model.get_submodule(fqn) if fqn else model
        except AttributeError:
            raise ApplyError(f"{fqn!r} is not a module of {type(model).__name__}: checkpoint "
                             "the module partd.apply.split returned, which knows every "
                             "unit") from None
        _checkpointed(sub, context_fn)


# ---------------------------------------------------------------------------
# tied parameters
# ---------------------------------------------------------------------------


def _named_tensors(module, prefix=""):
    """(name, tensor) of every parameter and buffer under every name it has
    (named_parameters() gives a shared one once)."""
    for name, t in list(module._parameters.items()) + list(module._buffers.items()):
        if t is not None:
            yield prefix + name, t
    for name, child in module._modules.items():
        if child is not None:
            yield from _named_tensors(child, prefix + name + ".")


def tied(result, module=None):
    """The parameters the plan holds in several stages, whose gradients must
    be summed across them before the optimizer step: [{"param": name in the
    model, "stages": [stage ids]}] (the result's tied_params). With the
    module split() returned, only tensors that take gradients are listed
    (tied_params also names shared buffers, which have none), each with
    "names": {stage id: its name inside that stage}; ApplyError when the
    split shares a tensor across stages the plan does not list, or the
    other way round."""
    groups = []
    for t in result.get("tied_params") or []:
        groups.append({"param": t["param"], "stages": sorted(t["partitions"])})
    if module is None:
        return groups
    holders = {}  # id(tensor) -> {stage id: its name in the stage}
    for k, stage in stages(module):
        for name, t in _named_tensors(stage):
            holders.setdefault(id(t), {}).setdefault(k, name)
    found, out = set(), []
    for g in groups:
        param = _held(module, g["param"])
        names = holders.get(id(param), {}) if param is not None else {}
        if sorted(names) != g["stages"]:
            raise ApplyError(f"the plan ties {g['param']!r} across stages {g['stages']}, but "
                             f"the split holds it in stages {sorted(names)}")
        found.add(id(param))
        if isinstance(param, torch.nn.Parameter) and param.requires_grad:
            out.append(dict(g, names=dict(sorted(names.items()))))
    extra = [next(iter(names.values())) for pid, names in holders.items()
             if len(names) > 1 and pid not in found]
    if extra:
        raise ApplyError(f"the split shares tensors across stages that the plan does not "
                         f"tie: {extra}")
    return out


def _held(split_gm, name):
    """The parameter a stage holds under the model's name `name` (its
    canonical name: the stage that holds the module named so), or None."""
    for _, stage in stages(split_gm):
        try:
            return _fetch(stage, name)
        except AttributeError:
            continue
    return None
