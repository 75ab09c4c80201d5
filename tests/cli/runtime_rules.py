"""The rules each runtime applies to what `partd export` writes, written
here from the runtimes' own sources (Debian's torch 1.13 has no
torch.distributed.pipelining, and torchtitan, Megatron-LM, DeepSpeed and
fairscale are not installed), so that the export tests check the files
against the runtime and not against partd:

- PyTorch, torch/distributed/pipelining/schedules.py: _Action.from_str,
  PipelineScheduleMulti._load_csv (csv.reader, one row per rank),
  _validate_schedule, _add_send_recv (the compute-only order lowered to
  sends and receives; it must not stall), _utils.generate_stage_to_rank_mapping,
  and the orders of the schedule classes (Schedule1F1B, ScheduleGPipe,
  ScheduleLoopedBFS, _get_1f1b_rank_ops with _get_warmup_ops for
  ScheduleInterleaved1F1B and ScheduleInterleavedZeroBubble,
  ScheduleZBVZeroBubble, ScheduleDualPipeV), without their None padding.
- torchtitan, torchtitan/config/job_config.py (Parallelism,
  ActivationCheckpoint, Training) and distributed/pipeline_parallel.py
  (build_pipeline_schedule, pipeline_module_split).
- Megatron-Core, megatron/core/transformer/pipeline_parallel_layer_layout.py
  (parse_str_to_list, the 1D -> 2D layout, validate_layer_layout).
- DeepSpeed, deepspeed/runtime/pipe/module.py (parts, stage_owner).
- fairscale, fairscale/nn/pipe/pipe.py (check_balance, the checkpoint modes).
"""
import csv
import io
import re

# ---- PyTorch ------------------------------------------------------------

ACTION = re.compile(r"(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)")
COMPUTE = {"F", "B", "I", "W"}


def action_from_str(cell):
    """(stage, kind, microbatch), or None for an empty cell; raises as
    _Action.from_str does on anything else."""
    cell = cell.strip()
    if cell == "":
        return None
    m = ACTION.match(cell)
    if not m:
        raise RuntimeError("Invalid action string: %s" % cell)
    stage, kind, mb = m.groups()
    return (int(stage), kind, int(mb) if mb else None)


def load_csv(text):
    """PipelineScheduleMulti._load_csv: row r is rank r's actions."""
    return {rank: [action_from_str(c) for c in row]
            for rank, row in enumerate(csv.reader(io.StringIO(text, newline="")))}


def validate_schedule(actions, pp_group_size, num_stages, num_microbatches):
    """_validate_schedule; returns the stage -> rank mapping it infers."""
    assert len(actions) == pp_group_size, "Schedule has incorrect number of ranks"
    for rank in range(pp_group_size):
        assert rank in actions, "Schedule is missing actions for rank %d" % rank
    seen = {s: {k: set() for k in "FBIW"} for s in range(num_stages)}
    owner = {}
    for rank in actions:
        for step, a in enumerate(actions[rank]):
            if a is None:
                continue
            s, kind, mb = a
            assert kind in COMPUTE, "compute-only schedule holds %r" % (a,)
            if kind in "BI":
                assert mb in seen[s]["F"], "rank %d step %d: %r before its forward" % (rank, step, a)
            if kind == "W":
                assert mb in seen[s]["I"], "rank %d step %d: %r before its I" % (rank, step, a)
            seen[s][kind].add(mb)
            assert owner.setdefault(s, rank) == rank, "stage %d on two ranks" % s
    for s, k in seen.items():
        f, b, i, w = (len(k[x]) for x in "FBIW")
        assert f == num_microbatches, "stage %d: %d F, expected %d" % (s, f, num_microbatches)
        assert i == w, "stage %d: I and W counts differ" % s
        assert b + (i + w) // 2 == num_microbatches, "stage %d: %d backwards" % (s, b + i)
    return owner


def add_send_recv(actions, stage_to_rank, num_stages):
    """_add_send_recv's walk: ranks in turn, each running its next action
    when what it receives has been sent; raises on a stall."""
    todo = {r: [a for a in l if a is not None] for r, l in actions.items()}
    prev = {r: set() for r in todo}
    while todo:
        progress = False
        for rank in sorted(todo):
            s, kind, mb = todo[rank][0]
            if kind == "F" and s != 0:
                ready = ("RECV_F", s, mb) in prev[rank] or (s - 1, "F", mb) in prev[rank]
            elif kind in "BI" and s != num_stages - 1:
                ready = (("RECV_B", s, mb) in prev[rank] or (s + 1, "I", mb) in prev[rank]
                         or (s + 1, "B", mb) in prev[rank])
            else:
                ready = True
            if not ready:
                continue
            prev[rank].add((s, kind, mb))
            if kind == "F" and s != num_stages - 1 and stage_to_rank[s + 1] != rank:
                prev[stage_to_rank[s + 1]].add(("RECV_F", s + 1, mb))
            if kind in "BI" and s != 0 and stage_to_rank[s - 1] != rank:
                prev[stage_to_rank[s - 1]].add(("RECV_B", s - 1, mb))
            todo[rank].pop(0)
            if not todo[rank]:
                del todo[rank]
            progress = True
        assert progress, "Malformed compute schedule, can't schedule sends/recvs"


