"""The console (GET /) and the plan's picture (GET /v1/jobs/{id}/plan.svg)
against the real daemon, the console loaded in headless Chromium (Debian's
`chromium` and `chromedriver`, driven over WebDriver: tests/support/browser.py).

The browser tests are skipped, saying why, only when Chromium or chromedriver
is not installed (`apt-get install chromium chromium-driver`; CI installs
them). The HTTP tests of plan.svg and of the page's headers need no browser.
"""
import json
import re
import subprocess
import sys
import pathlib
import xml.etree.ElementTree as ET

import pytest

from conftest import PARTD_BIN, chain_request, wait_until

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from browser import Browser, chromium_missing, png_pixels  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
TOKEN = "console-token-5b1f0c"


# -- helpers -------------------------------------------------------------------

def pipeline_doc(seed, n_ops=30, devices=3):
    return chain_request(n_ops, seed=seed, devices=devices, mode="pipeline")


def infeasible_doc(seed):
    """Valid, but no split fits: the job fails in planning (not a 422)."""
    doc = chain_request(10, seed=seed, devices=2, mode="pipeline")
    for dev in doc["devices"]:
        dev["memory_bytes"] = 5000
    return doc


def submit_and_wait(d, doc):
    r = d.post_job(doc)
    assert r.status in (200, 202), r
    return d.wait_job(r.json()["id"])


