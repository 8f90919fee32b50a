"""Package-level promises: a light import and a working CLI entry point."""
import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "sentence_transformers", "pandas", "FlagEmbedding", "vllm", "bm25s", "rank_bm25")


def test_import_loads_no_heavy_library():
    code = ("import sys, pkgutil, importlib, lazymem\n"
            "mods = [m.name for m in pkgutil.iter_modules(lazymem.__path__)]\n"
            "for m in mods: importlib.import_module('lazymem.' + m)\n"
            f"print([h for h in {HEAVY!r} if h in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing lazymem modules pulled in {out.strip()}"


def test_cli_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "lazymem.cli", "data", "summary",
                          "synthetic:messages=80,seed=3,histories=1,questions=6", "--json"],
                         capture_output=True, text=True, check=True).stdout
    s = json.loads(out)
    assert s["questions"] == 6 and 60 <= s["messages"] <= 100


def test_cli_error_is_clear_and_nonzero(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"question_id": "a", "question_type": "multi-session", "quest')
    r = subprocess.run([sys.executable, "-m", "lazymem.cli", "data", "summary", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "broken.json" in r.stderr and "Traceback" not in r.stderr
