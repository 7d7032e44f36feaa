# boardlab: `make demo` installs what is needed and runs the main job; `make test` installs and runs the tests.
SHELL := /bin/bash
# The venv is built from the system's Python (Debian's /usr/bin/python3 where it exists): the interpreter a fresh
# board or Debian machine has, so the tests run on it and not on a newer build that happens to be first on PATH.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV ?= .venv
BIN := $(VENV)/bin
# Debian packages: a C toolchain, the libraries the kernels link, and the real tools boardlab drives or
# compares against (stress-ng, cyclictest from rt-tests, perf, xz/bzip2/pbzip2/zstd, openssl, mbw, hyperfine).
DEB_PACKAGES := build-essential pkg-config python3 python3-venv python3-dev \
	liblzma-dev libbz2-dev libzstd-dev zlib1g-dev libssl-dev \
	stress-ng rt-tests linux-perf xz-utils bzip2 pbzip2 zstd openssl mbw hyperfine libgsm-tools chromium
# make test-arm: Debian's cross compilers and C libraries for armhf and arm64, qemu-user to run
# their binaries, debootstrap for an armhf root filesystem. Only test-arm and .ci/run need them, not a board.
ARM_DEB_PACKAGES := gcc-arm-linux-gnueabihf gcc-aarch64-linux-gnu libc6-dev-armhf-cross libc6-dev-arm64-cross \
	qemu-user-static debootstrap debian-archive-keyring
# Per platform, what PyPI has wheels for: everything on x86-64 and aarch64. On 32-bit ARM (a BeagleBone,
# a Pi with a 32-bit OS) numpy, scipy, pyarrow, onnxruntime and ai-edge-litert publish no wheel: numpy and
# scipy come from Debian through a venv with the system's site packages, ninja from Debian, and the AI and
# Parquet parts say they are unsupported there, with the reason and the fix.
MACHINE := $(shell uname -m)
ifneq ($(filter $(MACHINE),x86_64 aarch64 arm64),)
EXTRAS := test,analysis,ai
# the PostgreSQL store of a lab server (boardlab ingest) and labgrid for `boardlab fleet run`: psycopg's binary
# wheel and grpcio exist for these only
EXTRAS := $(EXTRAS),fleet
# `boardlab serve`, the lab's web view of a store: Starlette and uvicorn
EXTRAS := $(EXTRAS),web
VENV_FLAGS :=
PIP_NINJA := ninja
else
EXTRAS := test
VENV_FLAGS := --system-site-packages
PIP_NINJA :=
DEB_PACKAGES += python3-numpy python3-scipy ninja-build
endif
# The data-stream study: fio and iperf3 for `boardlab xcheck`, liburing and OpenBLAS for io.storage/io.net and compute.gemm.
DEB_PACKAGES += fio iperf3 liburing-dev libopenblas-dev
# Vehicle-services study: XML parser of the service roles; anchors sockperf, ddsperf (cyclonedds-tools), wrk, pidstat (sysstat).
DEB_PACKAGES += libexpat1-dev sockperf cyclonedds-tools wrk sysstat
# Shared results: the PostgreSQL server the store tests start on loopback (initdb, pg_ctl) and a lab server runs.
DEB_PACKAGES += postgresql
# Program workloads: the programs the bundled parsers read (7-Zip's 7zz, ffmpeg, sysbench; openssl is above).
DEB_PACKAGES += 7zip ffmpeg sysbench
# fleet runs' tests: fake boards are network namespaces (iproute2) running Debian's sshd (openssh-server).
DEB_PACKAGES += openssh-server iproute2
# Vehicle-services study: svc.sub's parser=libxml2.
DEB_PACKAGES += libxml2-dev
# The SciMark cross-check (bench/bench_scimark.py): callgrind counts the instructions of both kernels.
DEB_PACKAGES += valgrind
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: setup deb venv install demo test test-unit fuzz bench lint clean deb-arm cross test-arm test-arm-kern test-arm-rootfs test-arm-system test-fresh bundle

setup: deb install

# Installs only missing packages, and only as root; otherwise says what is missing and goes on.
deb:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "setup: Debian packages present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "setup: installing $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "setup: WARNING: missing Debian packages (run as root, or: sudo apt-get install $$missing)"; fi

$(BIN)/python:
	$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)

BUILD_TOOLS := 'meson-python>=0.15' 'meson>=1.1' $(PIP_NINJA)
venv: $(BIN)/python
	@$(PIP) install $(BUILD_TOOLS)

