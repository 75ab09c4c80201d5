"""One `partd serve` process for the integration tests: started on a free
loopback port (the daemon binds port 0 and logs the address it got) with a
given data directory, its log collected line by line; restartable on the
same data directory. The test helpers (conftest.Daemon,
hardening_support.Daemon) add their HTTP interfaces on top."""
import os
import pathlib
import re
import signal
import subprocess
import threading

ROOT = pathlib.Path(__file__).resolve().parents[2]
PARTD_BIN = os.environ.get("PARTD_BIN", str(ROOT / "build" / "partd"))
START_TIMEOUT_S = 30

_LISTENING = re.compile(r"\blistening address=(\S+)|\"event\":\"listening\",\"address\":\"([^\"]+)\"")


class DaemonProcess:
    def __init__(self, data_dir, args=(), env=None):
        self.data_dir = str(data_dir)
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.lines = []
        self.host = "127.0.0.1"
        self.port = None
        self._reader = None

    def _launch(self):
        """Starts the process; returns an Event set once it logs its address
        (or its output ends)."""
        cmd = [PARTD_BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", self.data_dir]
        self.lines = []
        self.port = None
        self.proc = subprocess.Popen(cmd + self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=self.env, text=True)
        ready = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                m = _LISTENING.search(line)
                if m:
                    host, port = (m.group(1) or m.group(2)).rsplit(":", 1)
                    self.host = host.strip("[]")
                    self.port = int(port)
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        return ready

    def _wait_listening(self, ready):
        if not ready.wait(START_TIMEOUT_S) or self.port is None:
            self.proc.kill()
            raise RuntimeError("daemon did not start:\n" + self.log())

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return self.proc.returncode

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=5)

    def log(self):
        return "\n".join(self.lines)
