#!/usr/bin/env python3
"""Resident size of the daemon under many distinct small jobs.

Starts `partd serve` (PARTD_BIN, default build/partd) with
--cache-max-bytes BENCH_CACHE_MIB MiB (default 8) and 2 workers, then
submits BENCH_JOBS (default 4000) distinct small jobs (chains of 20 nodes,
each graph named apart, so every one is planned and cached) from
BENCH_CLIENTS (default 4) threads, each job waited for and its result read
once. Prints the resident size before and after, the cap, what
partd_cache_bytes reports and how many results the cache holds. The
resident size should stay within the cap plus a working set that does not
grow with the number of jobs. Prints figures; asserts nothing about them;
exits non-zero only when it cannot measure.
"""
import os
import pathlib
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from partd_daemon import Daemon  # noqa: E402

MIB = 1024 * 1024


def request(k):
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 1000}]
    prev = "x"
    for i in range(20):
        nodes.append({"name": f"n{i}", "op": "call_module", "inputs": [prev],
                      "output_bytes": 100 + (i * 7 + k) % 900,
                      "param_bytes": 1000 + (i * 13 + k) % 5000, "latency_ms": 0.5})
        prev = f"n{i}"
    nodes.append({"name": "out", "op": "output", "inputs": [prev]})
    return {"graph": {"name": f"rss-{k}", "nodes": nodes},
            "devices": [{"name": f"d{d}", "memory_bytes": 200000} for d in range(2)]}


def main():
    jobs = int(os.environ.get("BENCH_JOBS", "4000"))
    clients = int(os.environ.get("BENCH_CLIENTS", "4"))
    cap = int(os.environ.get("BENCH_CACHE_MIB", "8")) * MIB
    with tempfile.TemporaryDirectory(prefix="partd-bench-rss-") as tmp:
        d = Daemon(pathlib.Path(tmp) / "data",
                   args=["--cache-max-bytes", str(cap), "--workers", "2"])
        d.start()
        try:
            before = d.rss_bytes()
            failures = []

            def client(first):
                for k in range(first, jobs, clients):
                    r = d.post_job(request(k))
                    if r.status not in (200, 201, 202):
                        failures.append(r)
                        return
                    job = d.wait_job(r.json()["id"], timeout=120)
                    if job["status"] != "succeeded" or \
                            d.get(f"/v1/jobs/{job['id']}/result").status != 200:
                        failures.append(job)
                        return

            threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if failures:
                print(f"cannot measure: {failures[0]!r}", file=sys.stderr)
                return 1
            after = d.rss_bytes()
            cached = d.metric("partd_cache_bytes")
            entries = d.metric("partd_cache_entries")
        finally:
            d.stop()
    print(f"{jobs} distinct small jobs, --cache-max-bytes {cap / MIB:.0f} MiB: "
          f"RSS {before / MIB:.1f} MiB before, {after / MIB:.1f} MiB after "
          f"(+{(after - before) / MIB:.1f} MiB); partd_cache_bytes {cached / MIB:.1f} MiB "
          f"in {entries:.0f} results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
