"""Content codings of result documents: negotiation, entity tags per
representation, 304s, 406, and coded forms that survive a restart."""
import gzip
import json
import re
import subprocess
import sys

import pytest

from conftest import chain_request, plan_offline
from conftest import ROOT

sys.path.insert(0, str(ROOT / "python"))
from partd import client as partd_client  # noqa: E402


def unzstd(data):
    """Decodes a zstd frame with Debian's zstd tool (Python 3.11 has none)."""
    out = subprocess.run(["zstd", "-d", "-c", "-q"], input=data, capture_output=True, check=True)
    return out.stdout


@pytest.fixture
def finished(daemon, tmp_path):
    """A succeeded job of a graph with repetitive names and its offline result."""
    doc = chain_request(400, seed=90)
    job = daemon.post_job(doc).json()
    assert daemon.wait_job(job["id"])["status"] == "succeeded"
    return f"/v1/jobs/{job['id']}/result", plan_offline(doc, tmp_path)


def fetch(daemon, path, accept, **headers):
    return daemon.get(path, headers={"Accept-Encoding": accept, **headers})


def test_gzip_form_decodes_to_the_document(daemon, finished):
    path, expected = finished
    plain = fetch(daemon, path, "identity")
    assert plain.header("Content-Encoding") is None
    assert plain.body == expected
    assert plain.header("Vary") == "Accept-Encoding"

    r = fetch(daemon, path, "gzip")
    assert r.status == 200
    assert r.header("Content-Encoding") == "gzip"
    assert r.header("Content-Type") == "application/json"
    assert r.header("Vary") == "Accept-Encoding"
    assert gzip.decompress(r.body) == expected
    assert len(r.body) * 2 < len(expected)
    # A strong tag of its own: the bytes differ from the document's.
    assert r.header("ETag") == plain.header("ETag")[:-1] + '-gzip"'
    assert re.fullmatch(r'"sha256:[0-9a-f]{64}-gzip"', r.header("ETag"))


def test_zstd_is_preferred_among_equals_and_decodes(daemon, finished):
    path, expected = finished
    for accept in ("zstd", "gzip, zstd", "*", "br;q=1, zstd;q=0.9, gzip;q=0.9"):
        r = fetch(daemon, path, accept)
        assert r.header("Content-Encoding") == "zstd", accept
        assert unzstd(r.body) == expected
        assert r.header("ETag").endswith('-zstd"')


@pytest.mark.parametrize("accept, coding", [
    ("gzip;q=1.0, zstd;q=0.5", "gzip"),
    ("x-gzip", "gzip"),
    ("GZIP", "gzip"),
    ("zstd;q=0, gzip;q=0.001", "gzip"),
    ("br", None),
    ("", None),
    ("gzip;q=0, zstd;q=0", None),
    ("gzip;q=2", None),          # an invalid weight drops the element
    ("*;q=0, identity", None),
    ("gzip; level=9", "gzip"),   # other parameters are ignored
])
def test_negotiation_follows_rfc_9110(daemon, finished, accept, coding):
    path, expected = finished
    r = fetch(daemon, path, accept)
    assert r.status == 200
    assert r.header("Content-Encoding") == coding
    if coding is None:
        assert r.body == expected


@pytest.mark.parametrize("accept", ["identity;q=0", "*;q=0", "br, identity;q=0"])
def test_nothing_acceptable_is_406(daemon, finished, accept):
    path, _ = finished
    r = fetch(daemon, path, accept)
    assert r.status == 406
    problem = r.json()
    assert r.header("Content-Type") == "application/problem+json"
    assert problem["status"] == 406 and "Accept-Encoding" in problem["detail"]


def test_conditional_requests_compare_the_selected_representation(daemon, finished):
    path, _ = finished
    plain_tag = fetch(daemon, path, "identity").header("ETag")
    gzip_tag = fetch(daemon, path, "gzip").header("ETag")
    hit = fetch(daemon, path, "gzip", **{"If-None-Match": gzip_tag})
    assert hit.status == 304 and hit.body == b""
    assert hit.header("ETag") == gzip_tag and hit.header("Vary") == "Accept-Encoding"
    # The client holds the document, but asks for gzip: a different
    # representation, so the full gzip form comes back.
    miss = fetch(daemon, path, "gzip", **{"If-None-Match": plain_tag})
    assert miss.status == 200 and miss.header("Content-Encoding") == "gzip"
    assert fetch(daemon, path, "identity", **{"If-None-Match": plain_tag}).status == 304


