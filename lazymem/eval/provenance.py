"""Where a run's numbers came from: git commit, package versions, timestamps, and the run manifest.

``manifest.json`` holds the resolved config (credentials redacted: API keys never, only
the NAME of their environment variable), git commit, package versions, dataset sha256,
prompt hashes, model ids, the reranker that ran, times and command line of every run into
the folder. Credentials are kept out by ``lazymem.secrets``: the config through ``redact``
(secret names at any depth, values that ``looks_secret``, URL passwords such as a
``base_url``'s ``http://user:<redacted>@host/v1``), each run's ``command`` through
``redact_command`` (``--set KEY=VALUE`` with a secret KEY, or a VALUE holding a credential in
any form ``--set`` accepts: scalar, YAML / JSON flow mapping or sequence; URL passwords;
``--api-key``-like flags), and the whole file, as every file of the run folder, through the
runner's ``Masker`` (known key values, secret-looking strings, URL passwords).

>>> package_versions(["surely-not-installed-xyz"])
{'surely-not-installed-xyz': None}
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lazymem.runinfo import git_commit
from lazymem.runinfo import package_versions as _package_versions
from lazymem.secrets import redact, redact_command

if TYPE_CHECKING:
    from lazymem.eval.config import EvalConfig
    from lazymem.records import Dataset

MANIFEST_PACKAGES = (
    "lazymem",
    "numpy",
    "torch",
    "transformers",
    "tokenizers",
    "sentence-transformers",
    "rank-bm25",
    "bm25s",
    "FlagEmbedding",
    "openai",
    "outlines",
    "vllm",
    "nltk",
    "tqdm",
    "pyyaml",
)


def package_versions(names: Sequence[str] = MANIFEST_PACKAGES) -> dict[str, str | None]:
    """Installed version of each manifest distribution (None when not installed), read without importing it."""
    return _package_versions(names)


def new_manifest(
    config: EvalConfig,
    dataset: Dataset,
    n_selected: int,
    fingerprint: str,
    cache_dir: str | None,
    clients: Mapping | None,
    old_manifest: Mapping | None,
    run_info: dict,
) -> dict:
    """The manifest of a run starting now (earlier runs into the same folder are kept in ``runs``)."""
    from lazymem.prompts import prompt_hashes

    # In place: the runner keeps updating this very dict (end, status), which the manifest lists.
    if run_info.get("command") is not None:
        run_info["command"] = redact_command(run_info["command"])
    old_runs = [
        dict(r, command=redact_command(r["command"])) if isinstance(r, Mapping) and r.get("command") else r
        for r in (old_manifest or {}).get("runs") or []
    ]  # runs recorded before this rule
    p = config.pipeline
    judged = p.judge is not None and config.judge != "none"
    from lazymem.pipeline.methods import method_class

    mpm = method_class(p.method).uses_mpm
    merged = {"merged_from": old_manifest["merged_from"]} if (old_manifest or {}).get("merged_from") else {}
    return {
        "config": redact(config.to_dict()),
        "config_sha256": fingerprint,
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "packages": package_versions(),
        "dataset": {
            "spec": config.dataset,
            "subset": config.subset,
            "name": dataset.name,
            "source": dataset.source,
            "sha256": dataset.sha256,
            "questions_total": len(dataset.questions),
            "selected": n_selected,
            "load_issues": len(dataset.issues),
            **(
                {"errata": {"source": dataset.errata_source, "sha256": dataset.errata_sha256}}
                if dataset.errata_sha256
                else {}
            ),
        },
        "prompt_hashes": prompt_hashes(),
        "models": {
            "mpm": p.mpm.model if mpm else None,
            "answer": p.answer.model,
            "judge": p.judge.model if judged else None,
        },
        "backends": {
            "mpm": p.mpm.backend if mpm else None,
            "answer": p.answer.backend,
            "judge": p.judge.backend if judged else None,
        },
        "injected_clients": sorted(clients or {}),
        "retrieval": {
            "sparse": p.retrieval.sparse,
            "dense_model": p.retrieval.dense_model,
            "reranker_config": p.retrieval.reranker,
            "reranker_ran": None,
        },
        "llm_cache_dir": cache_dir,
        "runs": old_runs + [run_info],
        "start": (old_manifest or {}).get("start") or run_info["start"],  # of the first run into the folder
        "end": None,
        "status": "running",
        **merged,  # a folder merged from question shards (lazymem merge) keeps where its records came from
    }


def close_manifest(manifest: dict, run_info: dict, status: str, summary: Mapping) -> dict:
    """Fill in how the run ended: end time, status, the reranker that ran, the tokenizer (in place)."""
    manifest["end"] = run_info["end"]
    manifest["status"] = status if summary["counts"]["error"] == 0 or status != "done" else "done_with_errors"
    manifest["retrieval"]["reranker_ran"] = (summary["retrieval"] or {}).get("rerankers")
    manifest["tokenizer"] = summary["memory_tokens"]["tokenizer"]
    return manifest