def show(result_bytes, *args):
    """What `partd show` makes of a result document."""
    p = subprocess.run([PARTD_BIN, "show", "-", *args], input=result_bytes, capture_output=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def assert_problem(r, status, slug):
    assert r.status == status, r
    assert r.header("Content-Type") == "application/problem+json"
    doc = r.json()
    assert doc["status"] == status and doc["type"].endswith(slug), doc
    return doc


def colored_pixels(png):
    """Pixels that are neither white nor grey: the bars and blocks drawn."""
    _, _, rows = png_pixels(png)
    return sum(1 for row in rows for (r, g, b) in row if max(r, g, b) - min(r, g, b) > 40)


def training_result(stages, microbatches, schedule):
    """A training result as the contract describes it (the training planner
    is not needed to draw one: `partd show` reads the document alone)."""
    parts = []
    for s in range(stages):
        f = 1.0 + 0.25 * (s % 3)
        rc = 0.5 * f if s % 2 == 0 else 0.0
        parts.append({
            "id": s, "device": f"gpu{s}", "logical_ids": [s], "nodes": [f"n{s}"],
            "memory_bytes": (3 + s % 4) << 30, "device_memory_bytes": 8 << 30,
            "param_bytes": 1 << 29, "compute_ms": 3 * f * microbatches,
            "transfer_in_bytes": (1 << 26) if s else 0, "time_ms": 3 * f + rc + 0.25,
            "inputs": [], "outputs": [], "parents": [s - 1] if s else [],
            "children": [s + 1] if s + 1 < stages else [],
            "units": [f"layers.{3 * s + k}" for k in range(3)],
            "checkpointed": [f"layers.{3 * s}"] if rc else [],
            "in_flight": min(microbatches, stages - s) if schedule == "1f1b" else microbatches,
            "forward_ms": f, "backward_ms": 2 * f, "recompute_ms": rc, "comm_ms": 0.25})
    times = [p["time_ms"] for p in parts]
    step = sum(times) + (microbatches - 1) * max(times)
    return {"mode": "training", "partitions": parts, "balance": [1] * stages,
            "boundaries": [], "tied_params": [],
            "summary": {"partitions": stages, "bottleneck_ms": max(times), "total_ms": step,
                        "transfer_bytes": 0, "peak_memory_bytes": 6 << 30, "optimal": True,
                        "step_ms": step,
                        "bubble_fraction": 1 - microbatches * sum(times) / (stages * step),
                        "stages": stages, "microbatches": microbatches, "schedule": schedule,
                        "checkpoint": "auto", "unit_depth": 2}}


def schedule_order(schedule, s, stages, m):
    """The order of (kind, microbatch) blocks on stage s, as the contract
    defines gpipe and 1f1b."""
    if schedule == "gpipe":
        return [("fwd", i) for i in range(m)] + [("bwd", i) for i in range(m)]
    warm = min(m, stages - s)
    order = [("fwd", i) for i in range(warm)]
    f, b = warm, 0
    while b < m:
        order.append(("bwd", b))
        b += 1
        if f < m:
            order.append(("fwd", f))
            f += 1
    return order


# -- fixtures -------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    missing = chromium_missing()
    if missing:
        pytest.skip(f"the console's browser tests need headless Chromium: {missing}")
    b = Browser()
    yield b
    b.close()


def js_wait(browser, what, script, timeout=30):
    return wait_until(what, lambda: browser.script(script), timeout=timeout, interval=0.05)


def csp_violations(browser):
    return [e["message"] for e in browser.log() if "Content Security Policy" in e["message"]]


# -- the page over HTTP ---------------------------------------------------------

def test_page_is_self_contained_with_a_strict_policy(daemon):
    for method in ("GET", "HEAD"):
        r = daemon.request(method, "/")
        assert r.status == 200
        assert r.header("Content-Type") == "text/html; charset=utf-8"
        assert r.header("X-Content-Type-Options") == "nosniff"
        assert r.header("Referrer-Policy") == "no-referrer"
        csp = r.header("Content-Security-Policy")
        directives = dict((d.split(" ", 1) + [""])[:2] for d in csp.split("; "))
        assert directives["default-src"] == "'none'"
        assert directives["connect-src"] == "'self'"
        assert directives["frame-ancestors"] == "'none'"
        assert directives["base-uri"] == "'none'" and directives["form-action"] == "'none'"
        for name in ("script-src", "style-src"):
            sources = directives[name].split()
            assert len(sources) == 1 and re.fullmatch(r"'sha256-[A-Za-z0-9+/]{43}='", sources[0])
        assert "unsafe" not in csp and "http" not in csp and "*" not in csp
    page = daemon.get("/").body.decode()
    # Every reference stays on the page or this origin; nothing from another host.
    refs = re.findall(r"""\b(?:src|href|action)\s*=\s*["']([^"']*)["']""", page)
    assert refs and all(ref.startswith("#") or ref == "data:," for ref in refs), refs
    assert "url(" not in page and "@import" not in page and "<iframe" not in page
    assert re.findall(r"https?://[^'\"\s]*", page) == ["http://www.w3.org/2000/svg"]
    # Answered without a token even when one is configured (it holds no data).
    assert daemon.metric("partd_http_requests_total",
                         'method="GET",route="/",code="200"') >= 1


# -- plan.svg over HTTP ---------------------------------------------------------

def test_plan_svg_codes_bytes_and_etag(make_daemon, tmp_path, slow_body):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    d = make_daemon("--workers", "1", "--token-file", str(token_file))
    d.token = TOKEN
    done = submit_and_wait(d, pipeline_doc(seed=21, n_ops=60, devices=4))
    assert done["status"] == "succeeded"
    path = f"/v1/jobs/{done['id']}/plan.svg"

    assert d.get(path, auth=False).status == 401
    r = d.get(path)
    assert r.status == 200, r
    assert r.header("Content-Type") == "image/svg+xml"
    assert r.header("X-Content-Type-Options") == "nosniff"
    assert "sandbox" in r.header("Content-Security-Policy")
    result = d.get(f"/v1/jobs/{done['id']}/result")
    assert r.body == show(result.body)  # the very bytes of `partd show`
    etag = r.header("ETag")
    assert etag == result.header("ETag")[:-1] + '-svg"'
    again = d.get(path, headers={"If-None-Match": etag})
    assert again.status == 304 and again.body == b"" and again.header("ETag") == etag
    assert d.get(path, headers={"If-None-Match": result.header("ETag")}).status == 200
    head = d.request("HEAD", path)
    assert head.status == 200 and head.body == b""
    # The same result under another job (a cache hit) has the same picture.
    cached = d.post_job(pipeline_doc(seed=21, n_ops=60, devices=4))
    assert cached.status == 200 and cached.json()["cached"] is True
    other = d.get(f"/v1/jobs/{cached.json()['id']}/plan.svg")
    assert other.body == r.body and other.header("ETag") == etag

    assert_problem(d.get("/v1/jobs/" + "0" * 32 + "/plan.svg"), 404, "not-found")
    failed = submit_and_wait(d, infeasible_doc(seed=22))
    assert failed["status"] == "failed"
    assert_problem(d.get(f"/v1/jobs/{failed['id']}/plan.svg"), 409, "job-failed")

    # Running, queued, then cancelled: 409 each time.
    big = d.post_job(slow_body).json()["id"]
    d.wait_job(big, statuses=("running",))
    queued = d.post_job(pipeline_doc(seed=23)).json()["id"]
    assert d.job(queued)["status"] == "queued"
    for job_id in (big, queued):
        p = assert_problem(d.get(f"/v1/jobs/{job_id}/plan.svg"), 409, "job-not-finished")
        assert d.get(f"/v1/jobs/{job_id}/plan.svg").header("Retry-After") == "1"
        assert job_id in p["detail"]
    for job_id in (queued, big):
        assert d.request("DELETE", f"/v1/jobs/{job_id}").status == 200
        assert_problem(d.get(f"/v1/jobs/{job_id}/plan.svg"), 409, "job-cancelled")
    assert d.metric("partd_http_requests_total",
                    'method="GET",route="/v1/jobs/{id}/plan.svg",code="304"') == 1


def test_plan_svg_structure_of_a_pipeline(daemon):
    done = submit_and_wait(daemon, pipeline_doc(seed=31, n_ops=80, devices=4))
    svg = daemon.get(f"/v1/jobs/{done['id']}/plan.svg").body
    root = ET.fromstring(svg)
    assert root.tag == SVG_NS + "svg"
    for el in root.iter():
        assert el.tag not in (SVG_NS + "script", SVG_NS + "foreignObject")
        assert not any("href" in name or name.startswith("on") for name in el.attrib)
    texts = " ".join("".join(t.itertext()) for t in root.iter(SVG_NS + "text"))
    for dev in ("gpu0", "gpu1", "gpu2", "gpu3"):
        assert dev in texts
    assert "ms" in texts and ("MiB" in texts or "KiB" in texts or "GiB" in texts)


# -- the console in Chromium ----------------------------------------------------

def test_console_lists_jobs_submits_and_shows_the_picture(make_daemon, browser, tmp_path):
    d = make_daemon()
    jobs = [submit_and_wait(d, pipeline_doc(seed=s)) for s in (41, 42)]
    jobs.append(submit_and_wait(d, infeasible_doc(seed=43)))
    assert [j["status"] for j in jobs] == ["succeeded", "succeeded", "failed"]

    browser.get(d.url + "/")
    rows = js_wait(browser, "the job list shows three jobs", """
        const rows = document.querySelectorAll('#jobs-body tr');
        return rows.length === 3 && Array.from(rows).map(r => [r.dataset.jobId, r.dataset.status,
            r.querySelector('.status').textContent, r.innerText]);""")
    assert [r[0] for r in rows] == [j["id"] for j in reversed(jobs)]  # newest first
    for (job_id, status, badge, text), job in zip(rows, reversed(jobs)):
        assert status == badge == job["status"]
        if job["status"] == "succeeded":
            assert str(job["summary"]["partitions"]) in text and " ms" in text

    # Submit a request file through the form: the job appears with its status.
    req = tmp_path / "request.json"
    req.write_text(json.dumps(pipeline_doc(seed=44, n_ops=50)))
    browser.type("#request-file", str(req))
    browser.click("#submit-button")
    new_id = js_wait(browser, "the form names the new job", """
        const a = document.querySelector('#submit-message a');
        return a && a.textContent;""")
    assert re.fullmatch(r"[0-9a-f]{32}", new_id)
    assert d.wait_job(new_id)["status"] == "succeeded"
    js_wait(browser, "the new job is listed as succeeded", f"""
        const r = document.querySelector('#jobs-body tr[data-job-id="{new_id}"]');
        return r && r.dataset.status === 'succeeded';""")

    # An invalid request: the problem document's errors with their pointers.
    bad = pipeline_doc(seed=45)
    bad["graph"]["nodes"][2]["inputs"] = ["nowhere"]
    req.write_text(json.dumps(bad))
    browser.type("#request-file", str(req))
    browser.click("#submit-button")
    shown = js_wait(browser, "the form shows the 422", """
        const p = document.querySelector('#submit-message .problem');
        return p && p.innerText;""")
    assert "422" in shown and "/graph/nodes/2/inputs/0" in shown

    # The job view: its summary and its picture, inline as <svg>.
    browser.get(f"{d.url}/#/jobs/{new_id}")
    n_rects = js_wait(browser, "the job view shows the plan's <svg>", """
        const svg = document.querySelector('#picture > svg');
        return svg && svg.querySelectorAll('rect').length;""")
    served = ET.fromstring(d.get(f"/v1/jobs/{new_id}/plan.svg").body)
    assert n_rects == len(list(served.iter(SVG_NS + "rect")))
    texts = browser.script("""return Array.from(document.querySelectorAll('#picture > svg text'))
        .map(t => t.textContent);""")
    assert texts == ["".join(t.itertext()) for t in served.iter(SVG_NS + "text")]
    summary = browser.script("return document.getElementById('job-summary').innerText")
    assert "partitions" in summary and "bottleneck" in summary
    # The picture's own style reaches it (a title in bold, 16 px).
    assert browser.script("""const t = document.querySelector('#picture svg .title');
        return getComputedStyle(t).fontSize;""") == "16px"
    assert colored_pixels(browser.screenshot("#picture > svg")) > 2000

    # A failed job's view shows its problem and no picture.
    browser.get(f"{d.url}/#/jobs/{jobs[2]['id']}")
    problem = js_wait(browser, "the failed job's problem", """
        const p = document.querySelector('#job-problem .problem');
        return p && p.innerText;""")
    assert "No feasible plan" in problem
    assert browser.script("return document.getElementById('picture-card').hidden") is True
    assert csp_violations(browser) == []


def test_console_refreshes_while_a_job_runs(make_daemon, browser, slow_body):
    d = make_daemon("--workers", "1")
    big = d.post_job(slow_body).json()["id"]
    d.wait_job(big, statuses=("running",))
    browser.get(d.url + "/")
    js_wait(browser, "the running job", f"""
        const r = document.querySelector('#jobs-body tr[data-job-id="{big}"]');
        return r && r.dataset.status === 'running';""")
    assert "refreshing" in browser.script("return document.getElementById('list-note').textContent")
    # A job submitted elsewhere appears, and the cancelled one changes,
    # without a reload.
    small = d.post_job(pipeline_doc(seed=61)).json()["id"]
    js_wait(browser, "the job submitted meanwhile", f"""
        return !!document.querySelector('#jobs-body tr[data-job-id="{small}"]');""")
    assert d.request("DELETE", f"/v1/jobs/{big}").status == 200
    js_wait(browser, "the list follows the job to cancelled", f"""
        const r = document.querySelector('#jobs-body tr[data-job-id="{big}"]');
        return r && r.dataset.status === 'cancelled';""")
    assert d.wait_job(small)["status"] == "succeeded"
    js_wait(browser, "the other job to succeeded", f"""
        const r = document.querySelector('#jobs-body tr[data-job-id="{small}"]');
        return r && r.dataset.status === 'succeeded';""")


def test_console_with_a_token_shows_nothing_without_it(make_daemon, browser, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    d = make_daemon("--token-file", str(token_file))
    d.token = TOKEN
    job = submit_and_wait(d, pipeline_doc(seed=51))
    secrets = [job["id"], job["graph_hash"][7:], job["cache_key"][7:]]

    page = d.get("/", auth=False)
    assert page.status == 200
    assert not any(s in page.body.decode() for s in secrets)

    browser.get(d.url + "/")
    js_wait(browser, "the console asks for the token",
            "return !document.getElementById('login').hidden")
    dom = browser.page_source()
    assert not any(s in dom for s in secrets)
    assert browser.script("return document.getElementById('app').hidden") is True
    assert browser.script("return document.querySelectorAll('#jobs-body tr').length") == 0

    # A wrong token is refused and shows nothing either.
    browser.type("#token", "wrong-token")
    browser.click("#login-form button")
    js_wait(browser, "the refusal", """
        return document.getElementById('login-message').textContent.includes('refused')""")
    assert not any(s in browser.page_source() for s in secrets)

    # The right token: the list appears, the token is kept for this tab only.
    browser.type("#token", TOKEN)
    browser.click("#login-form button")
    js_wait(browser, "the list after the token", f"""
        const r = document.querySelector('#jobs-body tr[data-job-id="{job['id']}"]');
        return r && r.dataset.status === 'succeeded';""")
    assert browser.script("return sessionStorage.getItem('partd.token')") == TOKEN
    assert browser.script("return localStorage.length") == 0
    assert browser.script("return document.cookie") == ""

    # The job view with the token: the picture comes over the bearer token.
    browser.get(f"{d.url}/#/jobs/{job['id']}")
    js_wait(browser, "the picture", "return !!document.querySelector('#picture > svg')")

    # Another tab starts without the token, and sees nothing.
    first = browser.cmd("GET", "/window")
    tab = browser.cmd("POST", "/window/new", {"type": "tab"})["handle"]
    browser.cmd("POST", "/window", {"handle": tab})
    try:
        browser.get(d.url + "/")
        js_wait(browser, "the new tab asks for the token",
                "return !document.getElementById('login').hidden")
        assert not any(s in browser.page_source() for s in secrets)
    finally:
        browser.cmd("DELETE", "/window")
        browser.cmd("POST", "/window", {"handle": first})

    # Forgetting the token clears every piece of job data from the page.
    browser.click("#forget")
    js_wait(browser, "the token form again", "return !document.getElementById('login').hidden")
    assert browser.script("return sessionStorage.getItem('partd.token')") is None
    assert not any(s in browser.page_source() for s in secrets)
    assert csp_violations(browser) == []


# -- the picture's structure, rendered by Chromium --------------------------------

@pytest.mark.parametrize("schedule,stages,microbatches", [("gpipe", 4, 6), ("1f1b", 4, 8),
                                                          ("1f1b", 3, 2)])
def test_training_timeline_in_the_browser(browser, tmp_path, schedule, stages, microbatches):
    svg = show(json.dumps(training_result(stages, microbatches, schedule)).encode())
    path = tmp_path / "plan.svg"
    path.write_bytes(svg)
    browser.get(path.as_uri())
    blocks = js_wait(browser, "the timeline's blocks", """
        const rs = document.querySelectorAll('rect.fwd[data-stage], rect.bwd[data-stage]');
        return rs.length && Array.from(rs).map(r => {
            const b = r.getBoundingClientRect();
            return [r.getAttribute('class'), +r.dataset.stage, +r.dataset.microbatch,
                    b.left, b.right, b.top, b.bottom];
        });""")
    # One forward and one backward block per stage and microbatch.
    assert len(blocks) == 2 * stages * microbatches
    assert {(c, s, m) for c, s, m, *_ in blocks} == {
        (c, s, m) for c in ("fwd", "bwd") for s in range(stages) for m in range(microbatches)}
    eps = 0.01
    at = {(c, s, m): (l, r) for c, s, m, l, r, _, _ in blocks}
    for s in range(stages):
        lane = sorted((l, r, c, m) for c, st, m, l, r, _, _ in blocks if st == s)
        # The schedule's order on each stage, and no two blocks overlapping.
        assert [(c, m) for _, _, c, m in lane] == schedule_order(schedule, s, stages, microbatches)
        for (l1, r1, *_), (l2, r2, *_) in zip(lane, lane[1:]):
            assert r1 <= l2 + eps and l1 < r1
        # Stages are separate rows.
        tops = {round(t, 3) for c, st, m, l, r, t, b in blocks if st == s}
        assert len(tops) == 1
        for m in range(microbatches):
            # A block starts once its input is ready.
            if s:
                assert at[("fwd", s, m)][0] >= at[("fwd", s - 1, m)][1] - eps
            if s + 1 < stages:
                assert at[("bwd", s, m)][0] >= at[("bwd", s + 1, m)][1] - eps
            assert at[("bwd", s, m)][0] >= at[("fwd", s, m)][1] - eps
    assert colored_pixels(browser.screenshot()) > 5000
