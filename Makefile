# boardlab: `make demo` installs what is needed and runs the main job; `make test` installs and runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Debian packages: a C toolchain, the libraries the kernels link, and the real tools boardlab drives or
# compares against (stress-ng, cyclictest from rt-tests, perf, xz/bzip2/pbzip2/zstd, openssl, mbw, hyperfine).
DEB_PACKAGES := build-essential pkg-config python3 python3-venv python3-dev \
	liblzma-dev libbz2-dev libzstd-dev zlib1g-dev libssl-dev \
	stress-ng rt-tests linux-perf xz-utils bzip2 pbzip2 zstd openssl mbw hyperfine libgsm-tools chromium
# Vehicle-services study: XML parser of the service roles; anchors sockperf, ddsperf (cyclonedds-tools), wrk, pidstat (sysstat).
DEB_PACKAGES += libexpat1-dev sockperf cyclonedds-tools wrk sysstat
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: setup deb venv install demo test bench lint clean

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
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python
	@$(PIP) install 'meson-python>=0.15' 'meson>=1.1' ninja

# A real (non-editable) install: boardlab-kern is built by meson and installed inside the package.
install: venv
	@PATH="$(abspath $(BIN)):$$PATH" $(PIP) install --no-build-isolation '.[test,analysis,ai]'
	@echo "setup: boardlab $$($(BIN)/boardlab --version | cut -d' ' -f2) installed in $(VENV)"

# The main job: this board's inventory, the quick campaign (resumable: run it again to finish it), a report.
DEMO_DB ?= demo.db
demo: setup
	$(BIN)/boardlab info
	$(BIN)/boardlab run --preset quick --db $(DEMO_DB)
	$(BIN)/boardlab report --db $(DEMO_DB) -o report.html
	@echo "report: $(abspath report.html)  (results: $(abspath $(DEMO_DB)))"

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# ruff for Python; the C built on its own with -Wall -Wextra -Werror.
lint: venv
	@$(PIP) install ruff
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	rm -rf build-lint
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/meson setup build-lint -Dwerror=true -Dwarning_level=2 >/dev/null
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/ninja -C build-lint
	rm -rf build-lint

clean:
	rm -rf $(VENV) build build-lint .mesonpy-* .pytest_cache