def check_schedule_csv(text, pp_group_size, num_stages, num_microbatches):
    """What _PipelineScheduleRuntime._load_csv(format="compute_only") does
    with a file: read, validate, lower. Returns (actions, stage -> rank)."""
    actions = load_csv(text)
    owner = validate_schedule(actions, pp_group_size, num_stages, num_microbatches)
    add_send_recv(actions, owner, num_stages)
    return actions, owner


def stage_to_rank(pp, num_stages, style):
    """_utils.generate_stage_to_rank_mapping."""
    if style == "loop":
        return {s: s % pp for s in range(num_stages)}
    return {s: (s % pp if (s // pp) % 2 == 0 else pp - 1 - s % pp) for s in range(num_stages)}


def style_of(name):
    return "v" if name.lower() in ("zbvzerobubble", "dualpipev") else "loop"


def _order_1f1b(pp, r, m):
    warm = min(m, pp - r)
    out, f = [(r, "F", i) for i in range(warm)], warm
    for b in range(m):
        out.append((r, "B", b))
        if f < m:
            out.append((r, "F", f))
            f += 1
    return out


def _order_interleaved(pp, v, r, m, zero_bubble):
    rounds = max(1, m // pp)
    assert m % rounds == 0
    per_round = m // rounds
    warm = min((v - 1) * per_round + (1 if zero_bubble else 2) * (pp - 1 - r), m * v)
    ops = v * m
    fwd, bwd, wgt = [0] * v, [0] * v, [0] * v
    out, backward_ops, w_done = [], [], 0

    def f_stage(op):
        return (op // per_round) % v

    def b_stage(op):
        return v - 1 - ((op - warm) // per_round) % v

    def weight():
        nonlocal w_done
        local = b_stage(backward_ops[w_done])
        out.append((local * pp + r, "W", wgt[local]))
        wgt[local] += 1
        w_done += 1

    for op in range(warm + ops):
        if op < ops:
            local = f_stage(op)
            out.append((local * pp + r, "F", fwd[local]))
            fwd[local] += 1
        if op < warm:
            continue
        local = b_stage(op)
        out.append((local * pp + r, "I" if zero_bubble else "B", bwd[local]))
        bwd[local] += 1
        backward_ops.append(op)
        if zero_bubble and op - warm >= r:
            weight()
    while zero_bubble and w_done < len(backward_ops):
        weight()
    return out


def _order_zbv(pp, r, m):
    n = max(2 * pp - 1, m)
    c0, c1 = r, 2 * pp - 1 - r
    f, b = {c0: 0, c1: 0}, {c0: 0, c1: 0}
    out = []

    def fw(c):
        out.append((c, "F", f[c]))
        f[c] += 1

    def iw(c):
        out.extend([(c, "I", b[c]), (c, "W", b[c])])
        b[c] += 1

    for _ in range(2 * (pp - r) - 1):
        fw(c0)
    for _ in range(r):
        fw(c1)
        fw(c0)
    for _ in range(pp - r):
        fw(c1)
        iw(c1)
    while f[c1] < f[c0] or f[c0] < n:
        if f[c0] < n:
            fw(c0)
        iw(c0)
        fw(c1)
        iw(c1)
    w = dict(b)
    for _ in range(r):
        for c in (c0, c1):
            out.append((c, "I", b[c]))
            b[c] += 1
    for _ in range(pp - r):
        out.extend([(c0, "I", b[c0]), (c0, "W", w[c0])])
        b[c0] += 1
        w[c0] += 1
    for c in (c1, c0):
        while w[c] < b[c]:
            out.append((c, "W", w[c]))
            w[c] += 1
    return [a for a in out if a[2] < m]


def _order_dualpipev(pp, r, m):
    s0, s1 = r, 2 * pp - 1 - r
    f, i, queue, out = {s0: 0, s1: 0}, {s0: 0, s1: 0}, [], []

    def fw(s):
        out.append((s, "F", f[s]))
        f[s] += 1

    def back(s, split):
        out.append((s, "I" if split else "B", i[s]))
        if split:
            queue.append((s, i[s]))
        i[s] += 1

    def weight():
        if queue:
            s, mb = queue.pop(0)
            out.append((s, "W", mb))

    for _ in range(2 * (pp - r - 1)):
        fw(s0)
    for _ in range(r + 1):
        fw(s0)
        fw(s1)
    for _ in range(pp - r - 1):
        back(s1, True)
        weight()
        fw(s1)
    for _ in range(m - 2 * pp + r + 1):
        fw(s0)
        back(s1, False)
        fw(s1)
        back(s0, False)
    for _ in range(pp - r - 1):
        back(s1, False)
        fw(s1)
        back(s0, False)
    zb = False
    for k in range(r + 1):
        if k == (r + 1) // 2 and r % 2 == 1:
            zb = True
        back(s1, zb)
        if k == (r + 1) // 2 and r % 2 == 0:
            zb = True
        back(s0, zb)
    for _ in range(pp - r - 1):
        weight()
        back(s0, zb)
    for _ in range(r + 1):
        weight()
    return out


def class_order(name, pp, v, m, rank):
    """The compute actions rank runs under PyTorch's class `name`."""
    key = name.lower()
    if key == "gpipe":
        return [(rank, "F", i) for i in range(m)] + [(rank, "B", i) for i in range(m)]
    if key == "1f1b":
        return _order_1f1b(pp, rank, m)
    if key == "loopedbfs":
        stages = [l * pp + rank for l in range(v)]
        return ([(s, "F", i) for s in stages for i in range(m)]
                + [(s, "B", i) for s in reversed(stages) for i in reversed(range(m))])
    if key == "interleaved1f1b":
        return _order_interleaved(pp, v, rank, m, False)
    if key == "interleavedzerobubble":
        return _order_interleaved(pp, v, rank, m, True)
    if key == "zbvzerobubble":
        return _order_zbv(pp, rank, m)
    if key == "dualpipev":
        return _order_dualpipev(pp, rank, m)
    raise ValueError(name)


def action_str(a):
    return "%d%s%d" % a


# ---- torchtitan -------------------------------------------------------------

# job_config.py's dataclass fields the export may set, by table.
TORCHTITAN_KEYS = {
    "parallelism": {"pipeline_parallel_degree", "module_fqns_per_model_part",
                    "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv",
                    "pipeline_parallel_microbatch_size"},
    "training": {"local_batch_size"},
    "activation_checkpoint": {"mode"},
}


def check_torchtitan(cfg, unit_names):
    """The config as torchtitan reads it: known keys only; a module list per
    stage whose names are units of the plan, divisible over the ranks
    (pipeline_module_split), kept as top-level children or entries of a
    top-level container; n_microbatches as build_pipeline_schedule derives
    it. Returns (stages per rank, n_microbatches)."""
    for table, keys in cfg.items():
        assert table in TORCHTITAN_KEYS, table
        assert set(keys) <= TORCHTITAN_KEYS[table], (table, set(keys) - TORCHTITAN_KEYS[table])
    par = cfg["parallelism"]
    parts = par["module_fqns_per_model_part"]
    degree = par["pipeline_parallel_degree"]
    assert len(parts) % degree == 0
    for part in parts:
        assert part, "an empty model part"
        for name in part:
            assert name in unit_names, name
            assert name.count(".") <= 1, name
    names = [n for part in parts for n in part]
    assert len(names) == len(set(names)), "a module in two model parts"
    assert cfg["activation_checkpoint"]["mode"] in ("none", "selective", "full")
    batch = cfg["training"]["local_batch_size"]
    mbs = par["pipeline_parallel_microbatch_size"]
    assert batch % mbs == 0
    per_rank = len(parts) // degree
    if style_of(par["pipeline_parallel_schedule"]) == "v":
        assert per_rank == 2, "v schedules assume 2 stages per rank"
    return per_rank, batch // mbs


# ---- Megatron-Core ----------------------------------------------------------

def megatron_parse_layout(layout):
    """PipelineParallelLayerLayout.parse_str_to_list."""
    layout = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        layout = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), layout)
    kinds = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}
    stages = []
    for stage in layout.split("|"):
        stages.append([])
        for ch in stage:
            assert ch in kinds, "Invalid layer character: %s" % ch
            stages[-1].append(kinds[ch])
    return stages


def megatron_layout(layout, pp, num_layers):
    """PipelineParallelLayerLayout(layout, pp) and validate_layer_layout:
    returns layout[pp_rank][vpp_rank]."""
    stages = megatron_parse_layout(layout)
    assert len(stages) % pp == 0, "layout must be divisible by pipeline_model_parallel_size"
    vpp = len(stages) // pp
    grid = [[stages[v * pp + r] for v in range(vpp)] for r in range(pp)]
    flat = [t for v in range(vpp) for r in range(pp) for t in grid[r][v]]
    assert flat[0] == "embedding", "The first layer must be embedding"
    assert flat[-1] == "loss", "The last layer must be loss"
    assert flat.count("embedding") == 1 and flat.count("loss") == 1
    assert flat.count("decoder") == num_layers, "decoder layers must match num_layers"
    return grid


def megatron_args(text):
    """The arguments as shlex reads the file (comments dropped) -> dict."""
    import shlex
    words = shlex.split(text, comments=True)
    args, i = {}, 0
    while i < len(words):
        assert words[i].startswith("--"), words[i]
        args[words[i]] = words[i + 1]
        i += 2
    return args


# ---- DeepSpeed and fairscale -----------------------------------------------

def deepspeed_stage_owner(parts, num_stages, layer_idx):
    """PipelineModule.stage_owner."""
    for stage in range(num_stages):
        if parts[stage] <= layer_idx < parts[stage + 1]:
            return stage
    raise RuntimeError("Layer %d not owned? parts=%s" % (layer_idx, parts))


def fairscale_check_balance(n_layers, balance):
    """pipe.py check_balance."""
    assert n_layers == sum(balance), "module and sum of balance have different length"
    assert all(x > 0 for x in balance), "all balance numbers must be positive integer"
