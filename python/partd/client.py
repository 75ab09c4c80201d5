#!/usr/bin/env python3
"""partd.client - talk to a partd daemon (Python standard library only).

Python API::

    from partd.client import Client
    c = Client("http://127.0.0.1:8080", token=None)
    job = c.submit(request)                 # dict: the job (202 or cached 200)
    job = c.wait(job["id"], timeout=600)    # polls from 50 ms on, backing off
    plan = c.result(job["id"])              # the result document
    plan = c.plan(request)                  # all three in one call
    c.cancel(job_id); c.job(job_id); c.list(status="failed"); c.health()

Every non-2xx answer raises PartdError with the HTTP status and the problem
document (RFC 9457) partd sent. wait() raises JobFailed (the job's problem
document), JobCancelled, or WaitTimeout.

Command line, ``python -m partd.client`` or ``partd-client`` when installed
(PARTD_URL and PARTD_TOKEN are read from the environment)::

    partd-client submit req.json --wait -o plan.json
    partd-client status|wait|result|cancel JOB_ID
    partd-client list [--status S] [--limit N] [--all]
    partd-client health | version

Exit status: 0 done; 1 connection, usage or server error; 2 request
rejected (400/413/415/422); 3 job failed (e.g. no feasible plan); 4 job
cancelled; 5 --wait/--timeout expired. Problem documents go to stderr.
"""

import argparse
import gzip
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

__all__ = ["Client", "PartdError", "JobFailed", "JobCancelled", "WaitTimeout"]

DEFAULT_URL = "http://127.0.0.1:8080"
# Request bodies from this size on are sent gzip-compressed.
COMPRESS_BODY_BYTES = 1 << 20
FINISHED = ("succeeded", "failed", "cancelled")


class PartdError(Exception):
    """A non-2xx answer: `status`, `problem` (dict or None), `retry_after`
    (seconds or None), `headers`."""

    def __init__(self, status, problem, retry_after=None, headers=None, message=None):
        self.status = status
        self.problem = problem
        self.retry_after = retry_after
        self.headers = headers or {}
        if message is None:
            if isinstance(problem, dict):
                message = f"{status} {problem.get('title', '')}: {problem.get('detail', '')}"
            else:
                message = f"HTTP {status}"
        super().__init__(message)


class JobFailed(Exception):
    """The job finished as failed; `job` and its `problem` document."""

    def __init__(self, job):
        self.job = job
        self.problem = job.get("error") or {}
        super().__init__(f"job {job.get('id')} failed: {self.problem.get('detail', '')}")


class JobCancelled(Exception):
    def __init__(self, job):
        self.job = job
        super().__init__(f"job {job.get('id')} was cancelled")


class WaitTimeout(Exception):
    def __init__(self, job, timeout):
        self.job = job
        super().__init__(f"job {job.get('id')} still {job.get('status')} after {timeout:g} s")


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    @property
    def retry_after(self):
        return _parse_retry_after(self.headers.get("Retry-After"))


