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

from conftest import (PARTD_BIN, assert_problem, chain_request, infeasible_doc,
                      submit_and_wait, wait_until)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from browser import Browser, chromium_missing, png_pixels  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
TOKEN = "console-token-5b1f0c"


# -- helpers -------------------------------------------------------------------

def pipeline_doc(seed, n_ops=30, devices=3):
    return chain_request(n_ops, seed=seed, devices=devices, mode="pipeline")


def show(result_bytes, *args):
    """What `partd show` makes of a result document."""
    p = subprocess.run([PARTD_BIN, "show", "-", *args], input=result_bytes, capture_output=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def colored_pixels(png):
    """Pixels that are neither white nor grey: the bars and blocks drawn."""
    _, _, rows = png_pixels(png)
    return sum(1 for row in rows for (r, g, b) in row if max(r, g, b) - min(r, g, b) > 40)


def training_request(seed, schedule, ranks, microbatches, virtual_stages=None):
    """A chain of layers (each its own unit) planned in mode training with
    one of PyTorch's schedules, on devices of two speeds over a link slow
    enough to cost time."""
    doc = chain_request(24, seed=seed, devices=ranks, mode="training", slack=8.0)
    for i, node in enumerate(n for n in doc["graph"]["nodes"] if n["op"] == "call_module"):
        node["module"] = f"layers.{i}"
        node["backward_ms"] = 2 * node["latency_ms"]
    for i, dev in enumerate(doc["devices"]):
        if i % 2:
            dev["speed"] = 2.0
    training = {"schedule": schedule, "stages": ranks, "microbatches": microbatches,
                "checkpoint": "always", "unit_depth": 2}
    if virtual_stages:
        training["virtual_stages"] = virtual_stages
    doc["options"] = {"mode": "training", "transfer_bytes_per_sec": 2e6, "training": training}
    return doc


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


def test_console_list_says_which_graph_mode_and_devices(make_daemon, browser):
    """Each row names the graph, the mode and the devices (not only a hash
    prefix), and a training row shows its step time, not the bottleneck."""
    d = make_daemon()
    doc = pipeline_doc(seed=71)
    doc["graph"]["name"] = "resnet-tiny"
    pipe = submit_and_wait(d, doc)
    doc = chain_request(6, seed=72, devices=4, mode="training", slack=16.0)
    doc["graph"]["name"] = "gpt-tiny"
    train = submit_and_wait(d, doc)
    assert pipe["status"] == train["status"] == "succeeded"
    browser.get(d.url + "/")
    cells = js_wait(browser, "both jobs listed", """
        const rows = document.querySelectorAll('#jobs-body tr');
        return rows.length === 2 && Array.from(rows).map(r => Array.from(r.cells).map(
            c => [c.innerText.trim(), c.title]));""")
    heads = browser.script("""return Array.from(document.querySelectorAll('#jobs thead th'))
        .map(h => h.textContent);""")
    by_head = [dict(zip(heads, row)) for row in cells]
    t, p = by_head  # newest first
    assert t["Graph"][0].startswith("gpt-tiny ") and t["Graph"][1] == train["graph_hash"]
    assert p["Graph"][0].startswith("resnet-tiny ")
    assert (t["Mode"][0], p["Mode"][0]) == ("training", "pipeline")
    assert t["Devices"] == ["4: gpu0, gpu1, gpu2, +1", "gpu0, gpu1, gpu2, gpu3"]
    assert p["Devices"][0] == "3: gpu0, gpu1, gpu2"
    assert t["Time"][1] == "step_ms: one training step" and t["Time"][0].endswith(" step")
    assert p["Time"][1] == "bottleneck_ms: the slowest partition" and p["Time"][0].endswith(" slowest")
    step = train["summary"]["step_ms"]
    shown = browser.script(f"return document.querySelector('#jobs-body tr[data-job-id=\"{train['id']}\"]')"
                           ".cells[7].firstChild.textContent")
    want = f"{step / 1000:.3f} s" if 1000 <= step < 10000 else None
    if want:
        assert shown == want
    else:
        assert shown.endswith(" ms") or shown.endswith(" s")
    browser.get(f"{d.url}/#/jobs/{train['id']}")
    facts = js_wait(browser, "the job's facts", """
        const f = document.getElementById('job-facts');
        return f.children.length > 0 && f.innerText;""")
    assert "gpt-tiny" in facts and "training" in facts and "4: gpu0, gpu1, gpu2, gpu3" in facts
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

@pytest.mark.parametrize("schedule,ranks,v,microbatches", [
    ("GPipe", 4, None, 6), ("1F1B", 3, None, 4), ("Interleaved1F1B", 2, 2, 4),
    ("ZBVZeroBubble", 3, None, 6), ("DualPipeV", 2, None, 4)])
def test_training_timeline_in_the_browser(daemon, browser, tmp_path, schedule, ranks, v,
                                          microbatches):
    done = submit_and_wait(daemon, training_request(71, schedule, ranks, microbatches, v))
    assert done["status"] == "succeeded", done
    result = daemon.get(f"/v1/jobs/{done['id']}/result")
    doc = result.json()
    assert doc["schedule"]["name"] == schedule
    svg = show(result.body)
    assert daemon.get(f"/v1/jobs/{done['id']}/plan.svg").body == svg
    path = tmp_path / "plan.svg"
    path.write_bytes(svg)
    browser.get(path.as_uri())
    blocks = js_wait(browser, "the timeline's blocks", """
        const rs = document.querySelectorAll('rect[data-rank]');
        return rs.length && Array.from(rs).map(r => {
            const b = r.getBoundingClientRect();
            return [r.getAttribute('class') + r.dataset.stage + '/' + r.dataset.microbatch,
                    +r.dataset.rank, b.left, b.right, b.top, b.bottom];
        });""")
    at = {key: (rank, l, r, t, b) for key, rank, l, r, t, b in blocks}
    lists = doc["schedule"]["actions"]

    def key(action):  # "3F1" -> "F3/1"
        i = next(i for i, ch in enumerate(action) if ch in "FBIW")
        return f"{action[i]}{action[:i]}/{action[i + 1:]}"

    # One block per action, on its rank.
    assert len(blocks) == len(at) == sum(len(lst) for lst in lists)
    assert set(at) == {key(a) for lst in lists for a in lst}
    eps = 0.01
    for r, lst in enumerate(lists):
        row = [at[key(a)] for a in lst]
        assert {rank for rank, *_ in row} == {r}
        # The rank's order, left to right, never two blocks at once.
        for (_, l1, r1, *_), (_, l2, r2, *_) in zip(row, row[1:]):
            assert r1 <= l2 + eps and l1 < r1
        # Ranks are rows of their own, one below the other.
        if r + 1 < len(lists):
            below = [at[key(a)] for a in lists[r + 1]]
            assert max(b for *_, b in row) <= min(t for *_, t, _ in below) + eps
    # A block starts once its inputs are there.
    for k, (_, l, r, _, _) in at.items():
        kind, j, m = k[0], int(k[1:].split("/")[0]), k.split("/")[1]
        if kind == "F" and j:
            assert l >= at[f"F{j - 1}/{m}"][2] - eps
        if kind in "BI":
            assert l >= at[f"F{j}/{m}"][2] - eps
            nxt = at.get(f"B{j + 1}/{m}") or at.get(f"I{j + 1}/{m}")
            if nxt:
                assert l >= nxt[2] - eps
        if kind == "W":
            assert l >= at[f"I{j}/{m}"][2] - eps
    # The last block ends at the step_ms mark.
    mark = browser.script("""const ls = document.querySelectorAll('line.mark');
        return ls[ls.length - 1].getBoundingClientRect().left;""")
    assert abs(max(r for _, _, r, _, _ in at.values()) - mark) < 1.5
    assert colored_pixels(browser.screenshot()) > 5000
