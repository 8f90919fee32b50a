"""The GGUF file llama.cpp loads for a model and a PEFT LoRA adapter (``gguf_for``).

llama.cpp does not load PEFT adapters, so the adapter is merged into a GGUF built once and cached
under ``<cache root>/models/gguf`` by the hashes of the source file and the adapter: each tensor the
adapter touches is dequantised, gets PEFT's own delta (``get_delta_weight``, in llama.cpp's row order
for q/k), and is stored as Q8_0; the others are copied as they are. ``quant: q8_0`` (default)
re-quantises every linear weight of a plain model too (Q4_1's prefill is about half as fast);
``original`` keeps the file's own types.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.files import sha256_file

log = logging.getLogger("lazymem.llm")

QUANTS = ("q8_0", "original")
_FORMAT = 1  # bump when the GGUF build changes


def gguf_source(model: str) -> tuple[Path, str]:
    """(GGUF file, Hugging Face directory with its config and tokenizer) for a model name."""
    from lazymem.llm.models import SMOLLM2_ALIAS, resolve_model, smollm2_gguf

    if model == SMOLLM2_ALIAS:
        return smollm2_gguf(), resolve_model(model)
    p = Path(model).expanduser()
    if p.suffix == ".gguf" and p.is_file():
        return p, str(p.parent)
    raise ConfigError(
        f"LLMConfig.model={model!r}: backend 'llamacpp' takes 'smollm2-offline' or a .gguf file "
        "(with the Hugging Face tokenizer files in its folder)"
    )


def _permute(w: Any, n_head: int) -> Any:
    """Hugging Face's q/k rows in llama.cpp's rotary order (convert_hf_to_gguf's LlamaModel.permute)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _lora_deltas(hf_dir: str, adapter: str) -> dict[str, Any]:
    """{Hugging Face weight name: float32 delta (out, in)} of a PEFT LoRA, by PEFT's own arithmetic."""
    import torch
    from peft import PeftModel
    from peft.tuners.lora import LoraLayer
    from transformers import AutoModelForCausalLM

    from lazymem.llm.models import resolve_adapter

    base = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    try:
        model = PeftModel.from_pretrained(base, resolve_adapter(adapter))
    except (OSError, ValueError) as e:
        raise ConfigError(f"adapter {adapter!r} could not be loaded on {hf_dir}: {e}") from e
    out = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, LoraLayer) and "default" in getattr(module, "lora_A", {}):
                key = name.replace("base_model.model.", "", 1) + ".weight"
                out[key] = module.get_delta_weight("default").float().cpu().numpy()
    if not out:
        raise ConfigError(f"adapter {adapter!r}: no LoRA layers found")
    return out


def _build_gguf(src: Path, hf_dir: str, adapter: str | None, quant: str, dest: Path) -> None:
    """Write ``dest``: ``src``'s metadata and tensors, with the adapter merged and/or Q8_0 weights."""
    import numpy as np
    from gguf import MODEL_ARCH, GGUFReader, GGUFValueType, GGUFWriter, Keys, TensorNameMap
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize, quantize

    reader = GGUFReader(str(src))
    arch = reader.fields[Keys.General.ARCHITECTURE].contents()
    if arch != "llama" and adapter:
        raise ConfigError(f"{src.name}: merging an adapter is implemented for llama-architecture GGUFs, not {arch!r}")
    n_block = int(reader.fields[f"{arch}.block_count"].contents())
    n_head = int(reader.fields[f"{arch}.attention.head_count"].contents())
    n_kv = int(reader.fields[f"{arch}.attention.head_count_kv"].contents())
    deltas: dict[str, Any] = {}
    if adapter:
        names = TensorNameMap(MODEL_ARCH.LLAMA, n_block)
        for hf_name, d in _lora_deltas(hf_dir, adapter).items():
            gg = names.get_name(hf_name, try_suffixes=(".weight",))
            if gg is None:
                raise ConfigError(f"adapter {adapter!r}: no GGUF tensor for {hf_name}")
            if gg.endswith("attn_q.weight"):
                d = _permute(d, n_head)
            elif gg.endswith("attn_k.weight"):
                d = _permute(d, n_kv)
            deltas[gg] = d
    writer = GGUFWriter(str(dest), arch)
    for field in reader.fields.values():
        if field.name == Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        writer.add_key_value(
            field.name, field.contents(), vtype, sub_type=field.types[-1] if vtype == GGUFValueType.ARRAY else None
        )
    tensors = []
    for t in reader.tensors:
        linear = t.name.startswith("blk.") and t.name.endswith(".weight") and len(t.shape) == 2
        if t.name in deltas or (quant == "q8_0" and linear and t.tensor_type != Q.Q8_0):
            w = dequantize(t.data, t.tensor_type).astype(np.float32)
            if t.name in deltas:
                if deltas[t.name].shape != w.shape:
                    raise ConfigError(f"adapter delta for {t.name} has shape {deltas[t.name].shape}, tensor {w.shape}")
                w = w + deltas.pop(t.name)
            data = quantize(w, Q.Q8_0) if w.shape[-1] % 32 == 0 else w
            kind = Q.Q8_0 if w.shape[-1] % 32 == 0 else Q.F32
        else:
            data, kind = t.data, t.tensor_type
        writer.add_tensor_info(t.name, data.shape, data.dtype, data.nbytes, kind)
        tensors.append(data)
    if deltas:
        raise ConfigError(f"adapter tensors without a GGUF counterpart: {sorted(deltas)[:5]}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in tensors:
        writer.write_tensor_data(data)
    writer.close()


def gguf_for(model: str, adapter: str | None = None, quant: str = "q8_0", root: Path | None = None) -> Path:
    """The GGUF llama.cpp loads for (model, adapter, quant): the source file itself when nothing
    changes, else a build cached by source and adapter hashes (safe under concurrent first uses)."""
    from filelock import FileLock

    from lazymem.llm.base import _adapter_identity
    from lazymem.paths import cache_root

    if quant not in QUANTS:
        raise ConfigError(f"llamacpp quant {quant!r}: must be one of {QUANTS}")
    src, hf_dir = gguf_source(model)
    if adapter is None and quant == "original":
        return src
    tag = hashlib.sha256(
        json.dumps([_FORMAT, sha256_file(src), _adapter_identity(adapter) if adapter else None, quant]).encode()
    ).hexdigest()[:16]
    dest = (root or cache_root() / "models" / "gguf") / f"{src.stem}-{quant}-{tag}.gguf"
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock"):
        if dest.is_file():
            return dest
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.stem}.", suffix=".gguf", dir=dest.parent)
        os.close(fd)
        t0 = time.perf_counter()
        try:
            _build_gguf(src, hf_dir, adapter, quant, Path(tmp))
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        log.info("built %s in %.1f s", dest.name, time.perf_counter() - t0)
    return dest