def _parse_retry_after(value):
    """Seconds from a Retry-After header (delta-seconds form), else None."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _decoded(status, headers, body):
    """A Response with the body as the document, whatever its Content-Encoding."""
    coding = next((v for k, v in headers.items() if k.lower() == "content-encoding"), "")
    coding = coding.strip().lower()
    if coding in ("gzip", "x-gzip"):
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as e:
            raise PartdError(status, None, message=f"undecodable gzip answer: {e}") from None
    elif coding not in ("", "identity"):
        raise PartdError(status, None, message=f"answer in an unrequested coding {coding!r}")
    return Response(status, headers, body)


class Client:
    """A partd daemon at `url`.

    token: bearer token for /v1/ (None: no Authorization header).
    timeout: seconds per HTTP request. sleep/clock: injectable for tests."""

    def __init__(self, url=DEFAULT_URL, token=None, timeout=30.0,
                 sleep=time.sleep, clock=time.monotonic):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._sleep = sleep
        self._clock = clock
        self._retry_hint = {}  # job id -> Retry-After of its submission
        self.last_etag = None

    # -- transport ------------------------------------------------------------
    def request(self, method, path, body=None, headers=None):
        """One HTTP exchange; returns Response for any status (no raising)."""
        # Result documents are large and compress ~5x; partd keeps a gzip
        # form of each, so asking for it costs the daemon nothing.
        hdrs = {"Accept": "application/json", "Accept-Encoding": "gzip"}
        if self.token and path.startswith("/v1/"):
            hdrs["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return _decoded(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as e:
            with e:
                return _decoded(e.code, dict(e.headers.items()), e.read())

    def _checked(self, resp, ok=(200,)):
        if resp.status in ok:
            return resp
        problem = None
        try:
            problem = resp.json()
        except ValueError:
            pass
        raise PartdError(resp.status, problem, resp.retry_after, resp.headers)

    # -- jobs -----------------------------------------------------------------
    def submit(self, request, idempotency_key=None, retry_for=0.0):
        """POSTs a request (dict, JSON text or bytes); returns the job.

        Every submission carries an Idempotency-Key (a random one unless
        given), so resubmitting after a lost answer or a 429/503 returns the
        same job instead of a second one. With retry_for > 0, 429 and 503
        answers are retried after their Retry-After for up to that many
        seconds."""
        if isinstance(request, str):
            request = request.encode("utf-8")
        if not isinstance(request, bytes):
            request = json.dumps(request).encode("utf-8")
        headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        if len(request) >= COMPRESS_BODY_BYTES:
            # Graph JSON shrinks ~10x; the daemon decodes it within its
            # --max-body-bytes like a plain body.
            request = gzip.compress(request, compresslevel=1, mtime=0)
            headers["Content-Encoding"] = "gzip"
        deadline = self._clock() + retry_for
        while True:
            resp = self.request("POST", "/v1/jobs", request, headers)
            if resp.status in (429, 503) and self._clock() < deadline:
                self._pause(resp.retry_after, deadline, 1.0)
                continue
            job = self._checked(resp, (200, 202)).json()
            if isinstance(job, dict) and "id" in job:
                self._retry_hint[job["id"]] = resp.retry_after
            return job

    def job(self, job_id):
        return self._checked(self.request("GET", f"/v1/jobs/{_quote(job_id)}")).json()

    def wait(self, job, timeout=600.0, poll_max=5.0):
        """Polls until the job finishes; returns the succeeded job.

        `job` is a job id or a job dict. The first poll comes 50 ms after
        the submission (most jobs end in milliseconds), then the pause
        doubles up to `poll_max`, or up to the server's Retry-After when it
        sends a shorter one. Raises JobFailed, JobCancelled or WaitTimeout."""
        if isinstance(job, dict):
            current, job_id = job, job["id"]
        else:
            current, job_id = None, job
        deadline = self._clock() + timeout
        backoff = 0.05
        retry_after = self._retry_hint.pop(job_id, None)
        while True:
            if current is None:
                resp = self.request("GET", f"/v1/jobs/{_quote(job_id)}")
                current = self._checked(resp).json()
                if resp.retry_after is not None:  # else the last hint stands
                    retry_after = resp.retry_after
            status = current.get("status")
            if status == "succeeded":
                return current
            if status == "failed":
                raise JobFailed(current)
            if status == "cancelled":
                raise JobCancelled(current)
            if self._clock() >= deadline:
                raise WaitTimeout(current, timeout)
            cap = poll_max if retry_after is None else max(0.05, min(retry_after, poll_max))
            self._pause(min(backoff, cap), deadline, cap)
            backoff = min(backoff * 2, poll_max)
            current = None

    def _pause(self, seconds, deadline, cap):
        seconds = 0.05 if seconds is None else seconds
        self._sleep(max(0.0, min(seconds, cap, deadline - self._clock())))

    def result(self, job_id, etag=None):
        """The result document (dict). With `etag` and an unchanged result,
        returns None (304). The ETag of the answer is in self.last_etag.
        Raises JobFailed for a failed job (its problem document),
        JobCancelled for a cancelled one, PartdError otherwise."""
        headers = {"If-None-Match": etag} if etag else None
        resp = self.request("GET", f"/v1/jobs/{_quote(job_id)}/result", headers=headers)
        if resp.status == 304:
            self.last_etag = resp.headers.get("ETag", etag)
            return None
        self._checked_result(job_id, resp)
        self.last_etag = resp.headers.get("ETag")
        return resp.json()

    def result_bytes(self, job_id):
        """The result document exactly as served (byte-identical plans)."""
        resp = self.request("GET", f"/v1/jobs/{_quote(job_id)}/result")
        return self._checked_result(job_id, resp).body

    def _checked_result(self, job_id, resp):
        """resp when it is the result; JobFailed or JobCancelled when the job
        ended without one (its problem, or the 409 of a cancelled job, is
        what the result's URL serves then), PartdError otherwise."""
        try:
            return self._checked(resp)
        except PartdError as e:
            if e.status == 404 or (e.status == 409 and not _problem_is(e.problem, "job-cancelled")):
                raise
            try:
                job = self.job(job_id)
            except PartdError:
                raise e from None
            if job.get("status") == "cancelled":
                raise JobCancelled(job) from None
            if job.get("status") == "failed":
                if not job.get("error") and isinstance(e.problem, dict):
                    job = dict(job, error=e.problem)
                raise JobFailed(job) from None
            raise

    def cancel(self, job_id):
        """Cancels a queued or running job; returns the job. A job already
        cancelled is returned as it is (cancelling is idempotent); a job that
        finished otherwise raises PartdError (409)."""
        resp = self.request("DELETE", f"/v1/jobs/{_quote(job_id)}")
        if resp.status == 409:
            job = self.job(job_id)
            if job.get("status") == "cancelled":
                return job
        return self._checked(resp).json()

    def list(self, status=None, limit=None, page_token=None):
        """One page: {"jobs": [...], "next_page_token": str or None}."""
        query = {k: v for k, v in (("status", status), ("limit", limit),
                                   ("page_token", page_token)) if v is not None}
        path = "/v1/jobs" + ("?" + urllib.parse.urlencode(query) if query else "")
        return self._checked(self.request("GET", path)).json()

    def jobs(self, status=None, limit=None):
        """Every job, newest first, following next_page_token."""
        token = None
        while True:
            page = self.list(status=status, limit=limit, page_token=token)
            yield from page["jobs"]
            token = page.get("next_page_token")
            if not token:
                return

    def plan(self, request, timeout=600.0):
        """submit + wait + result."""
        job = self.submit(request, retry_for=min(timeout, 60.0))
        job = self.wait(job, timeout=timeout)
        return self.result(job["id"])

    # -- operations ---------------------------------------------------------------
    def health(self):
        """{"live": bool, "ready": bool, "ready_detail": str or None}."""
        live = self.request("GET", "/livez").status == 200
        ready = self.request("GET", "/readyz")
        detail = None
        if ready.status != 200:
            try:
                detail = ready.json().get("detail")
            except ValueError:
                detail = None
        return {"live": live, "ready": ready.status == 200, "ready_detail": detail}

    def version(self):
        return self._checked(self.request("GET", "/version")).json()


def _quote(job_id):
    return urllib.parse.quote(str(job_id), safe="")


def _problem_is(problem, slug):
    """Whether a problem document's `type` ends with /slug or :slug."""
    kind = problem.get("type", "") if isinstance(problem, dict) else ""
    return kind.endswith(("/" + slug, ":" + slug))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

EXIT_OK, EXIT_ERROR, EXIT_REJECTED, EXIT_FAILED, EXIT_CANCELLED, EXIT_TIMEOUT = range(6)


def _emit(doc, path=None, raw=None):
    text = raw if raw is not None else (json.dumps(doc, indent=1) + "\n").encode("utf-8")
    if path and path != "-":
        with open(path, "wb") as f:
            f.write(text)
    else:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()


def _problem_to_stderr(problem, fallback):
    if problem:
        sys.stderr.write(json.dumps(problem, indent=1) + "\n")
    else:
        sys.stderr.write(f"partd-client: {fallback}\n")


def _read_token(args):
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            return f.read().strip()
    return args.token or os.environ.get("PARTD_TOKEN") or None


def _cmd_submit(c, args):
    with open(args.request, "rb") if args.request != "-" else sys.stdin.buffer as f:
        body = f.read()
    job = c.submit(body, idempotency_key=args.idempotency_key, retry_for=args.retry_for)
    if not args.wait:
        _emit(job, args.output)
        return EXIT_OK
    sys.stderr.write(f"partd-client: job {job['id']} {job['status']}\n")
    job = c.wait(job, timeout=args.timeout)
    _emit(None, args.output, raw=c.result_bytes(job["id"]))
    return EXIT_OK


def _cmd_wait(c, args):
    _emit(c.wait(args.job_id, timeout=args.timeout), args.output)
    return EXIT_OK


def _cmd_result(c, args):
    _emit(None, args.output, raw=c.result_bytes(args.job_id))
    return EXIT_OK


def _cmd_list(c, args):
    if args.all:
        _emit({"jobs": list(c.jobs(status=args.status, limit=args.limit))})
    else:
        _emit(c.list(status=args.status, limit=args.limit, page_token=args.page_token))
    return EXIT_OK


def _cmd_health(c, args):
    h = c.health()
    _emit(h)
    return EXIT_OK if h["live"] and h["ready"] else EXIT_ERROR


def build_parser():
    p = argparse.ArgumentParser(prog="partd-client", description="Client for the partd daemon.")
    p.add_argument("--url", default=os.environ.get("PARTD_URL", DEFAULT_URL),
                   help="daemon URL (default: $PARTD_URL or %(default)s)")
    p.add_argument("--token", help="bearer token (default: $PARTD_TOKEN)")
    p.add_argument("--token-file", help="file holding the bearer token")
    p.add_argument("--http-timeout", type=float, default=30.0, help="seconds per HTTP request")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("submit", help="submit a request (file or - for stdin)")
    s.add_argument("request")
    s.add_argument("--wait", action="store_true", help="wait and print the result document")
    s.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (with --wait)")
    s.add_argument("--idempotency-key", help="default: a random key")
    s.add_argument("--retry-for", type=float, default=30.0,
                   help="seconds to keep retrying 429/503 answers (default 30)")
    s.add_argument("-o", "--output", help="write the job (or with --wait the result) here")
    s.set_defaults(func=_cmd_submit)

    for name, func, helptext in (("status", lambda c, a: _emit(c.job(a.job_id)) or EXIT_OK, "print the job"),
                                 ("cancel", lambda c, a: _emit(c.cancel(a.job_id)) or EXIT_OK, "cancel the job")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("job_id")
        s.set_defaults(func=func)

    s = sub.add_parser("wait", help="wait for a job to finish, print it")
    s.add_argument("job_id")
    s.add_argument("--timeout", type=float, default=600.0)
    s.add_argument("-o", "--output")
    s.set_defaults(func=_cmd_wait)

    s = sub.add_parser("result", help="print the result document")
    s.add_argument("job_id")
    s.add_argument("-o", "--output")
    s.set_defaults(func=_cmd_result)

    s = sub.add_parser("list", help="list jobs, newest first")
    s.add_argument("--status", choices=["queued", "running", "succeeded", "failed", "cancelled"])
    s.add_argument("--limit", type=int)
    s.add_argument("--page-token")
    s.add_argument("--all", action="store_true", help="follow next_page_token to the end")
    s.set_defaults(func=_cmd_list)

    s = sub.add_parser("health", help="liveness and readiness (exit 0 when both)")
    s.set_defaults(func=_cmd_health)

    s = sub.add_parser("version", help="daemon version")
    s.set_defaults(func=lambda c, a: _emit(c.version()) or EXIT_OK)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        client = Client(args.url, token=_read_token(args), timeout=args.http_timeout)
        return args.func(client, args)
    except PartdError as e:
        _problem_to_stderr(e.problem, str(e))
        return EXIT_REJECTED if e.status in (400, 413, 415, 422) else EXIT_ERROR
    except JobFailed as e:
        _problem_to_stderr(e.problem, str(e))
        return EXIT_FAILED
    except JobCancelled as e:
        sys.stderr.write(f"partd-client: {e}\n")
        return EXIT_CANCELLED
    except WaitTimeout as e:
        sys.stderr.write(f"partd-client: {e}\n")
        return EXIT_TIMEOUT
    except FileNotFoundError as e:
        sys.stderr.write(f"partd-client: {e}\n")
        return EXIT_ERROR
    except (urllib.error.URLError, OSError) as e:
        sys.stderr.write(f"partd-client: cannot reach {args.url}: {e}\n")
        return EXIT_ERROR
    except ValueError as e:
        sys.stderr.write(f"partd-client: {e}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
