# lazymem: two commands on a fresh machine.
#   make demo   create the environment if missing, run the main job on the embedded default (offline, CPU)
#   make test   create the environment if missing, run every test
PYTHON ?= python3
VENV ?= .venv
EXTRAS ?= dev,notebooks,train,rerank
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

.PHONY: demo test test-fast env bench-retrieval clean-env

env: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.installed-*
	@touch $@

demo: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem demo

test: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest tests lazymem --doctest-modules

# everything except tests marked slow (for quick iteration; `make test` runs them all)
test-fast: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest tests lazymem --doctest-modules -m "not slow"

bench-retrieval: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem bench retrieval --out figures/bench_retrieval.json

clean-env:
	rm -rf $(VENV)
