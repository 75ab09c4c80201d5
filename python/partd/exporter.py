#!/usr/bin/env python3
"""partd.exporter - turn a PyTorch nn.Module into a partd request.

Traces the module with torch.fx (``symbolic_trace`` semantics), runs shape
propagation on example inputs and writes the request document of partd's
contract (api/schemas/request.json):

* ``output_bytes`` of every node: bytes of its output tensor(s), tuples and
  lists summed, 0 for nodes that return no tensor;
* ``params`` of ``call_module`` and ``get_attr`` nodes, named by their
  qualified parameter name in the root module.  A parameter reachable under
  two names (tied weights, e.g. GPT-2's ``lm_head.weight`` = ``wte.weight``)
  and a module called at two places both name the same parameter, so partd
  sees it as shared.  ``call_function``/``call_method`` nodes never carry
  parameters;
* ``module``: the fully qualified name of the innermost nn.Module whose
  forward created the node.  torch 1.13's tracer keeps no
  ``nn_module_stack``, and a node's position between module calls does not
  say whether it belongs to the module before, the one after or their
  parent, so the tracer here keeps its own stack of the modules whose
  forward is being traced and stamps every node it creates with the top of
  it.  The root's own operations have no ``module`` (its fqn is "");
* ``latency_ms``: the median of ``--timing-runs`` (default 3) timed runs of
  each node alone on the example inputs, or 0 with ``--no-timing``
  (reproducible output). Timing uses every CPU thread the process may run
  on, and restores the model's buffers and the random generator after;
* ``backward_ms`` and ``weight_grad_ms`` for a training request
  (``--mode training``, or ``--graph-only``): each node is timed alone as a
  training step runs it (training mode, autograd on): the forward
  (``latency_ms``), the gradient with respect to its inputs and, apart, the
  gradient with respect to its parameters (``weight_grad_ms``);
  ``backward_ms`` is their sum (``_Recorder.time_node_training``). The
  other modes read forward times only: their forwards are timed in eval
  mode without autograd and the backward is not measured (``--no-backward``
  forces that);
* ``graph.batch_size``: the batch the graph was traced with, the first
  dimension of the first example input (``--batch-size`` to say otherwise);
* the ``output`` node's ``meta.timing``: the device that measured
  (``--device cpu|cuda[:N]``; on CUDA every reading of the clock is
  synchronised), the number of runs and threads, the module's mode and
  whether autograd was on, and, for the CPU, a warning that the times are
  for the relative balance of stages only;
* with ``--module-info``: ``graph.modules`` in the shape of PyTorch's
  ``module_info`` (see ``gather_module_info``);
* ``options`` from the flags, ``--mode training`` with ``--training-*``.

Sizes: by default ``params`` lists parameters and buffers (what the device
has to hold).  ``--fx-sizes`` instead reproduces torch.fx's
``get_size_of_node`` exactly (parameters only, no buffers, counted with the
element size of the node's output), so that ``partd plan`` in ``size_based``
mode assigns nodes exactly as PyTorch's ``Partitioner`` does.

Command line, ``python -m partd.exporter`` or ``partd-export`` when
installed::

    partd-export torchvision.models:resnet50 --input 1,3,224,224 \\
        --devices 4x16GiB -o req.json

Python API: ``export_request(module, example_inputs, devices, options)``,
``export_graph(module, example_inputs)``, ``parse_devices("4x16GiB")``,
``gather_module_info(module, example_inputs)``.

Errors: bad command-line values, a model torch.fx cannot trace and a model
that fails on its example inputs exit with status 2 and one line on stderr
(no traceback); the Python API raises ``ValueError`` for bad arguments and
``ExportError`` (a ValueError, its __cause__ the original exception) for
models it cannot trace or run.
"""

import argparse
import dis
import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import statistics
import sys
import time

import torch
import torch.fx
from torch.fx.node import _get_qualified_name, map_aggregate
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata, _extract_tensor_metadata
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "export_request",
    "export_graph",
    "export_traced",
    "gather_module_info",
    "parse_bytes",
    "parse_devices",
    "trace",
]

# ---------------------------------------------------------------------------
# Tracing
# ---------------------------------------------------------------------------


class _ModuleTracer(torch.fx.Tracer):
    """symbolic_trace's tracer, plus two things partd needs.

    * Every node records the fqn of the innermost module whose forward was
      running when it was created (``node.meta["partd_module"]``), so nodes
      of inlined (non-leaf) modules keep their owner.
    * Tuple unpacking of a proxy (``n, c, h, w = x.shape``) works on every
      Python version: torch 1.13 locates the UNPACK_SEQUENCE instruction with
      a formula that no longer holds for Python 3.11 bytecode (inline
      caches), so its proxies find it by byte offset (_UnpackingProxy).
    """

    def __init__(self):
        super().__init__()
        self._module_stack = []

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        self._module_stack.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._module_stack.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["partd_module"] = self._module_stack[-1] if self._module_stack else ""
        return node

    def proxy(self, node):
        return _UnpackingProxy(node, self)

    def iter(self, obj):
        # Reached from torch's own Proxy.__iter__ (e.g. for `x.shape`, an
        # Attribute proxy) when its instruction lookup missed:
        # iter <- Proxy.__iter__ <- the unpacking code.
        frame = inspect.currentframe()
        caller = frame.f_back.f_back if frame is not None and frame.f_back else None
        gen = _unpack(obj, caller)
        return gen if gen is not None else super().iter(obj)


def _unpack(proxy, frame):
    """Items of `proxy` when `frame` is executing UNPACK_SEQUENCE, else None."""
    if frame is None:
        return None
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (proxy[i] for i in range(inst.argval))
            return None
    return None


class _UnpackingProxy(torch.fx.Proxy):
    """A Proxy whose tuple unpacking finds UNPACK_SEQUENCE by byte offset.

    torch 1.13 indexes the instruction list with f_lasti // 2, which is wrong
    for Python 3.11 bytecode (inline caches), so `x, _ = attn(...)` or
    `n, c, h, w = x.shape` would fail to trace."""

    def __iter__(self):
        frame = inspect.currentframe()
        gen = _unpack(self, frame.f_back if frame is not None else None)
        return gen if gen is not None else self.tracer.iter(self)


class ExportError(ValueError):
    """A model the exporter cannot trace or run on its example inputs.

    The message is one line that names the model class and the reason (the
    first line of torch's error); the original exception is its __cause__."""


def _one_line(exc):
    text = str(exc).strip().splitlines()
    first = text[0].strip() if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def trace(module):
    """symbolic_trace with module ownership recorded; returns a GraphModule.

    Raises ExportError when torch.fx cannot trace the module (data-dependent
    control flow, unsupported Python constructs, ...)."""
    tracer = _ModuleTracer()
    name = module.__class__.__name__
    try:
        graph = tracer.trace(module)
    except Exception as e:  # torch.fx raises TraceError, TypeError, RuntimeError, ...
        raise ExportError(f"cannot trace {name} with torch.fx ({_one_line(e)}); "
                          "make it traceable first (data-dependent control flow: "
                          "torch.fx.wrap or concrete_args)") from e
    return torch.fx.GraphModule(tracer.root, graph, name)


# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------


def _element_size(dtype):
    return torch.empty((), dtype=dtype).element_size()


def _tensor_bytes(t):
    return t.numel() * t.element_size()


def _meta_bytes(meta):
    """Bytes of every TensorMetadata in a (nested) ShapeProp tensor_meta."""
    if isinstance(meta, TensorMetadata):
        return meta.shape.numel() * _element_size(meta.dtype)
    if isinstance(meta, (list, tuple)):
        return sum(_meta_bytes(m) for m in meta)
    if isinstance(meta, dict):
        return sum(_meta_bytes(m) for m in meta.values())
    return 0


def _first_meta(meta):
    if isinstance(meta, TensorMetadata):
        return meta
    if isinstance(meta, (list, tuple)):
        for m in meta:
            found = _first_meta(m)
            if found is not None:
                return found
    if isinstance(meta, dict):
        return _first_meta(list(meta.values()))
    return None


