"""Start-up, crash recovery, drain, store failures, auth, TLS, healthcheck."""
import http.client
import json
import os
import signal
import sqlite3
import ssl
import subprocess

import pytest

from conftest import PARTD_BIN, Daemon, chain_request, plan_offline
from partd_daemon import ON_POSTGRESQL, sqlite_only

def running(d, job_id):
    return d.wait_job(job_id, statuses=("running", "succeeded", "failed", "cancelled"))


@pytest.mark.slow
def test_kill9_then_restart_completes_every_accepted_job(make_daemon, medium_body, tmp_path):
    d = make_daemon("--workers", "1")
    done_doc = chain_request(12, seed=30)
    done = d.post_job(done_doc).json()
    assert d.wait_job(done["id"])["status"] == "succeeded"
    before = d.get(f"/v1/jobs/{done['id']}/result")

    big = d.post_job(medium_body).json()
    # One worker, first come first served: these wait behind the big job.
    small_docs = [chain_request(15 + i, seed=40 + i) for i in range(5)]
    small = [d.post_job(doc).json() for doc in small_docs]
    assert running(d, big["id"])["status"] == "running"
    assert all(d.get(f"/v1/jobs/{j['id']}").json()["status"] == "queued" for j in small)
    d.kill9()

    d.start()  # same data directory
    if not ON_POSTGRESQL:  # there the store is the queue: nothing to queue again
        assert "recovered_jobs=6" in d.log()
    for job, doc in zip(small, small_docs):
        assert d.wait_job(job["id"])["status"] == "succeeded"
        assert d.get(f"/v1/jobs/{job['id']}/result").body == plan_offline(doc, tmp_path)
    assert d.wait_job(big["id"])["status"] == "succeeded"
    assert d.get(f"/v1/jobs/{big['id']}/result").body == plan_offline(medium_body, tmp_path)
    # Finished before the crash: served exactly as before.
    after = d.get(f"/v1/jobs/{done['id']}/result")
    assert after.body == before.body and after.header("ETag") == before.header("ETag")
    assert d.stop() == 0


@pytest.mark.slow
def test_sigterm_drains_and_exits_zero(make_daemon, medium_body, tmp_path):
    d = make_daemon("--workers", "1", "--shutdown-grace-ms", "600000")
    big = d.post_job(medium_body).json()
    assert running(d, big["id"])["status"] == "running"
    queued_doc = chain_request(10, seed=50)
    queued = d.post_job(queued_doc).json()
    assert d.stop(signal.SIGTERM) == 0
    log = d.log()
    assert "SIGTERM received" in log and "drained" in log
    # The running job finished within the grace period; the queued one was
    # left queued and runs after the next start.
    d.start()
    assert d.get(f"/v1/jobs/{big['id']}").json()["status"] == "succeeded"
    assert d.wait_job(queued["id"])["status"] == "succeeded"
    assert d.get(f"/v1/jobs/{queued['id']}/result").body == plan_offline(queued_doc, tmp_path)
    assert d.stop(signal.SIGINT) == 0


@pytest.mark.slow
def test_sigterm_grace_over_leaves_running_job_queued(make_daemon, medium_body, tmp_path):
    d = make_daemon("--workers", "1", "--shutdown-grace-ms", "0")
    big = d.post_job(medium_body).json()
    assert running(d, big["id"])["status"] == "running"
    assert d.stop(signal.SIGTERM) == 0
    d.start()
    job = d.wait_job(big["id"])
    assert job["status"] == "succeeded"
    assert d.stop() == 0


def expect_start_failure(tmp_path, data_dir, code, words):
    d = Daemon(data_dir)
    rc = d.start(expect_exit=True)
    assert rc == code, d.log()
    assert words in d.log()


@sqlite_only
def test_corrupt_store_is_refused_with_exit_1(tmp_path):
    data = tmp_path / "corrupt"
    data.mkdir()
    (data / "partd.db").write_bytes(b"this is not an sqlite database" * 1000)
    expect_start_failure(tmp_path, data, 1, "store")
    # Untouched: never silently replaced.
    assert (data / "partd.db").read_bytes().startswith(b"this is not")