def test_coded_forms_are_stored_and_served_after_a_restart(make_daemon, tmp_path):
    d = make_daemon()
    doc = chain_request(300, seed=91)
    job = d.post_job(doc).json()
    assert d.wait_job(job["id"])["status"] == "succeeded"
    path = f"/v1/jobs/{job['id']}/result"
    before = {a: fetch(d, path, a) for a in ("gzip", "zstd")}
    assert d.stop() == 0
    d.start()  # empty cache: the forms come from the store
    for accept, old in before.items():
        new = fetch(d, path, accept)
        assert new.header("Content-Encoding") == accept
        assert new.body == old.body and new.header("ETag") == old.header("ETag")
    assert gzip.decompress(before["gzip"].body) == plan_offline(doc, tmp_path)
    assert json.loads(unzstd(before["zstd"].body)) == json.loads(plan_offline(doc, tmp_path))


# -- compressed request bodies -------------------------------------------------

def zstd_compress(data):
    out = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True)
    return out.stdout


def post_coded(d, body, coding, **headers):
    return d.post_job(body, headers={"Content-Encoding": coding, **headers})


@pytest.mark.parametrize("coding", ["gzip", "zstd", "x-gzip"])
def test_compressed_body_is_the_same_request(daemon, tmp_path, coding):
    doc = chain_request(200, seed=92)
    plain = json.dumps(doc).encode()
    body = zstd_compress(plain) if coding == "zstd" else gzip.compress(plain)
    r = post_coded(daemon, body, coding)
    assert r.status in (200, 202), r
    job = r.json()
    assert daemon.wait_job(job["id"])["status"] == "succeeded"
    assert daemon.get(f"/v1/jobs/{job['id']}/result").body == plan_offline(doc, tmp_path)
    # The same request uncompressed is the same plan: a cache hit.
    again = daemon.post_job(plain)
    assert again.status == 200 and again.json()["cache_key"] == job["cache_key"]


def test_idempotency_compares_decoded_bodies(daemon):
    plain = json.dumps(chain_request(50, seed=93)).encode()
    first = post_coded(daemon, gzip.compress(plain), "gzip", **{"Idempotency-Key": "k-93"})
    assert first.status in (200, 202)
    retry = daemon.post_job(plain, headers={"Idempotency-Key": "k-93"})
    assert retry.status in (200, 202) and retry.json()["id"] == first.json()["id"]


def test_decompression_bomb_is_413(make_daemon):
    d = make_daemon("--max-body-bytes", "100000")
    bomb = gzip.compress(b" " * 50_000_000)
    assert len(bomb) < 100_000
    r = post_coded(d, bomb, "gzip")
    assert r.status == 413
    assert "--max-body-bytes" in r.json()["detail"] and "gzip" in r.json()["detail"]
    # The daemon is unharmed and the limit is not off by one: a body of
    # exactly the limit decodes.
    doc = json.dumps(chain_request(5, seed=94)).encode()
    exact = doc + b" " * (100_000 - len(doc))
    ok = post_coded(d, zstd_compress(exact), "zstd")
    assert ok.status in (200, 202), ok
    over = post_coded(d, zstd_compress(exact + b" "), "zstd")
    assert over.status == 413


@pytest.mark.parametrize("coding, body", [
    ("gzip", b"{\"not\": \"gzip\"}"),
    ("zstd", b"\x28\xb5\x2f\xfd\x00\x00"),
    ("gzip", gzip.compress(json.dumps(chain_request(20, seed=95)).encode())[:-12]),
    ("gzip", b""),
])
def test_undecodable_body_is_400(daemon, coding, body):
    r = post_coded(daemon, body, coding)
    assert r.status == 400
    problem = r.json()
    assert problem["type"].endswith("undecodable-body") and coding in problem["detail"]


@pytest.mark.parametrize("coding", ["br", "deflate", "gzip, gzip", "compress"])
def test_unsupported_content_encoding_is_415(daemon, coding):
    body = gzip.compress(json.dumps(chain_request(5, seed=96)).encode())
    r = post_coded(daemon, body, coding)
    assert r.status == 415
    assert r.header("Accept-Encoding") == "zstd, gzip"
    assert r.json()["type"].endswith("unsupported-content-encoding")


def test_client_compresses_a_large_request_and_decodes_the_result(daemon, tmp_path):
    doc = chain_request(12_000, seed=97, slack=50.0)
    assert len(json.dumps(doc)) > partd_client.COMPRESS_BODY_BYTES
    c = partd_client.Client(f"http://{daemon.host}:{daemon.port}")
    job = c.wait(c.submit(doc), timeout=120)
    # The body went out gzip-compressed (over COMPRESS_BODY_BYTES): a daemon
    # that did not decode it would have answered 400.
    assert c.result_bytes(job["id"]) == plan_offline(doc, tmp_path)
