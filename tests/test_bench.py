"""lazymem bench pipeline / embedding: the real pipeline, real engines and real processes on tiny inputs.

Timings are recorded, never asserted (shared machines are noisy): the tests check that every
engine ran the same questions, that the numbers and comparisons are there and consistent, and
that what cannot run says why.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from lazymem.bench.pipeline import LLAMACPP_MISSING, bench_pipeline, cold_warm, engines


def tiny_config(tmp_path, model: str, **pipeline) -> str:
    import yaml

    cfg = {
        "dataset": "synthetic:messages=60,seed=0,histories=1,questions=3",
        "limit": 2,
        "judge": "none",
        "pipeline": {
            "method": "lazymem",
            "structured": True,
            "schema_max_content": 4,
            "schema_max_reason": 0,
            "retrieval": {"n": 2, "sparse": "bm25s", "dense_model": None},
            "window": {"w": 1, "L": 3, "s": 2},
            "mpm": {"backend": "transformers", "model": model, "batch_size": 2},
            "mpm_sampling": {"temperature": 0.0, "max_tokens": 100},
            "answer": {"backend": "transformers", "model": model},
            "answer_sampling": {"temperature": 0.0, "max_tokens": 8},
            **pipeline,
        },
    }
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_bench_pipeline_runs_each_engine_on_the_same_questions(tiny_model, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    out = tmp_path / "bench_pipeline.json"
    res = bench_pipeline(
        tiny_config(tmp_path, tiny_model),
        limit=1,
        threads=1,
        do_cold_warm=False,
        out=out,
        engine_names=["transformers_sequential", "transformers_batched", "llamacpp"],
        figure_dir=tmp_path / "fig",
        progress=False,
    )
    assert json.loads(out.read_text())["questions"] == res["questions"] == 1
    seq, bat = res["engines"]["transformers_sequential"], res["engines"]["transformers_batched"]
    assert (seq["batch_size"], bat["batch_size"]) == (1, 2)
    assert res["engines"]["llamacpp"] == {"skipped": LLAMACPP_MISSING}  # says why, and how to get it
    for e in (seq, bat):
        assert len(e["per_question"]) == 1 and not e["errors"]
        assert e["windows"] > 0 and e["gate_ok"] == e["windows"]  # constrained decoding: every window valid
        assert all(e["stages"][k]["n"] == 1 for k in ("retrieval", "processing", "answer", "total"))
        assert e["stages"]["processing"]["mean"] > 0 and e["stages"]["answer"]["mean"] > 0
    # the reference is the batched transformers engine (the pipeline's default), whatever the order
    assert res["reference"] == "transformers_batched" and res["speedup"]["transformers_batched"] == 1.0
    agree = res["agreement_with_reference"]["transformers_sequential"]
    assert agree["windows"] == bat["windows"] == seq["windows"] and agree["questions"] == 1
    assert res["figure"]["html"].endswith("bench_pipeline.html")


def test_bench_pipeline_refuses_what_it_cannot_compare(tiny_model, tmp_path):
    cfg = tiny_config(tmp_path, tiny_model)
    with pytest.raises(ValueError, match="unknown engine.*'vllm'"):
        bench_pipeline(cfg, engine_names=["vllm"], do_cold_warm=False, out=None, figure_dir=None, progress=False)
    with pytest.raises(ValueError, match="method 'rag' has no memory-processing model"):
        bench_pipeline(
            cfg, overrides=["pipeline.method=rag"], do_cold_warm=False, out=None, figure_dir=None, progress=False
        )


def test_cold_warm_runs_the_eval_twice_in_fresh_processes_on_one_new_cache(tiny_model, tmp_path):
    res = cold_warm(tiny_config(tmp_path, tiny_model), ["limit=1"], progress=False)
    assert res["same_records"] is True  # the warm run found every call in the cache the cold one filled
    assert res["cold_s"] > 0 and res["warm_s"] > 0
    assert res["ratio"] == pytest.approx(res["cold_s"] / res["warm_s"], rel=0.05)
    with pytest.raises(RuntimeError, match=r"the cold `lazymem eval .*` failed \(exit 2\).*no-such"):
        cold_warm(tiny_config(tmp_path, tiny_model), ["dataset=/no-such/file.json"], progress=False)


def test_engine_table_gives_every_engine_the_same_threads():
    table = engines(4, 8)
    assert {e["num_threads"] for e in table.values()} == {4}
    assert table["llamacpp_parallel"]["batch_size"] == 4 and table["transformers_batched"]["batch_size"] == 8


def test_bench_pipeline_on_llamacpp_with_the_shipped_adapter(tmp_path):
    pytest.importorskip("llama_cpp")
    res = bench_pipeline(
        "configs/eval/demo.yaml",
        overrides=["pipeline.mpm_sampling.max_tokens=48"],
        limit=1,
        engine_names=["llamacpp", "llamacpp_parallel", "llamacpp_batched"],
        do_cold_warm=False,
        out=tmp_path / "b.json",
        figure_dir=None,
        progress=False,
    )
    one, par = res["engines"]["llamacpp"], res["engines"]["llamacpp_parallel"]
    assert one["windows"] == par["windows"] > 0 and not one["errors"] and not par["errors"]
    # instances side by side, and one batch of windows, decode each window as one instance does (greedy, same GGUF)
    for name in ("llamacpp_parallel", "llamacpp_batched"):
        agree = res["agreement_with_reference"][name]
        assert agree["identical_memories"] == agree["questions"] == 1, name
    # each engine's tokens and its one-sequence limit, from the measured rates
    rates, bound = res["rates"], one["decode_bound"]
    assert rates["prefill_tokens_per_s"] > 0 and rates["decode_s_per_token"] > 0
    q = one["per_question"][0]
    assert bound["generated_tokens"] == q["generated_tokens"] > 0
    assert 0 < q["evaluated_prompt_tokens"] <= q["prompt_tokens"]
    want = (
        q["generated_tokens"] * rates["decode_s_per_token"]
        + q["evaluated_prompt_tokens"] / rates["prefill_tokens_per_s"]
    )
    assert bound["limit_s"] == pytest.approx(want, abs=0.01)
    # a step of several sequences, measured on the batched engine's context: dearer than one, cheaper a token
    steps = rates["step_s_by_sequences"]
    assert list(steps) == ["1", "2", "4", "8", "12"] and all(v > 0 for v in steps.values())
    assert steps["8"] > steps["1"] and steps["8"] / 8 < steps["1"]
    assert bound["batched_floor_s"] <= bound["limit_s"]


def test_decode_bound_is_tokens_at_the_measured_rates():
    from lazymem.bench.pipeline import decode_bound

    stats = {
        "per_question": [
            {"generated_tokens": 100, "evaluated_prompt_tokens": 600, "prompt_tokens": 900},
            {"generated_tokens": 300, "evaluated_prompt_tokens": 200, "prompt_tokens": 900},
        ],
        "stages": {"processing": {"mean": 6.0}},
    }
    b = decode_bound(stats, {"decode_s_per_token": 0.01, "prefill_tokens_per_s": 400.0})
    assert (b["decode_s"], b["prefill_s"], b["limit_s"], b["processing_over_limit"]) == (2.0, 1.0, 3.0, 2.0)
    assert "batched_floor_s" not in b  # rates without a batch curve
    # the cheapest seconds a token over the measured batch sizes: 4 sequences in 0.02 s, 0.005 s a token
    curve = {"decode_s_per_token": 0.01, "prefill_tokens_per_s": 400.0, "step_s_by_sequences": {"1": 0.01, "4": 0.02}}
    b = decode_bound(stats, curve)
    assert (b["batched_floor_s"], b["batched_floor_sequences"], b["processing_over_batched_floor"]) == (2.0, 4, 3.0)
    stats["per_question"][0]["generated_tokens"] = None  # an engine that does not count: no limit, not 0
    assert decode_bound(stats, {"decode_s_per_token": 0.01, "prefill_tokens_per_s": 400.0}) is None


def test_bench_pipeline_takes_a_results_table_cell_and_names_the_choices(capsys):
    from lazymem.cli import main

    rc = main(["bench", "pipeline", "--config", "configs/tables/main_table_locomo.yaml", "--cell", "locomo_paper/nope"])
    err = capsys.readouterr().err
    assert rc != 0 and "--cell 'locomo_paper/nope'" in err and "lazymem_135m_v2_v6_content" in err, err


def test_bench_embedding_compares_orders_batches_and_the_query_path(shared_data, tmp_path):
    from lazymem.bench.embedding import bench_embedding

    res = bench_embedding(
        n_texts=24,
        batch_sizes=(8, 24),
        threads=(1,),
        n_queries=4,
        longmemeval_path=shared_data / "longmemeval" / "s_fragment_3haystacks.json",
        out=tmp_path / "e.json",
        progress=False,
    )
    assert res["texts"] == 24 and res["source"].startswith("longmemeval_s")
    assert {(r["batch_size"], r["order"]) for r in res["documents"]} == {
        (8, "sorted"),
        (8, "unsorted"),
        (24, "sorted"),
        (24, "unsorted"),
    }
    assert set(res["sorted_over_unsorted"]) == {"1t/b8", "1t/b24"} and res["best"] in res["documents"]
    q = res["query"]
    assert all(
        q[k]["n"] == 4
        for k in (
            "bare_encode_torch_threads",
            "bare_encode_1_thread",
            "dense_encoder_encode_queries",
            "retriever_dense_encode",
        )
    )
    assert q["retriever_over_bare_1_thread"] > 0 and json.loads((tmp_path / "e.json").read_text())["texts"] == 24
