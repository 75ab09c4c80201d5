"""A reference of mode training (contract v3, "Training mode"), written from
the contract's words and not from partd's C code: units, the figures of a
stage, the seven schedules' action lists, placement, conditions, the step
(every rank runs its list in order; an action starts when its rank ended
the previous one and its inputs are there) and each rank's memory read
from its order. The brute force (test_training_bruteforce.py) and the
schedule tables (test_training_schedules.py) use it.
"""

import itertools
import math

OPS = ("call_module", "call_function", "call_method")
SCHEDULES = ["GPipe", "1F1B", "LoopedBFS", "Interleaved1F1B", "InterleavedZeroBubble",
             "ZBVZeroBubble", "DualPipeV"]
ALIASES = {"gpipe": "GPipe", "1f1b": "1F1B"}


# -- the schedules ----------------------------------------------------------------

def fixed_v(name):
    """v of GPipe and 1F1B (1) and of the V schedules (2); None for the
    loop schedules, which take any v."""
    return {"GPipe": 1, "1F1B": 1, "ZBVZeroBubble": 2, "DualPipeV": 2}.get(name)


def allows(name, S, v, M):
    """The schedule's conditions on M, S and v."""
    if fixed_v(name) is not None and v != fixed_v(name):
        return False
    if name == "1F1B":
        return M >= S
    if name in ("Interleaved1F1B", "InterleavedZeroBubble"):
        return M % max(1, M // S) == 0
    if name == "DualPipeV":
        return M >= 2 * S
    return True


def rank_of(name, S, j):
    """Loop placement: j mod S; V placement: j mod S when j // S is even,
    else S - 1 - (j mod S)."""
    if name in ("ZBVZeroBubble", "DualPipeV") and (j // S) % 2 == 1:
        return S - 1 - j % S
    return j % S


def actions(name, S, v, M):
    """Each rank's list of (stage, kind, microbatch), in its order."""
    return [RANK_LIST[name](S, v, M, r) for r in range(S)]


def _gpipe(S, v, M, r):
    # F0..F(M-1), then B0..B(M-1)
    return [(r, "F", m) for m in range(M)] + [(r, "B", m) for m in range(M)]


def _one_f_one_b(S, v, M, r):
    # w = min(M, S - r) forwards, then B and F alternately until the
    # forwards run out, then the remaining backwards in microbatch order
    w = min(M, S - r)
    out = [(r, "F", m) for m in range(w)]
    b, f = 0, w
    while f < M:
        out += [(r, "B", b), (r, "F", f)]
        b, f = b + 1, f + 1
    return out + [(r, "B", m) for m in range(b, M)]


def _looped_bfs(S, v, M, r):
    # every microbatch's forward on the rank's first stage, then its
    # second, ...; then the backwards of its last stage for microbatches
    # M-1 down to 0, then of the stage before, ...
    mine = [k * S + r for k in range(v)]
    out = [(j, "F", m) for j in mine for m in range(M)]
    return out + [(j, "B", m) for j in reversed(mine) for m in reversed(range(M))]


def _interleaved(S, v, M, r, zero_bubble):
    R = max(1, M // S)
    G = M // R

    def mb(k):
        return (k // (G * v)) * G + k % G

    def fwd(k):  # the k-th forward: local stage (k // G) mod v
        return ((k // G) % v) * S + r, mb(k)

    def bwd(k):  # the k-th backward: local stage v - 1 - ((k // G) mod v)
        return (v - 1 - (k // G) % v) * S + r, mb(k)

    hops = (S - 1 - r) if zero_bubble else 2 * (S - 1 - r)
    w = min((v - 1) * G + hops, v * M)
    kind = "I" if zero_bubble else "B"
    out, Is = [], []
    for k in range(w):
        j, m = fwd(k)
        out.append((j, "F", m))

    def emit_backward(k):
        j, m = bwd(k)
        out.append((j, kind, m))
        Is.append((j, m))
        # right after its j-th I, rank r runs the W of its (j - r)-th I
        if zero_bubble and k >= r:
            out.append((Is[k - r][0], "W", Is[k - r][1]))

    k_f, k_b = w, 0
    while k_f < v * M:  # pairs (next forward, next backward)
        j, m = fwd(k_f)
        out.append((j, "F", m))
        k_f += 1
        emit_backward(k_b)
        k_b += 1
    while k_b < v * M:  # the remaining backwards
        emit_backward(k_b)
        k_b += 1
    if zero_bubble:  # the W's left over, in order
        done = max(0, v * M - r)
        out += [(j, "W", m) for j, m in Is[done:]]
    return out


def _zbv(S, v, M, r):
    c0, c1 = r, 2 * S - 1 - r
    N = max(2 * S - 1, M)
    out = []
    f = {c0: 0, c1: 0}
    b = {c0: 0, c1: 0}
    owed = {c0: [], c1: []}

    def F(c):
        out.append((c, "F", f[c]))
        f[c] += 1

    def I(c, w_now=True):  # each W right after its I unless said otherwise
        out.append((c, "I", b[c]))
        if w_now:
            out.append((c, "W", b[c]))
        else:
            owed[c].append(b[c])
        b[c] += 1

    for _ in range(2 * (S - r) - 1):
        F(c0)
    for _ in range(r):
        F(c1)
        F(c0)
    for _ in range(S - r):
        F(c1)
        I(c1)
    while f[c1] < f[c0] or f[c0] < N:
        if f[c0] < N:
            F(c0)
        I(c0)
        F(c1)
        I(c1)
    for _ in range(r):
        I(c0, False)
        I(c1, False)
    for _ in range(S - r):  # I(c0), then the W of c0's oldest I without one
        I(c0, False)
        out.append((c0, "W", owed[c0].pop(0)))
    out += [(c1, "W", m) for m in owed[c1]] + [(c0, "W", m) for m in owed[c0]]
    return [a for a in out if a[2] < M]  # drop every action of a microbatch >= M


def _dualpipev(S, v, M, r):
    s0, s1 = r, 2 * S - 1 - r
    out = []
    f = {s0: 0, s1: 0}
    b = {s0: 0, s1: 0}
    no_w = []  # I's without a W, oldest first

    def F(s):
        out.append((s, "F", f[s]))
        f[s] += 1

    def X(s, kind):
        out.append((s, kind, b[s]))
        if kind == "I":
            no_w.append((s, b[s]))
        b[s] += 1

    def W():  # a W always takes the oldest I that has no W yet
        s, m = no_w.pop(0)
        out.append((s, "W", m))

    for _ in range(2 * (S - r - 1)):
        F(s0)
    for _ in range(r + 1):
        F(s0)
        F(s1)
    for _ in range(S - r - 1):
        X(s1, "I")
        W()
        F(s1)
    for _ in range(M - 2 * S + r + 1):  # overlapped pairs as their F, then their B
        F(s0)
        X(s1, "B")
        F(s1)
        X(s0, "B")
    for _ in range(S - r - 1):
        X(s1, "B")
        F(s1)
        X(s0, "B")
    kind = "B"
    for i in range(r + 1):  # B until iteration (r + 1) // 2, I from then on
        if i == (r + 1) // 2 and r % 2 == 1:
            kind = "I"  # odd r: before that iteration's X(s1)
        X(s1, kind)
        if i == (r + 1) // 2 and r % 2 == 0:
            kind = "I"  # even r: between its X(s1) and X(s0)
        X(s0, kind)
    for _ in range(S - r - 1):
        W()
        X(s0, "I")
    for _ in range(r + 1):
        W()
    return out


RANK_LIST = {
    "GPipe": _gpipe,
    "1F1B": _one_f_one_b,
    "LoopedBFS": _looped_bfs,
    "Interleaved1F1B": lambda S, v, M, r: _interleaved(S, v, M, r, False),
    "InterleavedZeroBubble": lambda S, v, M, r: _interleaved(S, v, M, r, True),
    "ZBVZeroBubble": _zbv,
    "DualPipeV": _dualpipev,
}


def action_name(a):
    return f"{a[0]}{a[1]}{a[2]}"


# -- the step -------------------------------------------------------------------------

def simulate(lists, V, dur, delta):
    """Every action's end; dur(a) its duration, delta[j] the delay across the
    cut after stage j. Raises when a list waits forever."""
    end = {}
    bwd = {}  # (j, m) -> its B or I
    for l in lists:
        for a in l:
            if a[1] in "BI":
                bwd[(a[0], a[2])] = a
    ptr = [0] * len(lists)
    free = [0.0] * len(lists)
    left = sum(len(l) for l in lists)
    while left:
        progress = False
        for r, l in enumerate(lists):
            while ptr[r] < len(l):
                j, k, m = a = l[ptr[r]]
                if k == "F":
                    need = [] if j == 0 else [((j - 1, "F", m), delta[j - 1])]
                elif k in "BI":
                    need = [((j, "F", m), 0.0)]
                    if j < V - 1:
                        need.append((bwd[(j + 1, m)], delta[j]))
                else:
                    need = [((j, "I", m), 0.0)]
                if any(x not in end for x, _ in need):
                    break
                start = max([free[r]] + [end[x] + d for x, d in need])
                end[a] = free[r] = start + dur(a)
                ptr[r] += 1
                left -= 1
                progress = True
        if not progress:
            raise RuntimeError("a rank's list waits forever")
    return end


def memory_from_order(lst, held, transient, checkpointed, M, params):
    """A rank's memory: param_factor x parameters (params, a float) plus, for
    every (j, m) whose F has started and whose last backward (B, or W) has
    not ended, held(j, m); transient(j) on top while a B or I of a
    checkpointed microbatch runs; the peak, in whole bytes, and each stage's
    own peak of its held bytes."""
    cur, peak, own, own_peak = 0, 0, {}, {}
    for j, k, m in lst:
        if k == "F":
            cur += held(j, m)
            own[j] = own.get(j, 0) + held(j, m)
        extra = transient(j) if (k in "BI" and checkpointed(m)) else 0
        peak = max(peak, cur + extra)
        own_peak[j] = max(own_peak.get(j, 0), own.get(j, 0) + extra)
        if k in "BW":
            cur -= held(j, m)
            own[j] -= held(j, m)
    return whole_bytes(peak, params, M), own_peak


def whole_bytes(N, params, M):
    """N / M + params in whole bytes: N // M + ceil(params + (N % M) / M)."""
    return N // M + math.ceil(params + (N % M) / M)


# -- the graph -------------------------------------------------------------------------

class Graph:
    def __init__(self, req):
        self.req = req
        self.nodes = req["graph"]["nodes"]
        self.by = {n["name"]: n for n in self.nodes}
        self.devices = req["devices"]
        opts = req.get("options", {})
        t = opts.get("training", {})
        self.t = t
        self.rate = opts.get("transfer_bytes_per_sec", 1e10)
        self.M = t.get("microbatches", len(self.devices))
        self.bf = t.get("backward_factor", 2.0)
        self.pf = t.get("param_factor", 4.0)
        self.wf = t.get("weight_grad_fraction", 0.5)
        self.ckpt = t.get("checkpoint", "auto")
        self.order = t.get("device_order", "given")
        self.stages = t.get("stages", "auto")
        self.vs = t.get("virtual_stages", "auto")
        sched = t.get("schedule", "1F1B")
        if sched == "auto":
            self.schedules, self.named = list(SCHEDULES), False
        elif isinstance(sched, list):
            names = {ALIASES.get(s, s) for s in sched}
            self.schedules, self.named = [s for s in SCHEDULES if s in names], False
        else:
            self.schedules, self.named = [ALIASES.get(sched, sched)], True
        self.ops = [n for n in self.nodes if n["op"] in OPS]
        self.pos = {n["name"]: i for i, n in enumerate(self.ops)}
        self.readers = {n["name"]: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.get("inputs", []):
                self.readers[i].append(n["name"])
        d = t.get("unit_depth")
        self.depth = d if d is not None else self.default_depth()
        self.units, self.unit_names = self.make_units(self.depth)

    # units: maximal runs of operations with the same module prefix
    @staticmethod
    def key(node, d):
        m = node.get("module")
        return "" if m is None else ".".join(m.split(".")[:d])

    def runs(self, d):
        runs = []
        for n in self.ops:
            k = self.key(n, d)
            if runs and runs[-1][0] == k:
                runs[-1][1].append(n["name"])
            else:
                runs.append((k, [n["name"]]))
        return runs

    def default_depth(self):
        deepest = max([len(n["module"].split(".")) for n in self.ops if "module" in n],
                      default=0)
        for d in range(1, deepest + 1):
            if len(self.runs(d)) >= 2 * len(self.devices):
                return d
        return max(deepest, 1)

    def make_units(self, d):
        units, names, seen = [], [], {}
        for k, members in self.runs(d):
            base = k if k != "" else members[0]
            seen[base] = seen.get(base, 0) + 1
            names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
            units.append(members)
        return units, names

    # per node
    def f(self, n):
        return max(n.get("latency_ms", 0.0), n.get("mem_latency_ms", 0.0))

    def b(self, n):
        return n["backward_ms"] if "backward_ms" in n else self.bf * self.f(n)

    def holds_params(self, n):
        return bool(n.get("params")) or n.get("param_bytes", 0) > 0 or any(
            self.by[i]["op"] == "get_attr" for i in n.get("inputs", []))

    def w(self, n):
        if "weight_grad_ms" in n:
            return n["weight_grad_ms"]
        return self.wf * self.b(n) if self.holds_params(n) else 0.0

    def params(self, members):
        """Parameter bytes of a set of operations, a shared one once; a
        get_attr node they read counts as a parameter."""
        named, anon = {}, 0
        for name in members:
            n = self.by[name]
            if "params" in n:
                for p in n["params"]:
                    named[p["name"]] = p["bytes"]
            else:
                anon += n.get("param_bytes", 0)
        attrs = {i for name in members for i in self.by[name].get("inputs", [])
                 if self.by[i]["op"] == "get_attr"}
        for a in attrs:
            n = self.by[a]
            if "params" in n:
                for p in n["params"]:
                    named[p["name"]] = p["bytes"]
            else:
                anon += max(n.get("output_bytes", 0), n.get("param_bytes", 0))
        return anon + sum(named.values())

    def live(self, cut):
        """Bytes of every tensor live across the cut before unit `cut`:
        produced before it (placeholders included), read at or after it."""
        if cut <= 0 or cut >= len(self.units):
            return 0
        at = self.pos[self.units[cut][0]]
        total = 0
        for n in self.nodes:
            if n["op"] in OPS:
                born = self.pos[n["name"]]
            elif n["op"] == "placeholder":
                born = -1
            else:
                continue
            last = max([self.pos.get(r, len(self.ops)) for r in self.readers[n["name"]]],
                       default=-1)
            if born < at <= last:
                total += n.get("output_bytes", 0)
        return total

    def stage(self, a, b):
        """Speed-1, whole-batch figures of units [a, b), and, per unit of it,
        the bytes it discards when checkpointed."""
        members = [nm for u in range(a, b) for nm in self.units[u]]
        mset = set(members)
        out = {"f": sum(self.f(self.by[x]) for x in members),
               "b": sum(self.b(self.by[x]) for x in members),
               "w": sum(self.w(self.by[x]) for x in members),
               "act": sum(self.by[x].get("output_bytes", 0) for x in members),
               "params": self.params(members), "members": members}
        outside = {i for x in members for i in self.by[x].get("inputs", [])
                   if i not in mset and self.by[i]["op"] != "get_attr"}
        out["in"] = sum(self.by[i].get("output_bytes", 0) for i in outside)
        out["d"], out["uf"] = [], []
        for u in range(a, b):
            us = set(self.units[u])
            out["d"].append(sum(self.by[x].get("output_bytes", 0) for x in self.units[u]
                                if not any(r in mset and r not in us
                                           for r in self.readers[x])))
            out["uf"].append(sum(self.f(self.by[x]) for x in self.units[u]))
        return out

    def checkpoint_sets(self, a, b, fig):
        """(X as unit ids, R, D, T) for every set the mode allows."""
        n = b - a
        if self.ckpt == "never":
            return [((), 0.0, 0, 0)]
        if self.ckpt in ("always", "except_last"):
            # the whole stage as one unit: it discards everything
            return [(tuple(range(a, b)), fig["f"], fig["act"], fig["act"])]
        sets = []
        for k in range(n + 1):
            for X in itertools.combinations(range(n), k):
                sets.append((tuple(a + i for i in X), sum(fig["uf"][i] for i in X),
                             sum(fig["d"][i] for i in X), max([fig["d"][i] for i in X],
                                                              default=0)))
        return sets

    def c(self):
        """Microbatch m is checkpointed when m < c."""
        return {"auto": self.M, "always": self.M, "except_last": self.M - 1,
                "never": 0}[self.ckpt]
