# partd build. `make` builds the partd binary and libpartd.a; see README.md.
#   make deps      install what building and running need (Debian, as root)
#   make test-deps install what the tests need too
#   make test      unit tests (cmocka) + integration and tool tests (pytest),
#                  all but those marked slow: a few minutes
#   make test-all  every test
#   make test-pg   the integration tests with the daemons on PostgreSQL
#   make asan      every test built with AddressSanitizer + UBSan
#   make check     fuzz-smoke, tsan, test-all, test-pg, asan (what CI runs)
#   make bench     benchmarks, printing their figures
#   make install   PREFIX=/usr/local DESTDIR=
#   make fuzz      libFuzzer drivers (clang); make fuzz-smoke runs each 60 s

MAKEFLAGS += --no-print-directory

BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
PYTHON  ?= /usr/bin/python3
CC      ?= cc

PKGS := jansson yajl libmicrohttpd libuv sqlite3 libpq libcrypto libsodium libsystemd cbc zlib libzstd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
# The solver, the PostgreSQL client, the HTTP server and libsystemd are
# loaded on first use (lib/include/partd/dynlib.h): the partd binary does
# not link them, so that starting it does not load them and their forty-odd
# dependencies. Their sonames come from the libraries the build finds (the
# development link's name when objdump cannot tell).
LAZY_PKGS  := cbc libpq libmicrohttpd libsystemd
soname = $(shell objdump -p $(shell pkg-config --variable=libdir $(1))/$(2) 2>/dev/null | \
	awk '/SONAME/ {print $$2}')
lazy_name  = $(or $(call soname,$(1),$(2)),$(2))
LAZY_DEFS  := -DPARTD_CBC_SONAME='"$(call lazy_name,cbc,libCbcSolver.so)"' \
	-DPARTD_PQ_SONAME='"$(call lazy_name,libpq,libpq.so)"' \
	-DPARTD_MHD_SONAME='"$(call lazy_name,libmicrohttpd,libmicrohttpd.so)"' \
	-DPARTD_SYSTEMD_SONAME='"$(call lazy_name,libsystemd,libsystemd.so)"'
PARTD_LIBS := $(shell pkg-config --libs $(filter-out $(LAZY_PKGS),$(PKGS))) -lm -pthread

OPT      ?= -O2
SANFLAGS ?=
CFLAGS   ?=
# One include folder per layer: lib/ sees the public headers and its own
# folders (lib/include, lib), the daemon the public headers and its own
# folders (lib/include, daemon); tests and benchmarks see everything.
# Headers of the same folder are included by bare name, others by their
# path from the layer's root ("pipeline/pipeline.h", "core/log.h").
LIB_INC    := -Ilib/include -Ilib
DAEMON_INC := -Ilib/include -Idaemon
TEST_INC   := -Ilib/include -Ilib -Idaemon -Itests/support -Ibench/support
override CFLAGS += -std=c11 -Wall -Wextra -Werror $(OPT) -g -pthread \
	-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(SANFLAGS) \
	$(PKG_CFLAGS) $(LAZY_DEFS)
LDLIBS   := $(PKG_LIBS) -lm -pthread
LDFLAGS  ?=
override LDFLAGS += $(SANFLAGS)

