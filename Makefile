# dragnet: `make demo` runs the query-server benchmark on a generated sample; `make test` runs every test.
# Both install what they need (Debian packages as root, a virtualenv, native builds) and are idempotent.

PYTHON ?= python3
VENV := .venv
PY := $(abspath $(VENV))/bin/python
STAMPS := .make
# golang-go: `make servers` builds the load generator (query_servers/loadgen); tests/test_user_servers.py
# also builds a query server written in Go (tests/goqs); valgrind: the gate's instruction counts
APT_PACKAGES := sysstat pypy3 erlang-nox nodejs gcc git golang-go valgrind
# only for `make test`: tests/test_html_report.py opens the HTML report in a headless Chromium
TEST_APT_PACKAGES := chromium chromium-driver
PYTEST_ARGS ?=

# the Debian packages of $(1) that are not installed yet (as root, or with sudo)
define apt_install
@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
if [ -n "$$missing" ]; then \
  echo "installing Debian packages:" $$missing; \
  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
fi
endef

.PHONY: all deps test-deps venv servers test demo clean

all: venv servers

deps: $(STAMPS)/apt
$(STAMPS)/apt: Makefile
	$(call apt_install,$(APT_PACKAGES))
	@# npm fetches Bun (query_servers/bun); a nodejs from elsewhere may bring its own npm. Bun is optional.
	@command -v npm >/dev/null 2>&1 || { SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; echo "installing Debian package: npm"; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; } || \
	  echo "npm could not be installed: the bun query server will be listed as skipped"
	@# inferno draws --profile's flame graphs (crates.io); cargo from Debian where there is none. Optional:
	@# without it the HTML report says so and keeps the folded stacks and stages.
	@PATH="$$PATH:$${CARGO_HOME:-$$HOME/.cargo}/bin:$(abspath .tools)/bin"; \
	if ! command -v inferno-flamegraph >/dev/null 2>&1; then \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  command -v cargo >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq cargo || true; \
	  echo "installing inferno (flame graphs) into .tools"; \
	  cargo install -q inferno --locked --root $(abspath .tools) || \
	    echo "inferno could not be installed: --profile's HTML report will have no flame graph"; \
	fi
	@mkdir -p $(STAMPS) && touch $@

test-deps: $(STAMPS)/apt-test
$(STAMPS)/apt-test: Makefile
	$(call apt_install,$(TEST_APT_PACKAGES))
	@mkdir -p $(STAMPS) && touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: setup.cfg setup.py pyproject.toml
	$(PYTHON) -m venv --clear $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[docker,plot,test]'
	@touch $@

servers: deps venv
	$(MAKE) -C query_servers PYTHON=$(PY)

test: deps test-deps venv servers
	@# the stage order (.importlinter, docs/architecture.md): an import that runs back up fails here
	$(VENV)/bin/lint-imports
	$(PY) -m pytest $(PYTEST_ARGS)

# every query server found here, over the protocol, on 3,000 generated declarations (cached in cache/);
# up to 25 rounds, so the 120 s budget, not 15 rounds, ends a close pair (docs/studies/demo-target.md)
DEMO_ARGS ?= --count 3000 --seed 1 --warmup 1 --max-runs 25
demo: deps venv servers
	$(VENV)/bin/dragnet qsbench $(DEMO_ARGS) --plot

clean:
	rm -rf $(VENV) $(STAMPS) cache
	$(MAKE) -C query_servers clean