def _canonical_names(root):
    """id(tensor) -> the first qualified name under which root holds it.

    named_parameters()/named_buffers() drop duplicates, so a tensor reachable
    under several names (tied weights) gets one canonical name."""
    names = {}
    for name, p in root.named_parameters():
        names.setdefault(id(p), name)
    for name, b in root.named_buffers():
        names.setdefault(id(b), name)
    return names


def _fetch_attr(root, target):
    obj = root
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _node_params(gm, node, canonical, fx_sizes):
    """[{name, bytes}] for call_module and get_attr nodes, else []."""
    if node.op == "call_module":
        sub = gm.get_submodule(node.target)
        tensors = list(sub.named_parameters(prefix=node.target))
        if fx_sizes:
            # FX: (sum of parameter elements) * element size of the output.
            meta = _first_meta(node.meta.get("tensor_meta"))
            elem = _element_size(meta.dtype) if meta is not None else 4
            return [{"name": canonical.get(id(p), n), "bytes": p.numel() * elem}
                    for n, p in tensors]
        tensors += list(sub.named_buffers(prefix=node.target))
        return [{"name": canonical.get(id(t), n), "bytes": _tensor_bytes(t)}
                for n, t in tensors]
    if node.op == "get_attr":
        value = _fetch_attr(gm, node.target)
        if isinstance(value, torch.Tensor):
            return [{"name": canonical.get(id(value), node.target),
                     "bytes": _tensor_bytes(value)}]
    return []


def _target_name(node):
    if node.op == "call_function":
        try:
            return _get_qualified_name(node.target)
        except Exception:  # builtins without a module path
            return getattr(node.target, "__name__", str(node.target))
    return str(node.target)


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


# The clock every measurement reads (tests replace it with a fake one).
_perf_counter = time.perf_counter

CPU_TIMING_WARNING = ("latencies were measured on the CPU: use them for the relative "
                      "balance of stages, not as GPU times")


class _Clock:
    """Wall-clock timing on one device.

    On CUDA the device is synchronised before the clock is read, so that a
    measurement covers the kernels a call launched, not just their launch.
    budget_ms: a measurement whose runs have taken that long in all is not
    repeated (0: always every run): its median is already well above the
    clock's noise, and repeating the model's largest operations is what made
    an export slow."""

    def __init__(self, device="cpu", budget_ms=0.0):
        self.device = torch.device(device)
        self.budget_ms = budget_ms

    def spent(self, samples):
        """Whether `samples` (ms) have used up the budget."""
        return self.budget_ms > 0 and sum(samples) >= self.budget_ms

    def now(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return _perf_counter()

    def median_ms(self, fn, runs, warm_up=True):
        """Median wall-clock ms of `runs` calls of fn(), after one untimed
        warm-up call unless warm_up is False (fn ran just before)."""
        if warm_up:
            fn()
        samples = []
        for _ in range(runs):
            start = self.now()
            fn()
            samples.append((self.now() - start) * 1e3)
            if self.spent(samples):
                break
        return statistics.median(samples)


def resolve_device(name):
    """'cpu' or 'cuda[:N]' -> torch.device; ExportError when CUDA is asked
    for and not available (CPU times would silently stand in for GPU times)."""
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ExportError(f"unknown device {name!r} (cpu, cuda or cuda:N)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ExportError(f"--device {name}: CUDA is not available to this torch "
                              "(torch.cuda.is_available() is false); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ExportError(f"--device {name}: only {torch.cuda.device_count()} CUDA "
                              "device(s)")
    elif device.type != "cpu":
        raise ExportError(f"unsupported device {name!r} (cpu, cuda or cuda:N)")
    return device


def cpu_threads():
    """The CPU threads this process may run on (its affinity), the most
    torch can use for one operation."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Measuring:
    """What a measurement changes, undone afterwards: torch's thread count
    (raised to every CPU the process may use, so that an operation takes
    the time a training run's would), the random number generator (dropout
    draws) and the module's buffers (batch norm's running statistics move in
    every training-mode forward)."""

    def __init__(self, module, device):
        self.module = module
        self.cpu = torch.device(device).type == "cpu"

    def __enter__(self):
        self.threads = torch.get_num_threads()
        if self.cpu:
            torch.set_num_threads(max(self.threads, cpu_threads()))
        self.rng = torch.random.get_rng_state()
        with torch.no_grad():
            self.buffers = [(b, b.clone()) for b in self.module.buffers()]
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for b, saved in self.buffers:
                b.copy_(saved)
        torch.random.set_rng_state(self.rng)
        torch.set_num_threads(self.threads)
        return False


def timing_meta(device, runs, budget_ms=0.0):
    """What the `output` node's meta says about the measurements."""
    device = torch.device(device)
    meta = {"device": device.type, "runs": runs, "statistic": "median"}
    if budget_ms:
        meta["budget_ms"] = budget_ms
    if device.type == "cpu":
        meta["threads"] = max(torch.get_num_threads(), cpu_threads())
    if device.type == "cuda":
        meta["device_name"] = torch.cuda.get_device_name(device)
    else:
        meta["warning"] = CPU_TIMING_WARNING
    return meta