LIB_SRC    := $(sort $(shell find lib -name '*.c'))
DAEMON_SRC := $(sort $(filter-out daemon/cmd/main.c,$(shell find daemon -name '*.c')))
TEST_SRC   := $(sort $(shell find tests/lib tests/daemon -name 'test_*.c') $(wildcard tests/fuzz/test_*.c))
TEST_SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
BENCH_SRC  := $(sort $(wildcard bench/*.c))
BENCH_SUPPORT_SRC := $(sort $(wildcard bench/support/*.c))

LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(BUILD)/%.o)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
BENCH_SUPPORT_OBJ := $(BENCH_SUPPORT_SRC:%.c=$(BUILD)/%.o)

# The console page, daemon/show/console.html, compiled in as a C array
# (its bytes in hex by od and sed, both in every Debian base system) so that
# the binary serves it with no file beside it.
CONSOLE_PAGE := daemon/show/console.html
CONSOLE_GEN  := $(BUILD)/gen/console_page.c
CONSOLE_OBJ  := $(BUILD)/gen/console_page.o

LIBPARTD   := $(BUILD)/libpartd.a
LIBDAEMON  := $(BUILD)/libpartd-daemon.a
PARTD      := $(BUILD)/partd

GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# Debian bookworm packages. `make deps`: what building and running partd
# need. `make test-deps`: what the tests, fuzzing and benchmarks need on top:
# cmocka, pytest, PyTorch for the exporter and parity tests, venv, setuptools
# and pip to install the Python package offline, zstd to decode answers,
# PostgreSQL (a server the tests start), clang (fuzzing, LeakSanitizer),
# wrk (HTTP benchmarks), rsvg-convert and Chromium (pictures and the console).
DEB_BUILD := build-essential pkg-config ca-certificates \
	libjansson-dev libyajl-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev libssl-dev libsodium-dev \
	libsystemd-dev libpq-dev coinor-libcbc-dev zlib1g-dev libzstd-dev
DEB_TEST := git libcmocka-dev libcurl4-openssl-dev postgresql \
	python3 python3-pytest python3-jsonschema python3-yaml python3-torch python3-torchvision \
	python3-venv python3-setuptools python3-pip python3-wheel \
	clang libclang-rt-14-dev wrk systemd zstd librsvg2-bin chromium chromium-driver faketime

# Keep objects of test and bench programs between runs.
.SECONDARY:

.PHONY: all deps test-deps test test-all test-pg unit-test py-test asan check bench install clean fuzz fuzz-smoke

all: $(PARTD) $(LIBPARTD)
	@ln -sf $(PARTD) partd 2>/dev/null || true

$(BUILD)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) $(LIB_INC) -MMD -MP -c $< -o $@

$(BUILD)/daemon/%.o: daemon/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) $(DAEMON_INC) -DPARTD_BUILD='"$(GIT_REV)"' -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) $(TEST_INC) -MMD -MP -c $< -o $@

$(LIBPARTD): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CONSOLE_GEN): $(CONSOLE_PAGE)
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@{ echo '/* Generated by the Makefile from $(CONSOLE_PAGE); do not edit. */'; \
	   echo '#include <stddef.h>'; \
	   echo 'const unsigned char partd_console_page[] = {'; \
	   od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '};'; \
	   echo 'const size_t partd_console_page_len = sizeof partd_console_page;'; } > $@.tmp
	@mv $@.tmp $@

$(CONSOLE_OBJ): $(CONSOLE_GEN)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(LIBDAEMON): $(DAEMON_OBJ) $(CONSOLE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PARTD): $(BUILD)/daemon/cmd/main.o $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(PARTD_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJ) $(BENCH_SUPPORT_OBJ) $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs cmocka libcurl)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BENCH_SUPPORT_OBJ) $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEB_BUILD)

test-deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEB_BUILD) $(DEB_TEST)

# Unit tests: every tests/{lib,daemon}/test_<unit>.c (and the fuzz regression
# replay, tests/fuzz/test_regressions.c) is one cmocka binary, run from the
# tree root.
unit-test: $(TEST_BIN) $(PARTD)
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; PARTD_BIN=$(abspath $(PARTD)) $$t; done

# The allocation-failure shim (tests/faults/failmalloc.c), preloaded by
# tests/cli/test_alloc_failure.py to fail the Nth allocation of a run.
FAILMALLOC := $(BUILD)/tests/libfailmalloc.so

$(FAILMALLOC): tests/faults/failmalloc.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -g -fPIC -shared -o $@ $< -ldl

# Integration (real daemon on loopback) and Python tool tests.
# Each directory runs in its own pytest process: they have their own
# conftest.py helpers, imported by name.
PY_TEST_DIRS := tests/cli tests/integration tests/python
# Which tests: `make test` leaves out those marked slow (pytest.ini).
PYTEST_SELECT ?=

py-test: $(PARTD) $(FAILMALLOC)
	@if ! $(PYTHON) -c 'import pytest' 2>/dev/null; then \
		echo "pytest is not installed for $(PYTHON) (make test-deps)"; exit 1; fi
	@set -e; for d in $(PY_TEST_DIRS); do echo "== pytest $$d"; \
		PARTD_BIN=$(abspath $(PARTD)) PARTD_FAILMALLOC=$(abspath $(FAILMALLOC)) \
		$(PYTHON) -m pytest -q -p no:cacheprovider $(PYTEST_SELECT) $$d; done

# The integration suite once more with every daemon on a PostgreSQL store
# (a throw-away server the suite starts; skipped when postgresql is not
# installed); tests of the SQLite file and data directory skip themselves.
test-pg: $(PARTD)
	PARTD_TEST_STORE=postgresql PARTD_BIN=$(abspath $(PARTD)) \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/integration

# The everyday run, a few minutes: every unit test and the Python tests but
# those marked slow. test-all runs every test. Unit tests last, so the run
# ends with cmocka's summary lines.
test:
	$(MAKE) PYTEST_SELECT='-m "not slow"' py-test unit-test

test-all: py-test unit-test

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
		SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		test-all

# Everything CI runs: the suite plain and under ASan+UBSan, each fuzz driver
# for FUZZ_SECONDS under ASan+UBSan, the daemon's concurrency tests under
# ThreadSanitizer, and the integration suite on PostgreSQL.
check:
	$(MAKE) fuzz-smoke
	$(MAKE) tsan
	$(MAKE) test-all
	$(MAKE) test-pg
	$(MAKE) asan

