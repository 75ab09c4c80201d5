"""Clients that misbehave: slow senders, oversized, chunked, lying bodies."""
import http.client
import json
import socket
import threading
import time

from conftest import chain_request, wait_until


def raw(daemon, data, read=True, timeout=30):
    """Sends raw bytes on a fresh connection; returns what the server answers."""
    s = socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return s
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
            if b"\r\n\r\n" in b"".join(chunks) and b"Content-Length: " in b"".join(chunks):
                head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
        return b"".join(chunks)
    finally:
        if read:
            s.close()


def status_of(answer):
    return int(answer.split(b" ", 2)[1])


def test_content_length_over_the_cap_is_413_before_the_body(make_daemon):
    d = make_daemon("--max-body-bytes", "1000")
    head = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\n\r\n")
    answer = raw(d, head)  # not a byte of the body is sent
    assert status_of(answer) == 413
    assert b"application/problem+json" in answer
    small = chain_request(3)
    assert d.post_job(small).status == 202


def test_chunked_bodies_are_counted(make_daemon):
    d = make_daemon("--max-body-bytes", "4000")
    body = json.dumps(chain_request(3)).encode()
    assert len(body) < 4000

    def chunks(data, size=100):
        for i in range(0, len(data), size):
            yield data[i:i + size]

    c = d.conn()
    c.request("POST", "/v1/jobs", body=chunks(body), encode_chunked=True,
              headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    r = c.getresponse()
    assert r.status == 202, r.read()
    r.read()
    big = json.dumps(chain_request(200)).encode()
    assert len(big) > 4000
    # Raw, so that the answer can be read even though the server stops
    # reading the body once it is over the cap.
    head = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(head)
    try:
        for piece in chunks(big, 500):
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered and closed early
    answer = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            answer += b
    except OSError:
        pass
    s.close()
    assert status_of(answer) == 413, answer
    assert b'"status":413' in answer
    assert d.get("/livez").status == 200


def test_body_shorter_than_its_content_length_is_cut_off(make_daemon):
    d = make_daemon("--request-timeout-s", "1", "--conn-timeout-s", "2")
    body = json.dumps(chain_request(3)).encode()
    head = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (len(body) + 500))
    answer = raw(d, head + body)  # the server waits for 500 more bytes, then gives up
    assert b"202" not in answer[:20]
    assert d.get("/livez").status == 200
    assert d.get("/v1/jobs").json()["jobs"] == []


def test_slow_header_sender_is_cut_off_while_others_are_served(make_daemon):
    d = make_daemon("--header-timeout-s", "1", "--conn-timeout-s", "30")
    closed = threading.Event()
    sent = []

    def slowloris():
        s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
        data = b"GET /livez HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 1000
        try:
            for byte in data:
                s.send(bytes([byte]))
                sent.append(byte)
                time.sleep(0.1)  # the client's pace, not a synchronisation
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        break
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
        except OSError:
            pass
        finally:
            closed.set()
            s.close()

    t = threading.Thread(target=slowloris)
    t.start()
    served = 0
    while not closed.is_set():
        assert d.get("/livez").status == 200
        served += 1
        assert served < 100000
    t.join()
    assert served > 0
    assert len(sent) < 200, "the slow client was not cut off"
    d.wait_log("too slow sending a request")
    assert d.get("/livez").status == 200


def test_per_ip_connection_limit(make_daemon):
    d = make_daemon("--max-connections-per-ip", "4")

    def open_served():
        """A kept-alive connection whose request was answered: proof that the
        daemon accepted (and counts) it. None when the daemon closed it, as it
        does while connections of earlier requests are still counted."""
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        s.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while not got.endswith(b'{"status":"ok"}\n'):
            try:
                chunk = s.recv(4096)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                s.close()
                return None
            got += chunk
        return s

    held = [wait_until("a connection within the limit to be served", open_served, timeout=10)
            for _ in range(4)]
    try:
        extra = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        extra.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            got = extra.recv(100)
        except ConnectionResetError:
            got = b""
        assert got == b""  # refused: closed without an answer
        extra.close()
    finally:
        for s in held:
            s.close()
    # Once they are gone, new connections are served again.
    deadline = time.monotonic() + 30
    while True:
        try:
            if d.get("/livez").status == 200:
                break
        except (ConnectionError, http.client.HTTPException):
            pass
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_garbage_request_lines(make_daemon):
    daemon = make_daemon("--header-timeout-s", "1")
    # libmicrohttpd answers 400 or just closes; either way nothing else breaks.
    for junk in [b"GARBAGE\r\n\r\n",
                 b"GET /livez HTTP/1.1\r\nHost: x\r\nX-A: " + b"b" * 200000 + b"\r\n\r\n",
                 b"GET /livez HTTP/9.9\r\n\r\n",
                 b"\x00\x01\x02\r\n\r\n"]:
        try:
            answer = raw(daemon, junk)
        except OSError:
            answer = b""
        assert answer == b"" or 400 <= status_of(answer) < 600, answer[:100]
    assert daemon.get("/livez").status == 200