# A real (non-editable) install: boardlab-kern is built by meson and installed inside the package. Built again
# only when a file it is built from changed since the last install (a stamp in the venv): `make test` then
# `make test-arm-kern` build it once.
INSTALLED := $(VENV)/.boardlab-installed
INSTALL_SOURCES := $(shell find src -type f -not -path '*/__pycache__/*' 2>/dev/null) pyproject.toml meson.build Makefile
install: $(INSTALLED)
	@echo "setup: boardlab $$($(BIN)/boardlab --version | cut -d' ' -f2) installed in $(VENV)"

$(INSTALLED): $(BIN)/python $(INSTALL_SOURCES)
	@$(PIP) install $(BUILD_TOOLS)
	@PATH="$(abspath $(BIN)):$$PATH" $(PIP) install --no-build-isolation '.[$(EXTRAS)]'
	@touch $@

# The main job: this board's inventory, the quick campaign (resumable: run it again to finish it), a report.
DEMO_DB ?= demo.db
demo: setup
	$(BIN)/boardlab info
	$(BIN)/boardlab run --preset quick --db $(DEMO_DB)
	$(BIN)/boardlab report --db $(DEMO_DB) -o report.html
	@echo "report: $(abspath report.html)  (results: $(abspath $(DEMO_DB)))"
	@echo "browse the results: $(BIN)/boardlab serve --db '$(abspath $(DEMO_DB))'  then open http://127.0.0.1:8080/"

# The suite in two parts, both always run (the exit status is the first failure's). Most tests check behaviour,
# not speed, and spend much of their time waiting on the processes and servers they start: they run on
# TEST_WORKERS processes at once (pytest-xdist; a whole file per worker, so a module's fixtures are built once),
# which took the suite from 19 to 12 minutes on two cores. The tests marked `quiet` assert on the size of a real
# effect (a planted slowdown, a shaped link's rate) that a busy machine changes: they run after, alone. One CPU
# (or TEST_WORKERS=0): everything in one process. The slowest tests close each part's output: the suite must
# stay within CI's 20 minutes.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 if len(os.sched_getaffinity(0)) > 1 else 0)' 2>/dev/null || echo 0)
# The quick tier: tests/unit without the files marked `spawns` and the tests marked `slow`, on TEST_WORKERS
# processes (a whole file per worker) that start none: in each, conftest.py makes any fork or exec fail once
# it has read boardlab-kern's catalog. Its tests are CPU-bound, so two workers take it from 58-64 s to
# 37-41 s on two cores. For the edit-test loop; `make test` runs everything. The labgrid and anyio plugins
# (1.5 s to load) serve no unit test.
test-unit: install
	@BOARDLAB_TEST_UNIT=1 $(BIN)/python -m pytest -q -p no:cacheprovider -p no:labgrid -p no:anyio \
		--durations=10 -n $(TEST_WORKERS) --dist loadfile -m "not spawns and not quiet and not slow" tests/unit

# No test uses the labgrid or anyio pytest plugins (fleet tests drive labgrid's own programs): not loaded,
# they are 1.3 s less in each pytest process (the controller, each worker, the quiet run).
NO_PLUGINS := -p no:labgrid -p no:anyio
test: setup
	@rc=0; \
	$(BIN)/python -m pytest -q $(NO_PLUGINS) --durations=30 -n $(TEST_WORKERS) --dist loadfile \
		-m "not quiet" || rc=$$?; \
	echo "== the quiet tests, alone"; \
	$(BIN)/python -m pytest -q $(NO_PLUGINS) --durations=10 -m quiet \
		|| { q=$$?; [ $$rc != 0 ] || rc=$$q; }; \
	exit $$rc

