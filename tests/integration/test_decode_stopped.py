"""A request body whose decoding outlasts --request-timeout-s, or is under
way at SIGTERM, is stopped: the HTTP thread is freed, the stop is counted,
and the daemon shuts down cleanly."""
import http.client
import json
import os
import struct
import threading

from conftest import wait_until

BIG = str(1 << 50)  # --max-body-bytes and --max-inflight-bytes: no limit here


def zstd_strings(n_strings, string_bytes):
    """A zstd frame (RLE blocks, built by hand: a few bytes per 128 KiB)
    holding {"meta":{"s":["aaa...", ...]}}: n_strings strings of
    string_bytes each, far more text than can be decoded in seconds."""
    def block(kind, size, payload, last=0):
        return struct.pack("<I", last | kind << 1 | size << 3)[:3] + payload
    run = block(1, 1 << 17, b"a") * (string_bytes >> 17)
    parts = [block(0, 15, b'{"meta":{"s":["')]
    for i in range(n_strings):
        parts.append(run)
        if i < n_strings - 1:
            parts.append(block(0, 3, b'","'))
    parts.append(block(0, 4, b'"]}}', last=1))
    return b"\x28\xb5\x2f\xfd\x00\x38" + b"".join(parts)


def post_in_background(d, body):
    """POSTs body from a thread; the outcome goes to the returned dict:
    'status' and 'body', or 'error' when the connection was cut."""
    out = {}

    def run():
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=120)
        try:
            c.request("POST", "/v1/jobs", body=body,
                      headers={"Content-Type": "application/json",
                               "Content-Encoding": "zstd"})
            r = c.getresponse()
            out["status"], out["body"] = r.status, r.read()
        except OSError as e:
            out["error"] = e
        finally:
            c.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_decoding_past_the_request_timeout_is_stopped(make_daemon):
    d = make_daemon("--request-timeout-s", "1", "--max-body-bytes", BIG,
                    "--max-inflight-bytes", BIG)
    # 16 GiB of string text in 32 MiB strings, sent as 512 KiB.
    t, out = post_in_background(d, zstd_strings(512, 32 << 20))
    assert d.get("/livez").status == 200
    t.join(120)
    assert not t.is_alive(), "the POST was neither answered nor cut"
    if "status" in out:  # answered before the connection was cut
        assert out["status"] == 408, out
        assert json.loads(out["body"])["type"].endswith(":request-timeout"), out
    wait_until("the stopped decoding counted",
               lambda: d.metric("partd_http_decodes_stopped_total", 'reason="timeout"') == 1)
    d.wait_log(r"decode-stopped.*timeout")
    assert d.get("/livez").status == 200
    assert d.stop(timeout=60) == 0


def test_sigterm_stops_a_body_being_decoded(make_daemon):
    d = make_daemon("--max-body-bytes", BIG, "--max-inflight-bytes", BIG)
    idle = cpu_seconds(d.pid)
    # 256 GiB of string text: minutes of decoding were it not stopped.
    t, out = post_in_background(d, zstd_strings(4096, 64 << 20))
    # Decoding is under way once the daemon, idle before, is busy.
    wait_until("the body being decoded", lambda: cpu_seconds(d.pid) > idle + 0.5, 60)
    assert d.stop(timeout=60) == 0
    t.join(60)
    assert "error" in out or out.get("status") == 503, out
    if "status" in out:
        assert json.loads(out["body"])["type"].endswith(":request-cancelled"), out
    assert "decode-stopped" in d.log() and "shutdown" in d.log()
