"""A throw-away PostgreSQL server for the Python tests.

`PgServer` runs Debian's initdb and pg_ctl (PARTD_PG_BINDIR, default
/usr/lib/postgresql/15/bin) into a temporary directory: listening only on
127.0.0.1 at a free port, its unix socket in that directory, fsync off.
PostgreSQL refuses to run as root: then the server runs as `nobody`
(setpriv), owning the directory. `fresh_db()` makes an empty database and
returns its postgresql:// URL; `restart()` is `pg_ctl restart`, `stop()`
removes everything.

Fixtures: `pg_server` (session; skips the test, saying why, when the server
binaries are not installed) and `pg_url` (a fresh database per test).
`shared_server()` is the same session server for code that is not a fixture
(partd_daemon.py under PARTD_TEST_STORE=postgresql); it stops at exit.
"""
import atexit
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

BINDIR = os.environ.get("PARTD_PG_BINDIR", "/usr/lib/postgresql/15/bin")


def missing_reason():
    """Why no server can be started here, or None."""
    for prog in ("initdb", "pg_ctl", "psql"):
        path = os.path.join(BINDIR if prog != "psql" else "/usr/bin", prog)
        if not os.access(path, os.X_OK):
            return f"PostgreSQL server binaries not installed ({path}; apt-get install postgresql)"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="partd-pg-")
        self.port = None
        self._dbs = 0
        self._as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody", "nogroup")
            self._as_user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

    def _run(self, *cmd, check=True):
        return subprocess.run(self._as_user + list(cmd), cwd=self.dir, capture_output=True,
                              text=True, check=check, timeout=120)

    def _pg_ctl(self, *args, check=True):
        return self._run(os.path.join(BINDIR, "pg_ctl"), "-D", f"{self.dir}/data", *args,
                         check=check)

    def start(self):
        self._run(os.path.join(BINDIR, "initdb"), "-D", f"{self.dir}/data", "-U", "partd",
                  "--auth=trust", "-E", "UTF8", "--no-sync")
        for _ in range(5):
            self.port = _free_port()
            p = self._start(check=False)
            if p.returncode == 0:
                return self
        raise AssertionError(f"pg_ctl start failed: {self.log()}")

    def log(self):
        try:
            with open(f"{self.dir}/server.log") as f:
                return f.read()
        except OSError:
            return ""

    def restart(self):
        self._pg_ctl("-m", "fast", "-w", "-t", "60", "restart")

    def stop_server(self):
        self._pg_ctl("-m", "fast", "-w", "stop", check=False)

    def _start(self, check=True):
        return self._pg_ctl("-l", f"{self.dir}/server.log", "-w", "-t", "60", "-o",
                            f"-h 127.0.0.1 -p {self.port} -k {self.dir} -F "
                            "-c max_connections=300", "start", check=check)

    def start_server(self):
        """Starts the stopped server again on the same port."""
        self._start()

    def stop(self):
        self._pg_ctl("-m", "immediate", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def psql(self, sql, db="postgres"):
        p = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "partd",
                            "-d", db, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    def fresh_db(self):
        self._dbs += 1
        name = f"t{self._dbs}_{os.getpid()}"
        self.psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def url(self, name):
        return f"postgresql://partd@127.0.0.1:{self.port}/{name}"


_shared = None


def shared_server():
    """The session's server, started on first use (skips when impossible)."""
    global _shared
    if _shared is None:
        why = missing_reason()
        if why:
            pytest.skip(why)
        _shared = PgServer().start()
        atexit.register(_shared.stop)
    return _shared


@pytest.fixture(scope="session")
def pg_server():
    return shared_server()


@pytest.fixture
def pg_url(pg_server):
    return pg_server.fresh_db()