@sqlite_only
def test_empty_store_file_is_refused_with_exit_1(tmp_path):
    data = tmp_path / "empty"
    data.mkdir()
    (data / "partd.db").write_bytes(b"")
    expect_start_failure(tmp_path, data, 1, "empty file, not a partd store")
    assert (data / "partd.db").read_bytes() == b""  # not turned into a new store


@sqlite_only
def test_foreign_database_is_refused(tmp_path):
    data = tmp_path / "foreign"
    data.mkdir()
    con = sqlite3.connect(data / "partd.db")
    con.execute("create table customers (id integer)")
    con.commit()
    con.close()
    expect_start_failure(tmp_path, data, 1, "not a partd store")


@sqlite_only
def test_unwritable_data_dir_exits_73(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    expect_start_failure(tmp_path, blocker / "sub", 73, "cannot create the data directory")
    data = tmp_path / "dbdir"
    (data / "partd.db").mkdir(parents=True)
    expect_start_failure(tmp_path, data, 73, "store")


def test_one_daemon_per_data_directory(make_daemon, tmp_path):
    data = tmp_path / "shared"
    first = make_daemon(data_dir=data)
    second = make_daemon(data_dir=data, start=False)
    assert second.start(expect_exit=True) == 1, second.log()
    assert str(data) in second.log(), second.log()
    assert f"pid {first.proc.pid}" in second.log(), second.log()
    # The first one is untouched and still serves; once it is gone the
    # directory is free again.
    r = first.post_job(chain_request(8, seed=60))
    assert first.wait_job(r.json()["id"])["status"] == "succeeded"
    assert first.stop() == 0
    second.start()
    assert second.job(r.json()["id"])["status"] == "succeeded"


@sqlite_only  # damages the row in the SQLite file (test_store.c does it on both stores)
def test_a_damaged_stored_result_is_never_served(make_daemon):
    d = make_daemon()
    doc = chain_request(12, seed=70)
    job = d.wait_job(d.post_job(doc).json()["id"])
    good = d.get(f"/v1/jobs/{job['id']}/result")
    assert good.status == 200
    assert d.stop() == 0
    # One byte of the stored document changes between restarts.
    db = sqlite3.connect(os.path.join(d.data_dir, "partd.db"))
    (body,) = db.execute("SELECT body FROM results").fetchone()
    damaged = body.replace(b'"summary"', b'"summarY"', 1)
    assert damaged != body
    db.execute("UPDATE results SET body = ?", (damaged,))
    db.commit()
    db.close()

    d.start()
    r = d.get(f"/v1/jobs/{job['id']}/result")
    assert r.status == 500, r
    assert r.json()["type"].endswith("result-damaged")
    assert r.header("ETag") is None
    d.wait_log("does not match its hash")  # log lines may trail the answer
    # Not a cache hit: submitted again it is planned anew, and the plan
    # replaces the damaged copy.
    again = d.post_job(doc)
    assert again.status == 202, again
    assert d.wait_job(again.json()["id"])["status"] == "succeeded"
    for job_id in (job["id"], again.json()["id"]):
        r = d.get(f"/v1/jobs/{job_id}/result")
        assert r.status == 200 and r.body == good.body
        assert r.header("ETag") == good.header("ETag")


def test_bad_flags_exit_64(tmp_path):
    p = subprocess.run([PARTD_BIN, "serve", "--workers", "zero"], capture_output=True, text=True)
    assert p.returncode == 64 and "--workers" in p.stderr
    p = subprocess.run([PARTD_BIN, "serve", "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    for flag in ["--listen", "--data-dir", "--workers", "--queue-max", "--max-body-bytes",
                 "--max-model-bytes", "--job-timeout-ms", "--cache-max-bytes",
                 "--retention-hours", "--token-file", "--tls-cert", "--tls-key",
                 "--log-format", "--shutdown-grace-ms", "PARTD_LISTEN"]:
        assert flag in p.stdout, flag
    env = dict(os.environ, PARTD_QUEUE_MAX="-3")
    p = subprocess.run([PARTD_BIN, "serve"], capture_output=True, text=True, env=env)
    assert p.returncode == 64 and "PARTD_QUEUE_MAX" in p.stderr


def test_token_auth(make_daemon, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-0123456789\n")
    d = make_daemon("--token-file", str(token_file))
    doc = chain_request(5)
    r = d.post_job(doc)
    assert r.status == 401 and r.header("WWW-Authenticate").startswith("Bearer")
    assert d.get("/v1/jobs").status == 401
    assert d.get("/v1/jobs", headers={"Authorization": "Bearer wrong"}).status == 401
    assert d.get("/v1/jobs", headers={"Authorization": "Basic czNjcmV0"}).status == 401
    assert d.get("/v1/jobs/" + "0" * 32, headers={"Authorization": "Bearer s3cret-token-012345678"}).status == 401
    d.token = "s3cret-token-0123456789"
    r = d.post_job(doc)
    assert r.status == 202
    assert d.wait_job(r.json()["id"])["status"] == "succeeded"
    d.token = None
    for path in ["/livez", "/readyz", "/metrics", "/version"]:
        assert d.get(path).status == 200, path


def test_tls(make_daemon, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    d = make_daemon("--tls-cert", str(cert), "--tls-key", str(key))
    ctx = ssl.create_default_context(cafile=str(cert))
    c = http.client.HTTPSConnection("127.0.0.1", d.port, context=ctx, timeout=30)
    c.request("GET", "/livez")
    r = c.getresponse()
    assert r.status == 200 and json.loads(r.read())["status"] == "ok"
    c.request("POST", "/v1/jobs", body=json.dumps(chain_request(5)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 202
    r.read()
    c.close()
    # Plain HTTP to the TLS port gets no HTTP answer.
    plain = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
        plain.request("GET", "/livez")
        plain.getresponse()


def test_healthcheck(daemon):
    url = f"http://127.0.0.1:{daemon.port}/livez"
    assert subprocess.run([PARTD_BIN, "healthcheck", "--url", url]).returncode == 0
    bad = f"http://127.0.0.1:{daemon.port}/nope"
    assert subprocess.run([PARTD_BIN, "healthcheck", "--url", bad],
                          capture_output=True).returncode == 1
    env = dict(os.environ, PARTD_LISTEN=f"127.0.0.1:{daemon.port}")
    assert subprocess.run([PARTD_BIN, "healthcheck"], env=env).returncode == 0
    for base in (f"http://127.0.0.1:{daemon.port}", f"http://127.0.0.1:{daemon.port}/"):
        assert subprocess.run([PARTD_BIN, "healthcheck", "--url", base]).returncode == 0, base
    daemon.stop()
    assert subprocess.run([PARTD_BIN, "healthcheck", "--url", url, "--timeout-ms", "2000"],
                          capture_output=True).returncode == 1
    assert subprocess.run([PARTD_BIN, "healthcheck", "--url", "ftp://x"],
                          capture_output=True).returncode == 2


def test_json_logs(make_daemon):
    d = make_daemon("--log-format", "json")
    d.get("/livez")
    d.wait_log(r'"event":"request".*"path":"/livez"')
    records = [json.loads(line) for line in d.lines if line.startswith("{")]
    assert any(r["event"] == "listening" for r in records)
    req = [r for r in records if r["event"] == "request" and r["path"] == "/livez"]
    assert req and req[-1]["status"] == 200 and req[-1]["method"] == "GET"


def test_systemd_notifications(make_daemon, tmp_path):
    import socket
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    d = make_daemon(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
    seen = []

    def until(word):
        while not any(word in m for m in seen):
            seen.append(sock.recv(4096).decode())

    until("READY=1")
    assert any("STATUS=listening on" in m for m in seen)
    until("WATCHDOG=1")  # every 100 ms, from the loop thread
    assert d.stop() == 0
    until("STOPPING=1")
    sock.close()


def test_ipv6_listen(make_daemon):
    if not socket_has_ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    d = make_daemon("--listen", "[::1]:0")
    assert d.host == "::1"
    assert d.get("/livez").status == 200
    r = d.post_job(chain_request(4))
    assert r.status == 202
    assert d.wait_job(r.json()["id"])["status"] == "succeeded"


def socket_has_ipv6_loopback():
    import socket
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False
