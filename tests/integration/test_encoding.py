"""Content codings of result documents: negotiation, entity tags per
representation, 304s, 406, and coded forms that survive a restart."""
import gzip
import json
import re
import subprocess

import pytest

from conftest import chain_request, plan_offline


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
