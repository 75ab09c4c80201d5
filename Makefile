# partd build. `make` builds the partd binary and libpartd.a; see README.md.
#   make test      unit tests (cmocka) + integration and tool tests (pytest)
#   make asan      the same suite built with AddressSanitizer + UBSan
#   make check     fuzz-smoke, tsan, test, asan (what CI runs)
#   make bench     benchmarks, printing their figures
#   make install   PREFIX=/usr/local DESTDIR=
#   make fuzz      libFuzzer drivers (clang); make fuzz-smoke runs each 60 s

MAKEFLAGS += --no-print-directory

BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
PYTHON  ?= /usr/bin/python3
CC      ?= cc

PKGS := jansson libmicrohttpd libuv sqlite3 libcrypto libsystemd cbc zlib libzstd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))

OPT      ?= -O2
SANFLAGS ?=
CFLAGS   ?=
override CFLAGS += -std=c11 -Wall -Wextra -Werror $(OPT) -g -pthread \
	-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(SANFLAGS) \
	-Ilib -Idaemon -Ibench/support -Itests/support $(PKG_CFLAGS)
LDLIBS   := $(PKG_LIBS) -lm -pthread
LDFLAGS  ?=
override LDFLAGS += $(SANFLAGS)

LIB_SRC    := $(sort $(wildcard lib/*.c))
DAEMON_SRC := $(sort $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/*/*.c)))
TEST_SRC   := $(sort $(wildcard tests/lib/test_*.c tests/daemon/test_*.c tests/fuzz/test_*.c))
TEST_SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
BENCH_SRC  := $(sort $(wildcard bench/*.c))
BENCH_SUPPORT_SRC := $(sort $(wildcard bench/support/*.c))

LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(BUILD)/%.o)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
BENCH_SUPPORT_OBJ := $(BENCH_SUPPORT_SRC:%.c=$(BUILD)/%.o)

LIBPARTD   := $(BUILD)/libpartd.a
LIBDAEMON  := $(BUILD)/libpartd-daemon.a
PARTD      := $(BUILD)/partd

GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# Debian bookworm packages: build, tests (cmocka, pytest, PyTorch for the
# exporter and parity tests, zstd to decode answers), fuzzing (clang), HTTP
# benchmarks (wrk).
DEB_PACKAGES := build-essential pkg-config git ca-certificates \
	libjansson-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev libssl-dev \
	libsystemd-dev coinor-libcbc-dev zlib1g-dev libzstd-dev libcmocka-dev libcurl4-openssl-dev \
	python3 python3-pytest python3-jsonschema python3-yaml python3-torch python3-torchvision \
	clang libclang-rt-14-dev wrk systemd zstd

# Keep objects of test and bench programs between runs.
.SECONDARY:

.PHONY: all deps test unit-test py-test asan check bench install clean fuzz fuzz-smoke

all: $(PARTD) $(LIBPARTD)
	@ln -sf $(PARTD) partd 2>/dev/null || true

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -DPARTD_BUILD='"$(GIT_REV)"' -MMD -MP -c $< -o $@

$(LIBPARTD): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBDAEMON): $(DAEMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PARTD): $(BUILD)/daemon/main.o $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJ) $(BENCH_SUPPORT_OBJ) $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs cmocka libcurl)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BENCH_SUPPORT_OBJ) $(LIBDAEMON) $(LIBPARTD)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEB_PACKAGES)

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

py-test: $(PARTD) $(FAILMALLOC)
	@if ! $(PYTHON) -c 'import pytest' 2>/dev/null; then \
		echo "pytest is not installed for $(PYTHON) (make deps)"; exit 1; fi
	@set -e; for d in $(PY_TEST_DIRS); do echo "== pytest $$d"; \
		PARTD_BIN=$(abspath $(PARTD)) PARTD_FAILMALLOC=$(abspath $(FAILMALLOC)) \
		$(PYTHON) -m pytest -q -p no:cacheprovider $$d; done

# Unit tests last, so the run ends with cmocka's summary lines.
test: py-test unit-test

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
		SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		test

# Everything CI runs: the suite plain and under ASan+UBSan, each fuzz driver
# for FUZZ_SECONDS under ASan+UBSan, the daemon's concurrency tests under
# ThreadSanitizer.
check:
	$(MAKE) fuzz-smoke
	$(MAKE) tsan
	$(MAKE) test
	$(MAKE) asan

bench: $(BENCH_BIN) $(PARTD)
	@set -e; for b in $(BENCH_BIN); do echo "== $$b"; PARTD_BIN=$(abspath $(PARTD)) $$b; done

install: $(PARTD) $(LIBPARTD)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/partd
	install -m 0755 $(PARTD) $(DESTDIR)$(PREFIX)/bin/partd
	install -m 0644 $(LIBPARTD) $(DESTDIR)$(PREFIX)/lib/libpartd.a
	install -m 0644 lib/*.h $(DESTDIR)$(PREFIX)/include/partd/
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
#                    concurrency integration tests (TSAN_TESTS) against it; fails
#                    on any race report
FUZZ_BUILD    ?= build-fuzz
FUZZ_SECONDS  ?= 60
FUZZ_DRIVERS  := request modules http
FUZZ_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SUPPORT  := tests/fuzz/targets.c tests/fuzz/http_harness.c
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
	$(CC) $(CFLAGS) -Itests/fuzz -fsanitize=fuzzer -o $@ $< $(FUZZ_SUPPORT) \
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
tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 SANFLAGS="-fsanitize=thread" build-tsan/partd
	PARTD_BIN=$(abspath build-tsan/partd) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		$(PYTHON) -m pytest -q -p no:cacheprovider $(TSAN_TESTS)
