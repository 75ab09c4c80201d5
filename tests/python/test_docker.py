"""Dockerfile: no Docker engine runs here, so the image's build steps are
checked against the Makefile instead, so that the two cannot drift:

* the build stage apt-gets the -dev package behind every pkg-config module
  of the Makefile's PKGS line (found with dpkg), and nothing builds
  differently from `make`;
* the runtime stage installs the package of every shared library the built
  partd needs (readelf NEEDED -> dpkg), up to what those packages pull in;
* the COPY'd tree alone builds with the image's exact `make` command;
* non-root user, exec-form ENTRYPOINT/CMD, volume and HEALTHCHECK as promised.
"""

import os
import re
import shutil
import subprocess

import pytest

from partd_testlib import ROOT, partd_bin

DOCKERFILE = os.path.join(ROOT, "Dockerfile")


@pytest.fixture(scope="module")
def stages():
    """[(base image, [instruction lines joined over continuations])]."""
    with open(DOCKERFILE, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\\\n", " ", text)
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    result = []
    for line in lines:
        if line.upper().startswith("FROM "):
            result.append((line.split()[1], []))
        else:
            result[-1][1].append(line)
    return result


def _apt_packages(lines):
    pkgs = set()
    for line in lines:
        for m in re.finditer(r"apt-get install ([^&;]*)", line):
            pkgs |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pkgs


def _makefile_pkgs():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        m = re.search(r"^PKGS\s*:=\s*(.+)$", f.read(), re.M)
    return m.group(1).split()


def _dpkg_owner(path):
    # merged /usr: dpkg may know a library under /lib rather than /usr/lib
    candidates = [path] + ([path[4:]] if path.startswith("/usr/") else [])
    for candidate in candidates:
        proc = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if proc.returncode == 0:
            return proc.stdout.split(":")[0].strip()
    return None


needs_dpkg = pytest.mark.skipif(not shutil.which("dpkg") or not shutil.which("pkg-config"),
                                reason="needs dpkg and pkg-config (Debian)")


def test_two_stages_on_bookworm_slim(stages):
    assert [s[0] for s in stages] == ["debian:bookworm-slim", "debian:bookworm-slim"]
    with open(DOCKERFILE, encoding="utf-8") as f:
        assert re.search(r"^FROM debian:bookworm-slim AS build$", f.read(), re.M)


@needs_dpkg
def test_build_stage_installs_the_makefiles_dev_packages(stages):
    installed = _apt_packages(stages[0][1])
    for module in _makefile_pkgs():
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", module],
                               capture_output=True, text=True).stdout.strip()
        owner = _dpkg_owner(os.path.join(pcdir, f"{module}.pc"))
        assert owner, f"no Debian package owns {module}.pc"
        assert owner in installed, f"{module}: {owner} missing from the build stage"


@needs_dpkg
def test_make_deps_installs_what_the_build_needs():
    """`make deps` (DEB_BUILD) alone is enough to build: it holds the package
    of every pkg-config module the Makefile links, and no test tool."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^DEB_BUILD\s*:=((?:[^\n]*\\\n)*[^\n]*)$", text, re.M)
    build = set(m.group(1).replace("\\", " ").split())
    for module in _makefile_pkgs():
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", module],
                               capture_output=True, text=True).stdout.strip()
        owner = _dpkg_owner(os.path.join(pcdir, f"{module}.pc"))
        assert owner in build, f"{module}: {owner} missing from DEB_BUILD"
    assert not build & {"python3-torch", "chromium", "postgresql", "clang", "libcmocka-dev"}


def test_build_stage_runs_plain_make(stages):
    runs = [l for l in stages[0][1] if l.startswith("RUN ") and re.search(r"\bmake\b", l)
            and "apt-get" not in l]
    assert runs == ['RUN make GIT_REV="$PARTD_BUILD"']


def test_runtime_stage(stages):
    lines = stages[1][1]
    joined = "\n".join(lines)
    assert 'ENTRYPOINT ["partd"]' in lines
    assert 'CMD ["serve", "--listen", "0.0.0.0:8080", "--data-dir", "/var/lib/partd"]' in lines
    assert "VOLUME /var/lib/partd" in lines
    assert re.search(r'^HEALTHCHECK .*CMD \["partd", "healthcheck"\]$', joined, re.M)
    users = [l.split()[1] for l in lines if l.startswith("USER ")]
    assert users and not users[-1].startswith(("root", "0"))
    assert "COPY --from=build /src/build/partd /usr/local/bin/partd" in lines


def _depends_closure(packages):
    """Installed packages reachable from `packages` through Depends/Pre-Depends."""
    seen, todo = set(), list(packages)
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", pkg],
                              capture_output=True, text=True)
        for alt in proc.stdout.split(","):
            name = alt.split("|")[0].strip().split(" ")[0].split(":")[0]
            if name:
                todo.append(name)
    return seen


@needs_dpkg
def test_runtime_stage_has_every_needed_library(stages):
    binary = partd_bin()
    if not os.path.exists(binary) or not shutil.which("readelf"):
        pytest.skip("needs a built partd and readelf")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]",
                        subprocess.run(["readelf", "-d", binary], capture_output=True,
                                       text=True).stdout)
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    provided = _depends_closure(_apt_packages(stages[1][1]) | {"libc6"})
    for lib in needed:
        if re.match(r"lib(asan|ubsan|tsan|lsan)\.so", lib):
            continue  # sanitizer runtimes of instrumented test builds only
        owner = _dpkg_owner(os.path.realpath(paths[lib]))
        assert owner in provided, f"{lib} ({owner}) is not installed in the runtime stage"


@pytest.mark.slow
def test_copied_tree_builds_with_the_images_make(stages, tmp_path):
    """Only what the Dockerfile COPYs, built with its RUN make line."""
    copies = [l.split()[1:] for l in stages[0][1] if l.startswith("COPY ")]
    src = tmp_path / "src"
    src.mkdir()
    for what, dest in copies:
        origin = os.path.join(ROOT, what.rstrip("/"))
        target = src / dest.rstrip("/") if dest not in ("./", ".") else src / what
        if os.path.isdir(origin):
            shutil.copytree(origin, target)
        else:
            shutil.copy(origin, target)
    # The image builds from a clean environment: no settings of an outer make
    # (make asan runs this test with BUILD and SANFLAGS in MAKEFLAGS).
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "BUILD", "SANFLAGS",
                        "OPT", "CFLAGS", "LDFLAGS", "CC")}
    proc = subprocess.run(["make", "-j2", "GIT_REV=test"], cwd=src, capture_output=True,
                          text=True, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([str(src / "build" / "partd"), "version"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0 and "test" in out.stdout + out.stderr