class _Slot:
    """Where a fresh copy of an input goes in a node's arguments (_grad_args)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _grad_args(value, param_ids, sources, weights):
    """`value` (a node's args or kwargs) with every tensor that requires grad
    and is not a parameter replaced by a _Slot (its data appended to
    `sources`), and the parameters among them appended to `weights`. Each
    timed run then gets copies of fresh leaves (_fill), so that in-place
    operations never touch a leaf or the recorded values, and the gradient
    with respect to the inputs is taken apart from that with respect to the
    weights."""
    if isinstance(value, torch.Tensor):
        if not value.requires_grad:
            return value
        if value.is_leaf and id(value) in param_ids:
            if all(w is not value for w in weights):
                weights.append(value)
            return value
        sources.append(value.detach())
        return _Slot(len(sources) - 1)
    if isinstance(value, tuple):
        return tuple(_grad_args(v, param_ids, sources, weights) for v in value)
    if isinstance(value, list):
        return [_grad_args(v, param_ids, sources, weights) for v in value]
    if isinstance(value, dict):
        return {k: _grad_args(v, param_ids, sources, weights) for k, v in value.items()}
    return value


def _fill(value, copies):
    if isinstance(value, _Slot):
        return copies[value.index]
    if isinstance(value, tuple):
        return tuple(_fill(v, copies) for v in value)
    if isinstance(value, list):
        return [_fill(v, copies) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, copies) for k, v in value.items()}
    return value


class _NodeError(RuntimeError):
    """A node that failed while the model ran on the example inputs."""


class _Recorder(ShapeProp):
    """ShapeProp that keeps every value so nodes can be re-run for timing."""

    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)
        self.param_ids = {id(p) for p in gm.parameters()}

    def run_node(self, n):
        # ShapeProp's own run_node prints the traceback of a failing node;
        # this one reports the failure as one line (node and reason).
        try:
            result = torch.fx.Interpreter.run_node(self, n)
        except Exception as e:
            raise _NodeError(f"node {n.name}: {_one_line(e)}") from e
        found = []

        def extract(obj):
            if isinstance(obj, torch.Tensor):
                found.append(obj)
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def _node_call(self, node):
        args = self.map_nodes_to_values(node.args, node)
        kwargs = self.map_nodes_to_values(node.kwargs, node)
        return getattr(self, node.op), args, kwargs

    def time_node(self, node, runs, clock=None):
        """Median wall-clock ms of running `node` on the recorded inputs (no
        warm-up: the propagation that recorded them has just run it)."""
        if node.op in ("placeholder", "output"):
            return 0.0
        fn, args, kwargs = self._node_call(node)
        return (clock or _Clock()).median_ms(lambda: fn(node.target, args, kwargs), runs,
                                             warm_up=False)

    def time_node_training(self, node, runs, clock=None):
        """(forward, input-gradient, weight-gradient) ms of `node` alone as a
        training step runs it: medians of `runs` runs, each a forward with
        autograd on, then the gradient with respect to its inputs
        (torch.autograd.grad of gradients of ones at its outputs), then the
        gradient with respect to its parameters (its module's, and those it
        reads through get_attr nodes), as a split backward computes them.
        torch.autograd.grad leaves every .grad as it was. A part with nothing
        to differentiate is 0; so is all of it when no gradient flows."""
        if node.op not in ("call_module", "call_function", "call_method"):
            return 0.0, 0.0, 0.0
        clock = clock or _Clock()
        fn, args, kwargs = self._node_call(node)
        sources, weights = [], []
        if node.op == "call_module":
            weights = [p for p in self.module.get_submodule(node.target).parameters()
                       if p.requires_grad]
        template = _grad_args((args, kwargs), self.param_ids, sources, weights)
        leaves = [t.requires_grad_(True) for t in sources]
        forward, input_grad, weight_grad = [], [], []
        for _ in range(runs):
            a, k = _fill(template, [leaf.clone() for leaf in leaves])
            start = clock.now()
            with torch.enable_grad():
                out = fn(node.target, a, k)
            forward.append((clock.now() - start) * 1e3)
            outs = [t for t in _flat_tensors(out) if t.requires_grad and t.grad_fn is not None]
            if not outs:
                continue
            grads = [torch.ones_like(t) for t in outs]
            if leaves:
                start = clock.now()
                torch.autograd.grad(outs, leaves, grads, retain_graph=bool(weights),
                                    allow_unused=True)
                input_grad.append((clock.now() - start) * 1e3)
            if weights:
                start = clock.now()
                torch.autograd.grad(outs, weights, grads, allow_unused=True)
                weight_grad.append((clock.now() - start) * 1e3)
            if clock.spent(forward + input_grad + weight_grad):
                break
        return tuple(statistics.median(x) if x else 0.0
                     for x in (forward, input_grad, weight_grad))


def _round_ms(ms):
    # Six significant digits keep requests readable without losing anything
    # a CPU timer can resolve.
    return float(f"{ms:.6g}")


# ---------------------------------------------------------------------------
# Graph export
# ---------------------------------------------------------------------------


def _save_modes(module):
    return [(m, m.training) for m in module.modules()]


def _restore_modes(modes):
    for m, training in modes:
        m.training = training


def _to_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


DEFAULT_TIMING_RUNS = 3
DEFAULT_TIMING_BUDGET_MS = 100.0


def export_graph(module, example_inputs, *, name=None, timing=True,
                 timing_runs=DEFAULT_TIMING_RUNS, timing_budget_ms=DEFAULT_TIMING_BUDGET_MS,
                 fx_sizes=False, module_info=False, shapes=True, device="cpu", backward=True,
                 batch_size=None):
    """The `graph` object of a request for `module` on `example_inputs`.

    module_info=True adds `modules` (gather_module_info). backward=True
    times every node as a training step runs it (training mode, autograd
    on: `latency_ms`, `backward_ms`, `weight_grad_ms`); backward=False times
    forwards only, in eval mode without autograd (what the pipeline and FX
    modes read). The module's modes, buffers and the random number
    generator are restored afterwards. device: where timing runs ('cpu',
    'cuda', 'cuda:N'); the module and inputs are moved there for the
    measurements and back. timing_runs, timing_budget_ms: each node (and
    each training step of module_info) runs up to timing_runs times, fewer
    once its runs have taken timing_budget_ms (0: no budget); the median is
    written. batch_size: `graph.batch_size`, by default the
    first dimension of the first example input that has one. Raises
    ExportError for a module torch.fx cannot trace or that fails on the
    example inputs."""
    device = resolve_device(device)
    gm = trace(module)
    graph = export_traced(gm, example_inputs, name=name or module.__class__.__name__,
                          timing=timing, timing_runs=timing_runs,
                          timing_budget_ms=timing_budget_ms, fx_sizes=fx_sizes,
                          shapes=shapes, device=device, backward=backward,
                          batch_size=batch_size)
    if module_info:
        graph["modules"] = gather_module_info(module, example_inputs,
                                              timing_runs=timing_runs if timing else 1,
                                              timing_budget_ms=timing_budget_ms,
                                              device=device)
    return graph


def traced_batch_size(example_inputs):
    """The first dimension of the first example input that has one, or None."""
    for t in _flat_tensors(list(_to_inputs(example_inputs))):
        if t.dim() >= 1:
            return int(t.shape[0])
    return None


def _to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


class _OnDevice:
    """Moves a module to `device` for a measurement and back afterwards."""

    def __init__(self, module, device):
        self.module, self.device = module, torch.device(device)
        first = next(iter(list(module.parameters()) + list(module.buffers())), None)
        self.home = first.device if first is not None else torch.device("cpu")

    def __enter__(self):
        if self.device != self.home:
            self.module.to(self.device)
        return self

    def __exit__(self, *exc):
        if self.device != self.home:
            self.module.to(self.home)
        return False


def _propagate(recorder, inputs):
    try:
        recorder.propagate(*inputs)
    except ExportError:
        raise
    except Exception as e:  # the model's own error on these inputs
        name = recorder.module.__class__.__name__
        detail = str(e).strip().splitlines()[0] if isinstance(e, _NodeError) else _one_line(e)
        raise ExportError(f"cannot run {name} on the example inputs ({detail})") from e


def export_traced(gm, example_inputs, *, name=None, timing=True,
                  timing_runs=DEFAULT_TIMING_RUNS, timing_budget_ms=DEFAULT_TIMING_BUDGET_MS,
                  fx_sizes=False, shapes=True, device="cpu", backward=True, batch_size=None):
    """export_graph() for an already traced GraphModule (e.g. one also given
    to torch.fx's Partitioner). Shape propagation leaves `tensor_meta` in the
    nodes' meta, as torch.fx's ShapeProp does.

    With timing and backward: every node is timed alone as a training step
    runs it (_Recorder.time_node_training, training mode): `latency_ms` the
    forward, `weight_grad_ms` the gradient with respect to its parameters
    and `backward_ms` that plus the gradient with respect to its inputs,
    medians of `timing_runs` runs each. With timing and not backward:
    `latency_ms` the median of `timing_runs` forwards in eval mode without
    autograd. The `output` node's meta says which device measured, with how
    many threads and in which mode (`timing`, see timing_meta())."""
    device = resolve_device(device)
    clock = _Clock(device, timing_budget_ms)
    inputs = _to_device(_to_inputs(example_inputs), device)
    if batch_size is None:
        batch_size = traced_batch_size(inputs)
    elif not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    modes = _save_modes(gm)
    times, mode = {}, None
    try:
        with _OnDevice(gm, device), _Measuring(gm, device):
            if timing and backward:
                times, mode = _time_training(gm, inputs, timing_runs, clock)
            else:
                times = _time_forwards(gm, inputs, timing_runs if timing else 0, clock)
    finally:
        _restore_modes(modes)
    canonical = _canonical_names(gm)
    nodes = [_node_json(gm, n, canonical, fx_sizes, shapes, times.get(n)) for n in gm.graph.nodes]
    if timing:
        output = next((n for n in nodes if n["op"] == "output"), None)
        if output is not None:
            meta = timing_meta(device, timing_runs, timing_budget_ms)
            meta["mode"] = mode or "eval"
            meta["autograd"] = bool(backward)
            output.setdefault("meta", {})["timing"] = meta
    graph = {"name": name or gm.__class__.__name__}
    if batch_size is not None:
        graph["batch_size"] = batch_size
    graph["nodes"] = nodes
    return graph


def _time_forwards(gm, inputs, runs, clock):
    """{node: (latency ms,)}: shapes from one forward in eval mode without
    autograd, then `runs` timed forwards of each node (none: no timing)."""
    gm.eval()
    with torch.no_grad():
        recorder = _Recorder(gm)
        _propagate(recorder, inputs)
        try:
            if not runs:
                return {}
            return {node: (_round_ms(recorder.time_node(node, runs, clock)),)
                    for node in gm.graph.nodes}
        finally:
            recorder.env.clear()


def _time_training(gm, inputs, runs, clock):
    """({node: (latency, backward, weight-gradient ms)}, mode) from one
    forward with autograd on (which also gives the shapes), then each node
    timed alone (_Recorder.time_node_training).

    The forward runs in training mode (dropout and batch statistics as in a
    training step). A model that cannot run in training mode on the example
    inputs (batch norm over a single value per channel, say) is measured in
    eval mode instead, and mode says "eval"."""
    recorder = _Recorder(gm)
    mode = "train"
    try:
        gm.train()
        with torch.enable_grad():
            _propagate(recorder, inputs)
    except ExportError:
        mode = "eval"
        gm.eval()
        recorder = _Recorder(gm)
        with torch.enable_grad():
            _propagate(recorder, inputs)
    times = {}
    try:
        for node in gm.graph.nodes:
            forward, input_grad, weight_grad = recorder.time_node_training(node, runs, clock)
            # rounding is monotonic, so weight_grad_ms <= backward_ms holds
            times[node] = (_round_ms(forward), _round_ms(input_grad + weight_grad),
                           _round_ms(weight_grad))
        return times, mode
    finally:
        recorder.env.clear()


def _node_json(gm, node, canonical, fx_sizes, shapes, times=None):
    """One node of graph.nodes; times: (latency_ms,) or (latency_ms,
    backward_ms, weight_grad_ms), None when not timed."""
    meta = node.meta.get("tensor_meta")
    out = {"name": node.name, "op": node.op, "target": _target_name(node)}
    out["inputs"] = [n.name for n in node.all_input_nodes]
    out["output_bytes"] = 0 if node.op == "output" else _meta_bytes(meta)
    params = _node_params(gm, node, canonical, fx_sizes)
    if params:
        out["params"] = params
    times = times or (0.0,)
    out["latency_ms"] = times[0]
    if len(times) == 3:
        out["backward_ms"], out["weight_grad_ms"] = times[1], times[2]
    owner = node.target if node.op == "call_module" else node.meta.get("partd_module", "")
    if owner:
        out["module"] = owner
    first = _first_meta(meta)
    if shapes and first is not None and node.op != "output":
        out["meta"] = {"shape": list(first.shape), "dtype": str(first.dtype).replace("torch.", "")}
    return out


def export_request(module, example_inputs, devices, options=None, **graph_kwargs):
    """A complete request: {graph, devices, options}.

    devices: a list of device objects ({"name", "memory_bytes", ...}) or a
    spec string for parse_devices(). options: the request's `options` object
    (None: omitted, partd's defaults apply). Keyword arguments go to
    export_graph(); `backward` defaults to whether options.mode is
    "training", the only mode that reads backward times."""
    if isinstance(devices, str):
        devices = parse_devices(devices)
    if not devices:
        raise ValueError("at least one device is required")
    graph_kwargs.setdefault("backward", (options or {}).get("mode") == "training")
    request = {"graph": export_graph(module, example_inputs, **graph_kwargs),
               "devices": list(devices)}
    if options:
        request["options"] = options
    return request


# ---------------------------------------------------------------------------
# Module info (PyTorch's SAC module_info)
# ---------------------------------------------------------------------------

class _Gatherer:
    """Forward hooks + saved-tensor hooks over one training step.

    Per module (fqn relative to the root, "" for the root):
    fw/bw order, forward time, backward time, input/output bytes, bytes of
    activations saved for backward during its forward (excluding its inputs
    and parameters), activation bytes alive when its forward returns, and
    gradient bytes already accumulated when its backward starts."""

    def __init__(self, root, clock=None, record_ops=False):
        self.root = root
        self.clock = clock or _Clock()
        # record_ops: also record every aten operation of the forward
        # (_OpRecorder), for the modules whose inside torch.fx cannot see
        self.record_ops = record_ops
        self.ops = []              # [_Op], forward order
        self.calls = {}            # fqn -> [[op index, ...] per call]
        self.call_out_ptrs = {}    # fqn -> [{output ptr} per call]
        self.fqn = {m: n for n, m in root.named_modules()}
        self.param_ptrs = {p.data_ptr() for p in root.parameters()}
        self.param_ptrs |= {b.data_ptr() for b in root.buffers()}
        self.stack = []
        self.fw_pre, self.fw_post = [], []
        self.fw_start, self.fw_ms = {}, {}
        self.in_bytes, self.out_bytes = {}, {}
        self.in_ptrs = {}
        self.saved = {}            # storage ptr -> bytes, all saved activations
        self.saved_by = {}         # fqn -> {ptr: bytes} saved inside its forward
        self.act_total = {}
        self.bw_start, self.bw_end = {}, {}
        self.grad_ready = {}       # param ptr -> bytes, grads accumulated so far
        self.grad_total = {}
        self.handles = []

    # -- hooks -------------------------------------------------------------
    def _pre(self, mod, inputs):
        fqn = self.fqn[mod]
        if fqn not in self.fw_start:
            self.fw_pre.append(fqn)
        self.stack.append(fqn)
        tensors = _flat_tensors(inputs)
        self.in_ptrs[fqn] = {t.data_ptr() for t in tensors}
        self.in_bytes.setdefault(fqn, _distinct_bytes(tensors))
        self.saved_by.setdefault(fqn, {})
        self.calls.setdefault(fqn, []).append([])
        self.fw_start[fqn] = self.clock.now()
        for t in tensors:
            if t.requires_grad:
                t.register_hook(self._bw_end_hook(fqn))

    def _post(self, mod, inputs, output):
        fqn = self.fqn[mod]
        elapsed = (self.clock.now() - self.fw_start[fqn]) * 1e3
        self.fw_ms[fqn] = self.fw_ms.get(fqn, 0.0) + elapsed
        if fqn not in self.fw_post:
            self.fw_post.append(fqn)
        self.stack.pop()
        tensors = _flat_tensors(output)
        self.out_bytes.setdefault(fqn, _distinct_bytes(tensors))
        self.call_out_ptrs.setdefault(fqn, []).append({t.data_ptr() for t in tensors})
        live = dict(self.saved)
        for t in tensors:
            live[t.data_ptr()] = _tensor_bytes(t)
        self.act_total[fqn] = sum(live.values())
        for t in tensors:
            if t.requires_grad:
                t.register_hook(self._bw_start_hook(fqn))

    def _pack(self, t):
        ptr = t.data_ptr()
        if ptr not in self.param_ptrs and ptr != 0:
            size = t.untyped_storage().nbytes() if hasattr(t, "untyped_storage") \
                else t.storage().nbytes()
            self.saved[ptr] = size
            for fqn in self.stack:
                if ptr not in self.in_ptrs.get(fqn, ()):
                    self.saved_by[fqn][ptr] = size
        return t

    def _bw_start_hook(self, fqn):
        def hook(grad):
            if fqn not in self.bw_start:
                self.bw_start[fqn] = self.clock.now()
                self.grad_total[fqn] = sum(self.grad_ready.values())
        return hook

    def _bw_end_hook(self, fqn):
        def hook(grad):
            self.bw_end[fqn] = self.clock.now()
        return hook

    def _param_hook(self, p):
        def hook(grad):
            self.grad_ready[p.data_ptr()] = _tensor_bytes(p)
        return hook

    # -- one training step ---------------------------------------------------
    def run(self, inputs):
        for mod in self.fqn:
            self.handles.append(mod.register_forward_pre_hook(self._pre))
            self.handles.append(mod.register_forward_hook(self._post))
        for p in self.root.parameters():
            if p.requires_grad:
                self.handles.append(p.register_hook(self._param_hook(p)))
        try:
            with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
                if self.record_ops:
                    with _OpRecorder(self):
                        out = self.root(*inputs)
                else:
                    out = self.root(*inputs)
            loss = _scalar_loss(out)
            start = self.clock.now()
            self.bw_root_start = start
            if loss is not None and loss.requires_grad:
                loss.backward()
            self.bw_root_end = self.clock.now()
        finally:
            for h in self.handles:
                h.remove()
            self.handles = []
            self.root.zero_grad(set_to_none=True)


def _flat_tensors(obj):
    out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            out.extend(_flat_tensors(o))
    elif isinstance(obj, dict):
        for o in obj.values():
            out.extend(_flat_tensors(o))
    return out


def _distinct_bytes(tensors):
    return sum({t.data_ptr(): _tensor_bytes(t) for t in tensors}.values())


def _scalar_loss(out):
    tensors = [t for t in _flat_tensors(out) if t.is_floating_point()]
    if not tensors:
        return None
    return sum(t.float().sum() for t in tensors)


_RANDOM_ATEN = {"native_dropout", "dropout", "bernoulli", "bernoulli_", "rand", "randn",
                "rand_like", "randn_like", "randint", "randint_like", "normal", "normal_",
                "uniform_", "randperm", "multinomial"}


class _Op:
    """One aten operation of a recorded forward (TorchDispatchMode)."""

    __slots__ = ("name", "runtime", "outs", "view", "inplace", "rand", "parent", "saved")

    def __init__(self, name, runtime, outs, view, inplace, rand, parent):
        self.name, self.runtime, self.outs = name, runtime, outs  # outs: {data_ptr: bytes}
        self.view, self.inplace, self.rand = view, inplace, rand
        self.parent, self.saved = parent, False

    def memory(self, kept_ptrs=()):
        """Bytes this op creates, without the tensors in kept_ptrs (views
        and in-place updates create none)."""
        if self.view or self.inplace:
            return 0
        return sum(b for ptr, b in self.outs.items() if ptr not in kept_ptrs)


class _OpRecorder(TorchDispatchMode):
    """Records every aten operation of a forward into a _Gatherer: its
    runtime, the bytes of the tensors it creates, whether it is a view, an
    in-place update (and of which op's output) or random, and which modules
    were running. This sees the work of modules whose forward torch.fx
    cannot look into (nn.MultiheadAttention runs F.multi_head_attention_forward
    as one leaf call_module node), as PyTorch's SACEstimator does."""

    def __init__(self, gatherer):
        super().__init__()
        self.g = gatherer
        self.producer = {}  # data_ptr -> index of the op that created it

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        g = self.g
        start = g.clock.now()
        out = func(*args, **(kwargs or {}))
        elapsed = (g.clock.now() - start) * 1e3
        if func is torch.ops.aten.detach.default or not g.stack:
            return out  # autograd's own bookkeeping, or outside every module
        returns = func._schema.returns
        inplace = any(r.alias_info is not None and r.alias_info.is_write for r in returns)
        view = not inplace and any(r.alias_info is not None for r in returns)
        name = func.overloadpacket.__name__
        outs = {t.data_ptr(): _tensor_bytes(t) for t in _flat_tensors(out)}
        parent = None
        if inplace:
            firsts = _flat_tensors(args[:1])
            parent = self.producer.get(firsts[0].data_ptr()) if firsts else None
        index = len(g.ops)
        g.ops.append(_Op(name, elapsed, outs, view, inplace, name in _RANDOM_ATEN, parent))
        if not view and not inplace:
            for ptr in outs:
                self.producer[ptr] = index
        for fqn in g.stack:
            g.calls[fqn][-1].append(index)
        return out


def _stats_of(entries):
    """SACStats fields from op entries (dicts: name, runtime, memory, view,
    inplace, rand, saved, key, parents: keys of the ops an in-place op may
    update, the first one in the list counts). The entries' memory already
    leaves out the module's outputs (always kept: discarding them frees
    nothing)."""
    index = {e["key"]: i for i, e in enumerate(entries)}
    stats = {"func_names": [], "runtimes": [], "memory": [], "view_like_ops": [],
             "rand_ops": [], "saved_autograd_ops": [], "inplace_ops": [],
             "force_store_random": False}
    for i, e in enumerate(entries):
        stats["func_names"].append(e["name"])
        stats["runtimes"].append(e["runtime"])
        stats["memory"].append(0 if e["view"] else e["memory"])
        if e["view"]:
            stats["view_like_ops"].append(i)
        if e["rand"]:
            stats["rand_ops"].append(i)
        if e["saved"]:
            stats["saved_autograd_ops"].append(i)
        if e["inplace"]:
            inside = [index[p] for p in e["parents"] if p in index]
            stats["inplace_ops"].append([i, inside[0] if inside else i])
    return stats


def _runtime_entries(rec, indices, kept_ptrs=()):
    """Op entries of recorded aten operations (indices into rec.ops); the
    tensors in kept_ptrs (the module's outputs) count no memory."""
    out = []
    for i in indices:
        op = rec.ops[i]
        out.append({"name": op.name, "runtime": _round_ms(op.runtime),
                    "memory": op.memory(kept_ptrs),
                    "view": op.view, "inplace": op.inplace, "rand": op.rand,
                    "saved": op.saved, "key": ("aten", i), "parents": [("aten", op.parent)]})
    return out


def _module_ops(rec, fqn):
    """SACStats-shaped op list of module `fqn`: the aten operations recorded
    while it ran (its children's included, as PyTorch's SACEstimator counts
    them), whatever torch.fx sees of it: a module whose work happens in one
    opaque call (nn.MultiheadAttention, a torch.fx.wrap'ed function) is
    measured like any other. Its output tensors are the ones kept."""
    calls = rec.calls.get(fqn, [])
    indices = sorted({i for call in calls for i in call})
    kept_ptrs = set().union(*rec.call_out_ptrs.get(fqn, [set()]))
    return _stats_of(_runtime_entries(rec, indices, kept_ptrs))


def _greedy_tradeoff(stats):
    """PyTorch SACEstimator's greedy recompute order -> trade-off points.

    Returns [(discarded memory fraction, recompute time fraction)], starting
    with what is recomputed anyway (view-like ops), then adding candidates in
    decreasing memory-per-millisecond order, then the always-stored ops."""
    memory, runtimes = stats["memory"], stats["runtimes"]
    total_mem, total_rt = sum(memory), sum(runtimes)
    if total_mem <= 0 or total_rt <= 0:
        return []
    inplace_parent = {op: parent for op, parent in stats["inplace_ops"]}
    groups = {}
    for op, head in inplace_parent.items():
        groups.setdefault(head, {head}).add(op)
    rand = set(stats["rand_ops"])
    stored = set()
    if rand and stats["force_store_random"]:
        stored.add(min(rand))
    for head in groups:
        if head in inplace_parent and inplace_parent[head] != head:
            stored.add(head)
        if head in inplace_parent and inplace_parent[head] == head:
            stored.add(head)
    recomputed = set(stats["view_like_ops"])
    candidates = set(range(len(memory))) - recomputed - stored - set(inplace_parent) - rand
    candidates |= set(groups) - stored
    if rand and min(rand) not in stored:
        candidates.add(min(rand))

    def members(i):
        s = {i} | groups.get(i, set())
        if rand and i == min(rand):
            s |= rand
        return s

    entries = []
    for c in sorted(candidates):
        s = members(c)
        mem = sum(memory[j] for j in s)
        rt = sum(runtimes[j] for j in s)
        entries.append((mem / rt if rt > 0 else float("inf"), c, mem, rt))
    entries.sort(key=lambda e: (-e[0], e[1]))
    done = set()
    for r in recomputed:
        done |= members(r)
    discarded = sum(memory[j] for j in done)
    recomp = sum(runtimes[j] for j in done)
    points = [(discarded / total_mem, recomp / total_rt)]
    for _, _, mem, rt in entries:
        discarded += mem
        recomp += rt
        points.append((discarded / total_mem, recomp / total_rt))
    return points


def _fit_max_of_lines(points, n_segments=2):
    """Piecewise-linear upper model of a convex trade-off curve.

    The greedy order discards the most memory per millisecond first, so the
    curve recompute(discarded) has non-decreasing slopes: it is convex and
    equal to the maximum of its segments' lines.  sac_milp models it as
    rcp >= slope_s * r + intercept_s for every segment s, i.e. exactly such a
    maximum.  We keep at most `n_segments` lines: the breakpoint (one of the
    curve's own points) that minimises the squared error of a continuous
    two-piece fit through the end points; each piece is the chord of the
    curve over its range, which lies above the convex curve, so the model
    never underestimates recomputation time.

    Returns (n_segments, slopes, intercepts, breakpoints)."""
    pts = sorted(set(points))
    if len(pts) < 2:
        return 0, [], [], []

    def chord(a, b):
        (x0, y0), (x1, y1) = a, b
        if x1 == x0:
            return 0.0, y1
        s = (y1 - y0) / (x1 - x0)
        return s, y0 - s * x0

    def sq_error(lines, lo, hi):
        err = 0.0
        for x, y in pts[lo:hi + 1]:
            s, c = lines
            err += (s * x + c - y) ** 2
        return err

    first, last = 0, len(pts) - 1
    if n_segments < 2 or len(pts) < 3:
        s, c = chord(pts[first], pts[last])
        return 1, [s], [c], [pts[first][0], pts[last][0]]
    best = None
    for k in range(1, last):
        a, b = chord(pts[first], pts[k]), chord(pts[k], pts[last])
        err = sq_error(a, first, k) + sq_error(b, k, last)
        if best is None or err < best[0] - 1e-15:
            best = (err, k, a, b)
    _, k, a, b = best
    return 2, [a[0], b[0]], [a[1], b[1]], [pts[first][0], pts[k][0], pts[last][0]]


def _training_step(gatherer, inputs):
    try:
        gatherer.run(inputs)
    except Exception as e:  # the model's own error on these inputs
        name = gatherer.root.__class__.__name__
        raise ExportError(f"cannot run a training step of {name} on the example "
                          f"inputs ({_one_line(e)})") from e


def _mark_saved(rec):
    """Marks the recorded ops whose output autograd saved for backward."""
    for op in rec.ops:
        op.saved = any(ptr in rec.saved for ptr in op.outs)
    return rec


def gather_module_info(module, example_inputs, timing_runs=DEFAULT_TIMING_RUNS,
                       timing_budget_ms=DEFAULT_TIMING_BUDGET_MS, device="cpu"):
    """PyTorch's SAC `module_info` for `module` on `example_inputs`.

    Up to `timing_runs` training steps (fewer once they have taken
    timing_budget_ms; training mode, on `device`, with every CPU thread)
    with forward pre/post hooks on every module, saved-tensor
    hooks (which activations autograd keeps) and gradient hooks, and one
    more that records every aten operation (_OpRecorder), apart, so that
    the recorder's overhead never counts in a module's times. Module names
    follow PyTorch's ModTracker: the root is its class name and every other
    module is `Root.child.grandchild`, which is `Root.` + the `module` of
    graph.nodes (the fqn torch's named_modules gives).

    Per module: param/grad bytes (parameters it owns, recursively), forward
    time (hooks, median of the steps), backward time (from the arrival of
    its output's gradient to that of its input's), activation bytes saved
    for backward inside it (act_fw), activations alive after its forward
    (act_total), gradients already accumulated when its backward starts
    (grad_total), input/output bytes. Every module that ran operations gets
    `sac_stats` from the aten operations recorded inside it (_module_ops;
    also nn.MultiheadAttention and work done in wrapped functions) and the
    recompute-vs-discard trade-off (_greedy_tradeoff, _fit_max_of_lines), so
    a module that keeps activations always has n_segments >= 1. The
    module's modes, buffers and the random number generator are restored.
    Raises ExportError when a training step of the model fails on the
    example inputs."""
    device = resolve_device(device)
    clock = _Clock(device, timing_budget_ms)
    inputs = _to_device(_to_inputs(example_inputs), device)
    modes = _save_modes(module)
    try:
        with _OnDevice(module, device), _Measuring(module, device):
            module.train()
            runs, steps_ms = [], []
            while len(runs) < max(1, timing_runs) and not clock.spent(steps_ms):
                runs.append(_Gatherer(module, clock))
                start = clock.now()
                _training_step(runs[-1], inputs)
                steps_ms.append((clock.now() - start) * 1e3)
            recorded = _Gatherer(module, clock, record_ops=True)
            _training_step(recorded, inputs)
    finally:
        _restore_modes(modes)
    rec = _mark_saved(recorded)
    g = runs[0]
    root_name = module.__class__.__name__

    def full(fqn):
        return root_name if fqn == "" else f"{root_name}.{fqn}"

    def median_of(attr, fqn):
        return statistics.median(getattr(r, attr).get(fqn, 0.0) for r in runs)

    def bw_ms(r, fqn):
        start = r.bw_start.get(fqn, r.bw_root_start if fqn == "" else None)
        end = r.bw_end.get(fqn, r.bw_root_end)
        if fqn == "":
            start, end = r.bw_root_start, r.bw_root_end
        return max(0.0, (end - start) * 1e3) if start is not None else 0.0

    modules = dict(module.named_modules())
    stats = []
    for fqn in g.fw_pre:
        mod = modules[fqn]
        param_bytes = sum(_tensor_bytes(p) for p in mod.parameters())
        is_leaf = next(mod.children(), None) is None
        entry = {
            "fqn": full(fqn),
            "param_per_module": param_bytes,
            "grad_per_module": param_bytes,
            "grad_total": g.grad_total.get(fqn, 0),
            "act_fw_per_module": max(0, sum(g.saved_by.get(fqn, {}).values())),
            "act_bw_per_module": sum(g.saved_by.get(fqn, {}).values()) + g.out_bytes.get(fqn, 0),
            "act_grad_per_module": g.out_bytes.get(fqn, 0),
            "act_total": g.act_total.get(fqn, 0),
            "input_per_module": g.in_bytes.get(fqn, 0),
            "output_per_module": g.out_bytes.get(fqn, 0),
            "fw_runtime_per_module": _round_ms(median_of("fw_ms", fqn)),
            "bw_runtime_per_module": _round_ms(statistics.median(bw_ms(r, fqn) for r in runs)),
            "is_leaf": is_leaf,
            "sac_runtime": 0.0, "sac_memory": 0, "n_segments": 0,
            "slopes": [], "intercepts": [], "breakpoints": [], "tradeoff_curve": {},
        }
        ops = _module_ops(rec, fqn)
        if ops["func_names"]:
            _add_tradeoff(entry, ops)
        stats.append(entry)
    order = [full(f) for f in g.fw_pre]
    post = [full(f) for f in g.fw_post]
    return {"mod_order": {"fw_pre_order": order, "fw_post_order": post,
                          "bw_pre_order": list(reversed(post)),
                          "bw_post_order": list(reversed(order))},
            "mod_stats": stats}


def _add_tradeoff(entry, ops):
    entry["sac_runtime"] = _round_ms(sum(ops["runtimes"]))
    entry["sac_memory"] = int(sum(ops["memory"]))
    entry["sac_stats"] = ops
    points = _greedy_tradeoff(ops)
    if not points:
        return
    delta = 1e-2  # as PyTorch: keys are shifted right by 1 %
    curve = {}
    for x, y in points:
        curve[f"{x + delta:.6g}"] = float(f"{y:.6g}")
    entry["tradeoff_curve"] = curve
    # PyTorch pairs each discard level with the next level's recompute time
    # (an upper bound of the step function) before fitting.
    xs = [x + delta for x, _ in points]
    ys = [y for _, y in points]
    shifted = list(zip(xs[:-1], ys[1:])) if len(points) > 1 else list(zip(xs, ys))
    if len(shifted) < 2:
        # one operation: any discard recomputes all of it, up to the end
        shifted.append((xs[-1], ys[-1]))
    n, slopes, intercepts, breaks = _fit_max_of_lines(shifted)
    entry["n_segments"] = n
    entry["slopes"] = [float(f"{s:.6g}") for s in slopes]
    entry["intercepts"] = [float(f"{c:.6g}") for c in intercepts]
    entry["breakpoints"] = [float(f"{b:.6g}") for b in breaks]


# ---------------------------------------------------------------------------
# Devices and sizes
# ---------------------------------------------------------------------------

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
          "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text):
    """'16GiB' -> 17179869184; '80GB' -> 80000000000; '1024' -> 1024."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a byte size: {text!r} (examples: 16GiB, 80GB, 1048576)")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0 or value != math.floor(value):
        raise ValueError(f"byte size must be a positive whole number of bytes: {text!r}")
    return int(value)


def parse_devices(spec, prefix="gpu"):
    """Device inventory from a spec: comma-separated items, each one of
    `SIZE`, `COUNTxSIZE`, `NAME=SIZE`, optionally followed by `@SPEED`.

    '4x16GiB' -> gpu0..gpu3 with 16 GiB; 'a100=80GiB,t4=16GiB@0.25' -> two
    named devices, the second 4x slower."""
    devices = []
    for item in str(spec).split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"empty device in {spec!r}")
        speed = None
        if "@" in item:
            item, speed_text = item.split("@", 1)
            try:
                speed = float(speed_text)
            except ValueError:
                raise ValueError(f"bad speed {speed_text!r} in {spec!r}") from None
            if not speed > 0:
                raise ValueError(f"speed must be > 0 in {spec!r}")
        name, count = None, 1
        if "=" in item:
            name, item = item.split("=", 1)
        else:
            m = re.fullmatch(r"([0-9]+)[xX](.+)", item)
            if m:
                count, item = int(m.group(1)), m.group(2)
                if count < 1:
                    raise ValueError(f"device count must be >= 1 in {spec!r}")
        size = parse_bytes(item)
        for _ in range(count):
            dev = {"name": name or f"{prefix}{len(devices)}", "memory_bytes": size}
            if speed is not None:
                dev["speed"] = speed
            devices.append(dev)
    names = [d["name"] for d in devices]
    if len(set(names)) != len(names):
        raise ValueError(f"device names must be unique: {names}")
    return devices


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

_DTYPES = {"float32": torch.float32, "float": torch.float32, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "float64": torch.float64,
           "int64": torch.int64, "long": torch.int64, "int32": torch.int32}


def parse_input(spec):
    """'1,3,224,224' -> a random float32 tensor; '1,128:int64' -> zeros."""
    shape_text, _, dtype_text = spec.partition(":")
    dtype = _DTYPES.get(dtype_text or "float32")
    if dtype is None:
        raise ValueError(f"unknown dtype {dtype_text!r} (one of {', '.join(_DTYPES)})")
    try:
        shape = [int(d) for d in shape_text.split(",")]
    except ValueError:
        raise ValueError(f"bad shape {shape_text!r}: comma-separated integers") from None
    if any(d < 1 for d in shape):
        raise ValueError(f"shape dimensions must be >= 1: {shape_text!r}")
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(dtype)
    return torch.zeros(*shape, dtype=dtype)


def load_model(spec, kwargs=None):
    """'package.module:factory' or 'path/to/file.py:factory' -> nn.Module.

    The factory is called with `kwargs` (torchvision models default to
    weights=None: random initialisation, nothing downloaded)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise ValueError(f"model must be MODULE:FACTORY, got {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        mod_spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        if mod_spec is None:
            raise ValueError(f"cannot load {module_name}")
        mod = importlib.util.module_from_spec(mod_spec)
        try:
            mod_spec.loader.exec_module(mod)
        except FileNotFoundError:
            raise ValueError(f"no such file: {module_name}") from None
        except Exception as e:  # the file's own error (syntax, imports, ...)
            raise ValueError(f"cannot load {module_name}: {_one_line(e)}") from e
    else:
        mod = importlib.import_module(module_name)
    factory = mod
    for atom in attr.split("."):
        factory = getattr(factory, atom)
    try:
        model = factory(**(kwargs or {}))
    except Exception as e:  # the factory's own error (bad kwargs, ...)
        raise ValueError(f"{spec} failed: {_one_line(e)}") from e
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"{spec} did not return an nn.Module")
    return model


def _options_from_args(args):
    options = {}
    if args.mode:
        options["mode"] = args.mode
    if args.transfer_rate is not None:
        options["transfer_bytes_per_sec"] = args.transfer_rate
    pipeline = {}
    if args.stages is not None:
        pipeline["stages"] = args.stages
    if args.balance_by:
        pipeline["balance_by"] = args.balance_by
    if args.cut_after:
        pipeline["cut_after"] = args.cut_after
    if args.schedule:
        pipeline["schedule"] = args.schedule
    if args.microbatches is not None:
        pipeline["microbatches"] = args.microbatches
    if args.param_factor is not None:
        pipeline["param_factor"] = args.param_factor
    if pipeline:
        options["pipeline"] = pipeline
    sac = {}
    if args.sac_budget:
        sac["memory_budget_bytes"] = parse_bytes(args.sac_budget)
    if args.sac_op_level:
        sac["op_level"] = True
    for key, value in (("world_size", args.sac_world_size), ("ac_units", args.sac_ac_unit),
                       ("fsdp_units", args.sac_fsdp_unit),
                       ("time_limit_ms", args.sac_time_limit_ms),
                       ("relative_gap", args.sac_relative_gap),
                       ("frontier_points", args.sac_frontier_points)):
        if value is not None:
            sac[key] = value
    if args.sac or sac:
        options["sac"] = sac
    training = {}
    for key in ("schedule", "virtual_stages", "microbatches", "stages", "device_order",
                "checkpoint", "unit_depth", "backward_factor", "weight_grad_fraction",
                "param_factor"):
        value = getattr(args, "training_" + key)
        if value is not None:
            training[key] = value
    if training:
        if args.mode != "training":
            raise ValueError("--training-* options need --mode training")
        options["training"] = training
    # each mode reads only its own options block (partd refuses the others)
    if args.mode == "training" and pipeline:
        raise ValueError("--stages, --balance-by, --cut-after, --schedule, --microbatches and "
                         "--param-factor set options.pipeline; with --mode training use "
                         "--training-stages, --training-schedule, --training-microbatches, "
                         "--training-param-factor")
    if args.mode not in (None, "pipeline", "training") and pipeline:
        raise ValueError("--stages, --balance-by, --cut-after, --schedule, --microbatches and "
                         f"--param-factor set options.pipeline, which --mode {args.mode} does "
                         "not read (only --mode pipeline does)")
    if args.mode not in (None, "pipeline", "size_based") and "sac" in options:
        raise ValueError(f"--sac and --sac-* set options.sac, which --mode {args.mode} does not "
                         "read (--mode pipeline and size_based do)"
                         + ("; training chooses what each stage recomputes "
                            "(--training-checkpoint)" if args.mode == "training" else ""))
    return options


def _training_stages(text):
    """--training-stages: 'auto' or an integer >= 1."""
    return text if text == "auto" else _at_least_1(text)


# torch.distributed.pipelining's schedule names (contract v3), and v2's
TRAINING_SCHEDULES = ("GPipe", "1F1B", "LoopedBFS", "Interleaved1F1B", "InterleavedZeroBubble",
                      "ZBVZeroBubble", "DualPipeV", "gpipe", "1f1b")


def _training_schedule(text):
    """--training-schedule: a name, NAME,NAME,... (a list) or auto."""
    if text == "auto":
        return text
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in TRAINING_SCHEDULES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown schedule {bad[0]!r} (one of "
                                         f"{', '.join(TRAINING_SCHEDULES[:7])}, or auto)")
    return names[0] if len(names) == 1 else names


def _virtual_stages(text):
    """--training-virtual-stages: 'auto' or an integer 1..8."""
    if text == "auto":
        return text
    value = _at_least_1(text)
    if value > 8:
        raise argparse.ArgumentTypeError(f"must be at most 8, got {value}")
    return value


def _fraction(text):
    value = _finite(text, 0, strict=False)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be at most 1, got {text}")
    return value


def _at_least_1(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _finite(text, low, strict):
    """argparse type: a finite number > low (strict) or >= low."""
    sign = ">" if strict else ">="
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number {sign} {low:g}, got {text!r}") from None
    if math.isinf(value) or not (value > low if strict else value >= low):
        raise argparse.ArgumentTypeError(f"must be {sign} {low:g}, got {text}")
    return value


def _positive(text):
    return _finite(text, 0, strict=True)


def _non_negative(text):
    return _finite(text, 0, strict=False)


def dumps(doc):
    """JSON text of a request or graph: indented, with one line per node, per
    module order list and per module's statistics."""
    graph = doc.get("graph", doc)
    compact = {}  # marker -> text replacing it
    saved = {}

    def mark(container, key, text):
        marker = f"\u0000partd-{len(compact)}\u0000"
        saved[marker] = (container, key, container[key])
        container[key] = marker
        compact[json.dumps(marker)] = text

    def lines(items, indent):
        pad = " " * indent
        body = ",\n".join(pad + json.dumps(x, separators=(",", ":")) for x in items)
        return "[\n" + body + "\n" + " " * (indent - 1) + "]"

    if isinstance(graph.get("nodes"), list):
        mark(graph, "nodes", lines(graph["nodes"], 3))
    modules = graph.get("modules")
    if isinstance(modules, dict):
        if isinstance(modules.get("mod_stats"), list):
            mark(modules, "mod_stats", lines(modules["mod_stats"], 4))
        order = modules.get("mod_order")
        if isinstance(order, dict):
            for key in list(order):
                mark(order, key, json.dumps(order[key], separators=(",", ":")))
    try:
        text = json.dumps(doc, indent=1)
    finally:
        for container, key, value in saved.values():
            container[key] = value
    for marker, replacement in compact.items():
        text = text.replace(marker, replacement)
    return text + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="partd-export",
        description="Export a PyTorch model as a partd request (torch.fx).")
    p.add_argument("model", help="MODULE:FACTORY or FILE.py:FACTORY, e.g. torchvision.models:resnet50")
    p.add_argument("--kwargs", default="{}", help="JSON object of factory arguments")
    p.add_argument("--input", action="append", required=True,
                   help="example input shape, e.g. 1,3,224,224 or 1,128:int64 (repeat for several)")
    p.add_argument("--devices", help="device inventory, e.g. 4x16GiB or a100=80GiB,t4=16GiB@0.25")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--graph-only", action="store_true", help="write only the graph object")
    p.add_argument("--name", help="graph name (default: the model class)")
    p.add_argument("--module-info", action="store_true", help="also gather graph.modules for options.sac")
    p.add_argument("--no-timing", action="store_true", help="write latency_ms 0 (reproducible output)")
    p.add_argument("--timing-runs", type=int, default=DEFAULT_TIMING_RUNS,
                   help="timed runs per node, forward and backward (the median is written; "
                        "default %(default)s)")
    p.add_argument("--timing-budget-ms", type=_non_negative, default=DEFAULT_TIMING_BUDGET_MS,
                   help="a node whose runs took this long is not run again (default "
                        "%(default)s; 0: always --timing-runs runs)")
    p.add_argument("--batch-size", type=_at_least_1,
                   help="graph.batch_size (default: the first dimension of the first input)")
    p.add_argument("--fx-sizes", action="store_true",
                   help="sizes exactly as torch.fx get_size_of_node (parameters only, no buffers)")
    p.add_argument("--no-shapes", action="store_true", help="leave out meta.shape/dtype")
    p.add_argument("--device", default="cpu",
                   help="where timing runs: cpu (default), cuda or cuda:N (synchronised); "
                        "an error when CUDA is not available")
    p.add_argument("--no-backward", action="store_true",
                   help="time forwards only (no backward_ms), as for every mode but "
                        "training")
    p.add_argument("--mode", choices=["pipeline", "size_based", "training", "cost_aware",
                                      "kl_based", "sparse_nn"])
    p.add_argument("--stages", type=int)
    p.add_argument("--balance-by", choices=["time", "memory", "params", "uniform"])
    p.add_argument("--cut-after", action="append", help="node name or module fqn (repeatable)")
    p.add_argument("--schedule", choices=["inference", "gpipe", "1f1b"])
    p.add_argument("--microbatches", type=int)
    p.add_argument("--param-factor", type=float)
    p.add_argument("--transfer-rate", type=float, help="bytes per second between devices")
    p.add_argument("--sac", action="store_true", help="add options.sac (needs --module-info)")
    p.add_argument("--sac-budget", help="options.sac.memory_budget_bytes, e.g. 2GiB")
    p.add_argument("--sac-op-level", action="store_true", help="options.sac.op_level")
    p.add_argument("--sac-world-size", type=int, help="options.sac.world_size")
    p.add_argument("--sac-ac-unit", action="append", help="options.sac.ac_units (repeatable)")
    p.add_argument("--sac-fsdp-unit", action="append", help="options.sac.fsdp_units (repeatable)")
    p.add_argument("--sac-time-limit-ms", type=float, help="options.sac.time_limit_ms")
    p.add_argument("--sac-relative-gap", type=float, help="options.sac.relative_gap")
    p.add_argument("--sac-frontier-points", type=int, help="options.sac.frontier_points")
    p.add_argument("--training-schedule", type=_training_schedule,
                   help="options.training.schedule (needs --mode training): "
                        f"{', '.join(TRAINING_SCHEDULES[:7])}, a comma-separated list, or auto")
    p.add_argument("--training-virtual-stages", type=_virtual_stages,
                   help="options.training.virtual_stages: 1..8 or auto")
    p.add_argument("--training-weight-grad-fraction", type=_fraction,
                   help="options.training.weight_grad_fraction (0..1)")
    p.add_argument("--training-microbatches", type=_at_least_1,
                   help="options.training.microbatches")
    p.add_argument("--training-stages", type=_training_stages,
                   help="options.training.stages: an integer or auto")
    p.add_argument("--training-device-order", choices=["given", "auto"],
                   help="options.training.device_order")
    p.add_argument("--training-checkpoint", choices=["never", "always", "except_last", "auto"],
                   help="options.training.checkpoint")
    p.add_argument("--training-unit-depth", type=_at_least_1,
                   help="options.training.unit_depth")
    p.add_argument("--training-backward-factor", type=_non_negative,
                   help="options.training.backward_factor")
    p.add_argument("--training-param-factor", type=_positive,
                   help="options.training.param_factor")
    args = p.parse_args(argv)
    try:
        kwargs = json.loads(args.kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("--kwargs must be a JSON object")
        if not args.graph_only and not args.devices:
            raise ValueError("--devices is required unless --graph-only")
        if args.timing_runs < 1:
            raise ValueError("--timing-runs must be >= 1")
        options = _options_from_args(args)
        if "sac" in options and not args.module_info:
            raise ValueError("options.sac needs --module-info")
        inputs = [parse_input(s) for s in args.input]
        devices = parse_devices(args.devices) if args.devices else None
        device = resolve_device(args.device)
        model = load_model(args.model, kwargs)
    except (ValueError, json.JSONDecodeError, ImportError, AttributeError) as e:
        print(f"partd-export: {e}", file=sys.stderr)
        return 2
    graph_kwargs = dict(name=args.name, timing=not args.no_timing,
                        timing_runs=args.timing_runs, fx_sizes=args.fx_sizes,
                        timing_budget_ms=args.timing_budget_ms,
                        module_info=args.module_info, shapes=not args.no_shapes,
                        device=device, batch_size=args.batch_size,
                        # only training reads backward times; a bare graph may go anywhere
                        backward=not args.no_backward and (args.graph_only or
                                                           args.mode == "training"))
    try:
        if args.graph_only:
            doc = export_graph(model, inputs, **graph_kwargs)
        else:
            doc = export_request(model, inputs, devices, options, **graph_kwargs)
    except ExportError as e:  # untraceable, or fails on the inputs: one line
        print(f"partd-export: {e}", file=sys.stderr)
        return 2
    if not args.no_timing and device.type == "cpu":
        print(f"partd-export: warning: {CPU_TIMING_WARNING}", file=sys.stderr)
    text = dumps(doc)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