def test_inflight_body_budget_refuses_more_uploads(make_daemon):
    d = make_daemon("--max-inflight-bytes", "10000", "--max-body-bytes", "8000")
    head = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 7000\r\n\r\n")
    hold = raw(d, head + b"{", read=False)  # holds 7001 bytes of budget
    # Wait until the daemon has seen the held request (its headers are in).
    deadline = time.monotonic() + 30
    while True:
        # A complete request: if it got in before the held one, it is just
        # a 400 (not JSON), and the loop tries again.
        answer = raw(d, head.replace(b"7000", b"5000") + b" " * 5000)
        if status_of(answer) == 503:
            break
        assert time.monotonic() < deadline, answer[:200]
    assert b"Retry-After" in answer
    hold.close()
    small = json.dumps(chain_request(3)).encode()
    deadline = time.monotonic() + 30
    while d.post_job(small).status != 202:
        assert time.monotonic() < deadline


def wide_boundaries_request(live=2000, stages=64):
    """Small request, large result: `live` tensors made at the start and read
    only at the end are listed at every one of the stage boundaries."""
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 8}]
    for i in range(live):
        nodes.append({"name": f"t{i}", "op": "call_function", "inputs": ["x"],
                      "output_bytes": 8, "latency_ms": 1})
    prev = "x"
    for i in range(stages * 2):
        nodes.append({"name": f"s{i}", "op": "call_function", "inputs": [prev],
                      "output_bytes": 8, "latency_ms": 50})
        prev = f"s{i}"
    nodes.append({"name": "sink", "op": "call_function",
                  "inputs": [prev] + [f"t{i}" for i in range(live)], "output_bytes": 8})
    nodes.append({"name": "out", "op": "output", "inputs": ["sink"]})
    return {"graph": {"nodes": nodes},
            "devices": [{"name": f"d{i}", "memory_bytes": 10 ** 9} for i in range(stages)],
            "options": {"mode": "pipeline"}}


def test_full_store_fails_the_job_clearly_and_keeps_what_is_stored(make_daemon, tmp_path):
    doc = wide_boundaries_request()
    body = json.dumps(doc).encode()
    from conftest import plan_offline
    result = plan_offline(doc, tmp_path)
    cap = 2 * len(body) + 200_000
    assert len(result) > cap
    d = make_daemon("--store-max-bytes", str(cap))
    small = chain_request(5, seed=90)
    ok = d.post_job(small).json()
    assert d.wait_job(ok["id"])["status"] == "succeeded"
    before = d.get(f"/v1/jobs/{ok['id']}/result").body

    r = d.post_job(body)
    assert r.status == 202, r
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "failed"
    assert job["error"]["type"].endswith("store-unavailable")
    assert job["error"]["status"] == 503
    assert d.get(f"/v1/jobs/{job['id']}/result").status == 503
    d.wait_log("finishing jobs failed")
    # What was stored before is intact and the daemon keeps serving.
    assert d.get(f"/v1/jobs/{ok['id']}/result").body == before
    again = d.post_job(chain_request(6, seed=91))
    assert again.status == 202
    assert d.wait_job(again.json()["id"])["status"] == "succeeded"
    assert d.stop() == 0


def test_http11_without_host_is_400_and_http10_is_served(daemon):
    # RFC 9112 section 3.2: a server must answer 400 to an HTTP/1.1 request
    # that lacks Host; HTTP/1.0 had no such rule.
    answer = raw(daemon, b"GET /livez HTTP/1.1\r\n\r\n")
    assert status_of(answer) == 400, answer[:200]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/problem+json" in head
    assert json.loads(body)["type"].endswith("missing-host")
    assert status_of(raw(daemon, b"GET /livez HTTP/1.0\r\n\r\n")) == 200
