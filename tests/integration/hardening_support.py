"""Request documents of the hostile-client and fault tests (the daemon
fixture and `wait_until` are tests/support/partd_daemon.py's, re-exported
here for these tests)."""
from conftest import PARTD_BIN, wait_until  # noqa: F401


def chain_request(n_ops, seed=0, devices=2, mode="pipeline", name=None):
    """A chain x -> n0 -> ... -> out that fits `devices` devices."""
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 1000}]
    prev = "x"
    for i in range(n_ops):
        nodes.append({"name": f"n{i}", "op": "call_module", "inputs": [prev],
                      "output_bytes": 100 + (i * 7 + seed) % 900,
                      "param_bytes": 1000 + (i * 13 + seed) % 5000,
                      "latency_ms": 0.1 + ((i + seed) % 10) / 10})
        prev = f"n{i}"
    nodes.append({"name": "out", "op": "output", "inputs": [prev]})
    mem = 8000 * n_ops // devices + 100000
    return {"graph": {"name": name or f"chain{n_ops}-{seed}", "nodes": nodes},
            "devices": [{"name": f"d{k}", "memory_bytes": mem} for k in range(devices)],
            "options": {"mode": mode}}