# Long fuzzing, not in CI: FUZZ_EXAMPLES per target (the plan parser, the worker reader, the store's readers
# over a damaged database, the renderers, boardlab serve's routes), fresh random seeds each time, one pytest per target at once (each
# is one process's work). Prints the count and rate per target; a failure prints the falsifying example and
# its @reproduce_failure line, and make fuzz fails. `make test` runs a few thousand.
FUZZ_EXAMPLES ?= 100000
FUZZ_TARGETS = worker_reader plan_parser store_readers renderers serve_routes
fuzz: setup
	@pids=""; for t in $(FUZZ_TARGETS); do \
	  BOARDLAB_FUZZ=1 BOARDLAB_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -p no:cacheprovider \
	    tests/unit/test_fuzz.py -k "test_fuzz_$$t" & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	if [ $$rc = 0 ]; then echo "fuzz: every target passed"; else echo "fuzz: a target failed (see above)"; fi; \
	exit $$rc

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# ruff and mypy for Python and clang-format for the C (.clang-format), at the versions the test extra pins
# (pre-commit runs the same from the venv: one version everywhere, so a new release's rules never fail a commit
# that passed); the C built on its own with -Wall -Wextra -Werror. Offline once `make install` has put the test
# extra in the venv: pip finds the pins already satisfied.
LINT_PINS = $(shell $(BIN)/python -c 'import tomllib; t = tomllib.load(open("pyproject.toml", "rb")); print(" ".join(__import__("shlex").quote(r) for r in t["project"]["optional-dependencies"]["test"] if r.split("=")[0] in ("ruff", "mypy", "clang-format")))')
C_SOURCES = $(wildcard src/boardlab/kern/*.c src/boardlab/kern/*.h src/boardlab/stats/*.c)
lint: venv
	@$(PIP) install $(LINT_PINS)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/clang-format --dry-run --Werror $(C_SOURCES)
	rm -rf build-lint
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/meson setup build-lint -Dwerror=true -Dwarning_level=2 >/dev/null
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/ninja -C build-lint
	rm -rf build-lint
	$(BIN)/mypy

# ---- ARM boards: cross builds of boardlab-kern, its tests under qemu-user, a bundle in an armhf rootfs ----
# The target's libraries (liblzma, bzip2, zstd, zlib, OpenSSL) are unpacked from Debian's repository into a
# sysroot in ~/.cache/boardlab-cross by cross/sysroot.sh (no root needed; cross/sysroot.sh says why not
# multiarch); multiarch -dev packages (libssl-dev:armhf ...) are used instead when installed.
CROSS_BUILD ?= build-arm
ARM_ROOTFS ?= /var/cache/boardlab-test/rootfs-armhf
# The same with a compiler and the -dev packages: the source tree's `make install` on a 32-bit ARM board.
ARM_ROOTFS_DEV ?= /var/cache/boardlab-test/rootfs-armhf-dev
ARM_DEV_PACKAGES := make,build-essential,pkg-config,python3-dev,liblzma-dev,libbz2-dev,libzstd-dev,zlib1g-dev,libssl-dev,python3-numpy,python3-scipy,ninja-build
deb-arm:
	@$(MAKE) --no-print-directory deb DEB_PACKAGES="$(ARM_DEB_PACKAGES)"

# armhf is tuned for the BeagleBone Black's Cortex-A8 with NEON (cross/cortex-a8.ini); arm64 is baseline ARMv8-A.
cross: deb-arm venv
	@PATH="$(abspath $(BIN)):$$PATH" cross/build.sh armhf $(CROSS_BUILD)/armhf cortex-a8 >/dev/null
	@PATH="$(abspath $(BIN)):$$PATH" cross/build.sh arm64 $(CROSS_BUILD)/arm64 >/dev/null
	@echo "cross: $(CROSS_BUILD)/armhf and $(CROSS_BUILD)/arm64 built"

# Every kernel test (verification, --corrupt, the timer self-test, --list --json) against the cross-built
# binaries under qemu-user. Only correctness is checked: timings under emulation mean nothing. The two
# architectures run at once (one emulator each keeps a core busy; one after the other kept CI over 20 minutes),
# each into its own log, printed whole once both end.
test-arm-kern: install cross
	@logs=$$(mktemp -d); pids=""; for arch in armhf arm64; do \
		BOARDLAB_KERN="$(abspath $(CROSS_BUILD))/$$arch/boardlab-kern-qemu" \
			$(BIN)/python -m pytest -q -p no:cacheprovider tests/kern/ > $$logs/$$arch.log 2>&1 & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	for arch in armhf arm64; do \
		echo "== boardlab-kern $$arch under qemu-user: checking correctness only; timings under emulation mean nothing"; \
		cat $$logs/$$arch.log; \
	done; rm -rf $$logs; exit $$rc

# The bundle installed in a Debian armhf root filesystem (debootstrap, run through qemu-user binfmt; no
# compiler, no network): boardlab --help, info, a two-workload campaign, a report. Then `make install` from
# the source tree in a second tree with a compiler (numpy/scipy from Debian). Root only.
test-arm-rootfs: install cross
	@if [ "$$(id -u)" != 0 ]; then echo "test-arm-rootfs: needs root (debootstrap, chroot, binfmt_misc); skipped"; exit 1; fi
	@echo "== Debian armhf root filesystem under qemu-user: checking correctness only; timings under emulation mean nothing"
	cross/rootfs.sh armhf $(ARM_ROOTFS)
	cross/rootfs.sh armhf $(ARM_ROOTFS_DEV) $(ARM_DEV_PACKAGES)
	BOARDLAB_ARM_ROOTFS=$(ARM_ROOTFS) BOARDLAB_ARM_KERN="$(abspath $(CROSS_BUILD))/armhf/src/boardlab/kern/boardlab-kern" \
	BOARDLAB_ARM_ROOTFS_DEV=$(ARM_ROOTFS_DEV) \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/integration/test_arm_rootfs.py tests/integration/test_arm_rootfs_setup.py

test-arm: test-arm-kern test-arm-rootfs

# A booted ARM Linux (tests/integration/test_arm_system.py): Debian 12 root filesystems for arm64 and armhf with
# Debian's own kernel and initramfs (linux-image-arm64, linux-image-armmp-lpae), python3-venv and no compiler,
# cached in ARM_SYSTEM_ROOTFS-ARCH; each booted in a full-system qemu (KVM off, no network device, a deadline)
# with the board bundle and cross/system-guest.sh as init, which installs it and runs info, list, a quick campaign
# cut by ARM_SYSTEM_RUN_ARGS, report, export and restore, and captures the fixture tree; the host checks what
# the guest wrote (ARM_SYSTEM_OUT/ARCH). Root only; not in CI.
ARM_SYSTEM_ROOTFS ?= /var/cache/boardlab-test/system
ARM_SYSTEM_OUT ?= $(CROSS_BUILD)/system
ARM_SYSTEM_RUN_ARGS ?= --repetitions 1 --scale 0.2
ARM_SYSTEM_DEADLINE_S ?= 1800
# what the virt machine's root disk needs before the root is mounted (cross/rootfs.sh INITRAMFS_MODULES)
ARM_SYSTEM_INITRAMFS ?= virtio_mmio virtio_blk ext4 crc32c_generic virtio_rng
test-arm-system: install cross
	@if [ "$$(id -u)" != 0 ]; then echo "test-arm-system: needs root (debootstrap, binfmt_misc, the root filesystem's files)"; exit 1; fi
	@$(MAKE) --no-print-directory deb DEB_PACKAGES="qemu-system-arm e2fsprogs"
	@echo "== Debian 12 booted in qemu-system (TCG): checking correctness only; timings under emulation mean nothing"
	@# the two trees side by side: each second stage is one emulated process at a time, and there are two cores
	@export INITRAMFS_MODULES="$(ARM_SYSTEM_INITRAMFS)"; \
	cross/rootfs.sh arm64 $(ARM_SYSTEM_ROOTFS)-arm64 linux-image-arm64 & a=$$!; \
	cross/rootfs.sh armhf $(ARM_SYSTEM_ROOTFS)-armhf linux-image-armmp-lpae & b=$$!; \
	rc=0; wait $$a || rc=1; wait $$b || rc=1; exit $$rc
	BOARDLAB_ARM_SYSTEM_ROOTFS=$(ARM_SYSTEM_ROOTFS) BOARDLAB_ARM_SYSTEM_KERN="$(abspath $(CROSS_BUILD))" \
	BOARDLAB_ARM_SYSTEM_OUT="$(abspath $(ARM_SYSTEM_OUT))" BOARDLAB_ARM_SYSTEM_RUN_ARGS="$(ARM_SYSTEM_RUN_ARGS)" \
	BOARDLAB_ARM_SYSTEM_DEADLINE_S=$(ARM_SYSTEM_DEADLINE_S) \
		$(BIN)/python -m pytest -q -s -p no:cacheprovider tests/integration/test_arm_system.py

# The README's two commands on a fresh Debian 12 machine (tests/fresh.sh): `make demo` then `make test` in a
# debootstrap'd bookworm with only git, make and python3 added, the clone in root's 0700 home; then `make test`
# again where `ip netns` cannot work, which must pass with skips naming the reason. Root only; about an hour on
# two cores (every Debian and PyPI package is installed from scratch twice), so not in CI.
test-fresh:
	@if [ "$$(id -u)" != 0 ]; then echo "test-fresh: needs root (debootstrap, mounts, chroot)"; exit 1; fi
	@$(MAKE) --no-print-directory deb DEB_PACKAGES="debootstrap debian-archive-keyring git"
	tests/fresh.sh
	tests/fresh.sh --no-netns

# A board bundle (docs/boards.md): make bundle BUNDLE_ARCH=armhf|arm64 -> boardlab-ARCH.tar.gz here.
BUNDLE_ARCH ?= armhf
bundle: install cross
	$(BIN)/boardlab bundle --arch $(BUNDLE_ARCH) --out boardlab-$(BUNDLE_ARCH).tar.gz

clean:
	rm -rf $(VENV) build build-lint $(CROSS_BUILD) .mesonpy-* .pytest_cache