bench: $(BENCH_BIN) $(PARTD)
	@set -e; for b in $(BENCH_BIN); do echo "== $$b"; PARTD_BIN=$(abspath $(PARTD)) $$b; done
	@echo "== bench/bench_replicas.py"; PARTD_BIN=$(abspath $(PARTD)) $(PYTHON) bench/bench_replicas.py
	@echo "== bench/bench_export.py"; $(PYTHON) bench/bench_export.py
	@echo "== bench/bench_step.py"; PARTD_BIN=$(abspath $(PARTD)) $(PYTHON) bench/bench_step.py
	@echo "== bench/bench_cache_rss.py"; PARTD_BIN=$(abspath $(PARTD)) $(PYTHON) bench/bench_cache_rss.py
	@echo "== bench/bench_fx_modes.py"; PARTD_BIN=$(abspath $(PARTD)) $(PYTHON) bench/bench_fx_modes.py

install: $(PARTD) $(LIBPARTD)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/partd
	install -m 0755 $(PARTD) $(DESTDIR)$(PREFIX)/bin/partd
	install -m 0644 $(LIBPARTD) $(DESTDIR)$(PREFIX)/lib/libpartd.a
	install -m 0644 lib/include/partd/*.h $(DESTDIR)$(PREFIX)/include/partd/
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|@BINDIR@|$(PREFIX)/bin|g' systemd/partd.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/partd.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/partd.service

clean:
	rm -rf build build-asan build-fuzz build-tsan partd

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- hardening: fuzzing and ThreadSanitizer ---------------------------------
#   make fuzz        libFuzzer drivers (tests/fuzz/fuzz_*.c) in build-fuzz/,
#                    with the library and daemon built by clang under
#                    ASan + UBSan and fuzzer coverage
#   make fuzz-smoke  each driver for FUZZ_SECONDS (default 60) from the seed
#                    corpus in tests/fuzz/corpus/<driver>/; fails on any finding
#                    (crash artifacts in build-fuzz/artifacts/)
#   make tsan        partd built with ThreadSanitizer in build-tsan/, then the
#                    concurrency integration tests (TSAN_TESTS, and TSAN_PG_TESTS
#                    on PostgreSQL) against it; fails on any race report
FUZZ_BUILD    ?= build-fuzz
FUZZ_SECONDS  ?= 60
FUZZ_DRIVERS  := request modules http
FUZZ_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SUPPORT  := tests/fuzz/targets.c tests/fuzz/http_harness.c tests/support/request_dump.c
FUZZ_OPTS_request := -max_len=65536
FUZZ_OPTS_modules := -max_len=32768
# The daemon logs a line per request on stderr: -close_fd_mask=2 silences it,
# libFuzzer keeps its own output and sanitizer reports on a duplicate.
FUZZ_OPTS_http    := -max_len=16384 -close_fd_mask=2

.PHONY: fuzz-drivers

fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang OPT=-O1 \
		SANFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SANFLAGS)" fuzz-drivers

fuzz-drivers: $(FUZZ_DRIVERS:%=$(BUILD)/fuzz_%)

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SUPPORT) $(wildcard tests/fuzz/*.h) $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(CFLAGS) $(TEST_INC) -Itests/fuzz -fsanitize=fuzzer -o $@ $< $(FUZZ_SUPPORT) \
		$(LIBDAEMON) $(LIBPARTD) $(LDLIBS)

fuzz-smoke: fuzz
	@set -e; for d in $(FUZZ_DRIVERS); do \
		mkdir -p $(FUZZ_BUILD)/corpus-$$d $(FUZZ_BUILD)/artifacts; \
		rm -rf $(FUZZ_BUILD)/http-data; \
		echo "== fuzz_$$d for $(FUZZ_SECONDS) s"; \
		PARTD_FUZZ_DATA_DIR=$(abspath $(FUZZ_BUILD))/http-data \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(FUZZ_BUILD)/fuzz_$$d -max_total_time=$(FUZZ_SECONDS) -timeout=30 \
			-rss_limit_mb=4096 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_BUILD)/artifacts/$$d- $(FUZZ_OPTS_$$d) \
			$(FUZZ_BUILD)/corpus-$$d tests/fuzz/corpus/$$d; \
	done

# ThreadSanitizer build of the daemon, running the concurrency integration
# tests against it (a data race aborts the daemon and fails the test).
.PHONY: tsan
TSAN_TESTS ?= tests/integration/test_jobs.py tests/integration/test_api.py tests/integration/test_hostile.py
# On PostgreSQL: replicas sharing the queue (store, writer and HTTP threads
# meet there), and the job engine on a shared store.
TSAN_PG_TESTS ?= tests/integration/test_replicas.py tests/integration/test_jobs.py
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" PARTD_BIN=$(abspath build-tsan/partd)
tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 SANFLAGS="-fsanitize=thread" build-tsan/partd
	$(TSAN_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider $(TSAN_TESTS)
	$(TSAN_ENV) PARTD_TEST_STORE=postgresql $(PYTHON) -m pytest -q -p no:cacheprovider $(TSAN_PG_TESTS)
