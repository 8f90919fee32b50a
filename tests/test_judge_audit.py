"""``lazymem judge-audit``: the judge's false accepts and false rejects on answers built without a model.

Two scripted judges answer the real judge prompts (LoCoMo's and LongMemEval's) behind a loopback
OpenAI-compatible server, reached through the real OpenAI client: a strict one (correct only when the
normalised response contains the gold answer's words in order) and a lenient one (correct when the
response shares a content word with the gold answer or the question). The audit must measure what
each was built to do: the strict judge accepts no wrong answer and rejects no right one; the lenient
one accepts vague answers that share the question's topic words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lazymem.answers import normalize_answer
from lazymem.cli import main
from lazymem.errors import ConfigError
from lazymem.eval.audit_answers import KINDS, WRONG_KINDS, candidates, shifted
from lazymem.eval.judge_audit import audit, audit_markdown, judge_settings, load_audit_config, wilson
from lazymem.llm import FakeBackend
from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer, content_words
from lazymem.prompts import PROMPTS
from lazymem.records import Question

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = "synthetic-casual"  # LoCoMo's schema and categories, generated
LONGMEMEVAL = "synthetic:messages=200,seed=0,histories=2,questions=8"  # LongMemEval's question types


def read_prompt(prompt: str) -> tuple[str, str, str]:
    """(question, gold answer, response) of a LoCoMo or LongMemEval judge prompt."""
    if "Generated answer: " in prompt:  # LoCoMo: the real question after the prompt's worked example
        tail = prompt.rpartition("Question: ")[2]
        m = re.match(r"(.*)\nGold answer: (.*)\nGenerated answer: (.*)\n", tail)
    else:
        m = re.search(r"Question: (.*)\n\n(?:Correct Answer|Rubric): (.*)\n\nModel Response: (.*)\n\nIs the", prompt)
    assert m, prompt[-300:]
    return m.group(1), m.group(2), m.group(3)


def strict(question: str, gold: str, response: str) -> bool:
    """Correct only when the normalised response holds the gold answer's words, in order."""
    g, r = normalize_answer(gold).split(), normalize_answer(response).split()
    return any(r[i : i + len(g)] == g for i in range(len(r) - len(g) + 1))


def lenient(question: str, gold: str, response: str) -> bool:
    """Correct when the response shares any content word with the gold answer or the question."""
    return bool(content_words(response) & (content_words(gold) | content_words(question)))


def verdict(rule, prompt: str) -> str:
    """The reply of a judge following `rule`, in the format its prompt asks for."""
    ok = rule(*read_prompt(prompt))
    if "Generated answer: " in prompt:
        return json.dumps({"label": "CORRECT" if ok else "WRONG"})
    return "yes" if ok else "no"


def served(rule) -> ScriptedServer:
    """A loopback Qwen3-like server whose judge replies follow `rule`."""
    return ScriptedServer(ScriptedQwen3(reply=lambda messages: verdict(rule, messages[-1]["content"])))


def write_config(tmp_path: Path, dataset: str, judge: str, url: str = "http://127.0.0.1:9/v1") -> Path:
    """An eval recipe whose judge is the served Qwen3-32B of the paper's tables, at `url`."""
    path = tmp_path / f"{judge}.yaml"
    path.write_text(
        f'dataset: "{dataset}"\njudge: {judge}\nllm_cache: false\nworkers: 4\n'
        f"pipeline:\n  judge: {{backend: openai, base_url: '{url}', model: Qwen/Qwen3-32B, max_retries: 0,\n"
        "           chat_template_kwargs: {enable_thinking: false}}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def locomo_audits(tmp_path_factory):
    """The audit of the LoCoMo-shaped set under each scripted judge, run as a user runs it (the CLI)."""
    out = {}
    for name, rule in (("strict", strict), ("lenient", lenient)):
        tmp = tmp_path_factory.mktemp(name)
        with served(rule) as url:
            config = write_config(tmp, LOCOMO, "locomo", url)
            assert main(["judge-audit", "--config", str(config), "--out", str(tmp / "out")]) == 0
        result = json.loads((tmp / "out" / "judge_audit.json").read_text(encoding="utf-8"))
        rows = [json.loads(line) for line in (tmp / "out" / "judge_audit_records.jsonl").read_text().splitlines()]
        out[name] = (result, rows, tmp / "out")
    return out


def test_the_strict_judge_accepts_no_wrong_answer_and_rejects_no_right_one(locomo_audits):
    result, rows, _ = locomo_audits["strict"]
    overall = result["rates"]["all"]
    for column in ("false_accept", "FA vague", "FA specific", "FA abstain", "false_reject", "FR golden"):
        assert overall[column]["rate"] == 0.0 and overall[column]["n"] > 0, column
    assert overall["FR paraphrase"]["rate"] == 0.0
    assert overall["false_accept"]["no_verdict"] == overall["false_reject"]["no_verdict"] == 0
    assert {r["kind"] for r in rows} == set(KINDS)
    assert all(r["label"] is not None for r in rows)


def test_the_lenient_judge_accepts_vague_answers_as_constructed(locomo_audits):
    result, rows, _ = locomo_audits["lenient"]
    for r in rows:  # every verdict is the rule's on the candidate as built
        assert r["label"] is lenient(r["question"], r["gold"], r["text"]), r
    overall = result["rates"]["all"]
    vague = [r for r in rows if r["kind"] == "vague"]
    assert overall["FA vague"]["k"] == sum(r["label"] for r in vague) > 0
    assert overall["FA vague"]["rate"] > locomo_audits["strict"][0]["rates"]["all"]["FA vague"]["rate"]
    wrong = [r for r in rows if r["kind"] in WRONG_KINDS]
    assert overall["false_accept"]["k"] == sum(r["label"] for r in wrong)
    assert overall["false_accept"]["n"] == len(wrong)
    low, high = wilson(overall["false_accept"]["k"], overall["false_accept"]["n"])
    assert (overall["false_accept"]["low"], overall["false_accept"]["high"]) == (low, high)


def test_the_result_names_its_judge_and_skips_questions_without_a_gold_answer(locomo_audits):
    result, rows, out = locomo_audits["strict"]
    judge = result["judge"]
    assert (judge["kind"], judge["model"], judge["chat_template_kwargs"]) == (
        "locomo",
        "Qwen/Qwen3-32B",
        {"enable_thinking": False},
    )
    assert judge["prompts"] == {"locomo_judge": PROMPTS["locomo_judge"].sha256}
    assert result["skipped"] and all("category 5" in why for why in result["skipped"].values())
    assert not {r["question_id"] for r in rows} & set(result["skipped"])
    assert set(result["rates"]) == {"all", "single-hop", "multi-hop", "temporal", "open-domain"}
    md = (out / "judge_audit.md").read_text(encoding="utf-8")
    assert md == audit_markdown(result) and "| all |" in md and "Qwen/Qwen3-32B" in md


def test_judge_settings_redact_the_server_url(tmp_path):
    config = load_audit_config(str(write_config(tmp_path, LONGMEMEVAL, "longmemeval", "http://me:pw-1234@gpu:8001/v1")))
    settings = judge_settings(config, ["longmemeval_judge"])
    assert "pw-1234" not in json.dumps(settings) and settings["base_url"].endswith("@gpu:8001/v1")


def test_longmemeval_types_through_a_client_given_directly(tmp_path):
    """The LongMemEval judge's per-type prompts, with a judge client handed in (no server)."""
    config = load_audit_config(str(write_config(tmp_path, LONGMEMEVAL, "longmemeval")))
    judge = FakeBackend(lambda prompt, sampling: verdict(strict, prompt))
    result, rows = audit(config, client=judge, per_kind=1)
    assert result["rates"]["all"]["false_accept"]["rate"] == 0.0
    assert result["rates"]["all"]["false_reject"]["rate"] == 0.0
    assert len(rows) == len(judge.calls) == 5 * result["questions"]
    assert {"temporal-reasoning", "single-session-preference"} <= set(result["rates"])
    assert set(result["judge"]["prompts"]) >= {"longmemeval_judge", "longmemeval_judge_temporal"}


def test_replies_with_no_verdict_are_counted_never_scored(tmp_path):
    config = load_audit_config(str(write_config(tmp_path, LOCOMO, "locomo")), ["limit=2"])
    result, rows = audit(config, client=FakeBackend(lambda prompt, sampling: "I think it is right."))
    overall = result["rates"]["all"]
    assert overall["false_accept"]["n"] == overall["false_reject"]["n"] == 0
    assert overall["false_accept"]["rate"] is None
    assert overall["false_accept"]["no_verdict"] + overall["false_reject"]["no_verdict"] == len(rows) > 0
    assert "| all | - |" in audit_markdown(result)


def test_candidates_are_reproducible_and_wrong_ones_never_hold_the_gold_answer():
    q = Question("c:q1", "temporal", "When did Iris play her first open mic?", "6 October 2023", "h", category=2)
    pool = {"temporal": ["6 October 2023", "25 July 2023", "last weekend"]}
    first = candidates(q, pool, per_kind=3, seed=7)
    assert first == candidates(q, pool, per_kind=3, seed=7)
    assert [c.kind for c in first][:1] == ["golden"] and first[0].text == q.answer
    specific = [c for c in first if c.kind == "specific"]
    assert specific[0].template == "shifted" and specific[0].text != q.answer  # temporal: the moved date first
    for c in first:
        if c.kind in WRONG_KINDS:
            assert not strict(q.text, q.answer, c.text), c
    assert all(c.kind != "vague" or "Iris" in c.text or "open" in c.text for c in first)


def test_a_day_count_moves_by_more_than_one():
    """LongMemEval's temporal judge forgives off-by-one day counts: a moved count must be wrong for it."""
    import random

    for seed in range(20):
        moved = int(shifted("18 days", random.Random(seed)).split()[0])
        assert abs(moved - 18) >= 2


def test_the_command_has_help_and_refuses_bad_configs(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["judge-audit", "--help"])
    assert e.value.code == 0 and "--per-kind" in capsys.readouterr().out
    assert main(["judge-audit", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert main(["judge-audit", "--config", str(ROOT / "configs" / "eval" / "demo.yaml")]) == 2
    assert "needs a judge" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("judge: locomo\nno_such_key: 1\n", encoding="utf-8")
    assert main(["judge-audit", "--config", str(bad)]) == 2
    assert "no_such_key" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["judge-audit", "--config", str(bad), "--per-kind", "0"])
    assert e.value.code == 2


def test_a_table_config_is_read_as_its_set_over_its_base_recipe(monkeypatch):
    monkeypatch.chdir(ROOT)
    config = load_audit_config("configs/tables/paper_table1_locomo.yaml", ["limit=3"])
    assert (config.judge, config.limit, config.pipeline.judge.model) == ("locomo", 3, "Qwen/Qwen3-32B")
    assert config.pipeline.judge.chat_template_kwargs == {"enable_thinking": False}
    with pytest.raises(Exception, match="no set 'nope'"):
        load_audit_config("configs/tables/paper_table1_locomo.yaml", table_set="nope")


# --- beside the table cells that judge scored -----------------------------------------------------------


def test_an_audit_stands_beside_the_judged_cells_of_its_judge_and_a_cell_of_another_judge_says_so(tmp_path):
    """A table whose cells are scored by a (scripted, lenient) judge: `lazymem judge-audit` of that table's
    judge gives judge_false_accept / judge_false_reject on its judged rows, equal to the audit's rates; a row
    whose judge is another model gets a note and no rates; the page names the audit."""
    import yaml

    from lazymem.eval.table import EvalTableConfig, run_eval_table
    from lazymem.llm import FakeBackend

    def judge_reply(prompt, sampling):
        return verdict(lenient, prompt if isinstance(prompt, str) else prompt[-1]["content"])

    judge = {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "Qwen/Qwen3-32B", "max_retries": 0}
    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump(
            {
                "dataset": "synthetic-casual:conversations=1,seed=1,questions=8",
                "judge": "locomo",
                "count_tokens": False,
                "llm_cache": False,
                "pipeline": {
                    "method": "rag",
                    "retrieval": {"dense_model": None, "n": 3},
                    "mpm": {"backend": "fake", "model": "fake"},
                    "answer": {"backend": "fake", "model": "fake"},
                    "judge": judge,
                },
            }
        )
    )
    table_yaml = tmp_path / "table.yaml"
    rows = {"rag3": {}, "rag2_other_judge": {"pipeline.retrieval.n": 2, "pipeline.judge.model": "other/judge"}}
    table = {"base": str(base), "sets": {"cas": {"limit": 4}}, "rows": rows, "output_dir": str(tmp_path / "t")}
    table_yaml.write_text(yaml.safe_dump(table))

    result, _ = audit(load_audit_config(str(table_yaml)), client=FakeBackend(judge_reply))
    audit_file = tmp_path / "audit" / "judge_audit.json"
    audit_file.parent.mkdir()
    audit_file.write_text(json.dumps(result), encoding="utf-8")
    assert result["rates"]["all"]["false_accept"]["k"] > 0  # the lenient judge accepts some wrong answers

    from lazymem.eval.dryrun import dry_run

    cfg = EvalTableConfig(**dict(table, judge_audit=str(audit_file)))
    warned = [w for w in dry_run(cfg)["warnings"] if "judge audit" in w]  # the offline plan says it first
    assert len(warned) == 1 and warned[0].startswith("cas / rag2_other_judge: the judge audit")

    clients = lambda s, r: {"answer": FakeBackend(lambda p, sp: "I do not know"), "judge": FakeBackend(judge_reply)}  # noqa: E731
    got = run_eval_table(cfg, progress=False, clients_for=clients)["cas"]
    overall = result["rates"]["all"]
    assert got["rag3"]["judge_accuracy"] is not None
    assert (got["rag3"]["judge_false_accept"], got["rag3"]["judge_false_reject"]) == (
        overall["false_accept"]["rate"],
        overall["false_reject"]["rate"],
    )
    other = got["rag2_other_judge"]
    assert other.get("judge_false_accept") is None and other["judge_accuracy"] is not None
    assert "another judge" in other["note"] and "'other/judge'" in other["note"]
    page = (tmp_path / "t" / "table.md").read_text(encoding="utf-8")
    assert "judge_false_accept" in page and f"Judge audit `{audit_file.as_posix()}`" in page
    assert "beside rag3:" in page
    saved = json.loads((tmp_path / "t" / "table.json").read_text(encoding="utf-8"))
    assert saved["cas"]["rag3"]["judge_false_reject"] == overall["false_reject"]["rate"]


def test_a_table_refuses_a_file_that_is_not_a_judge_audit_before_running_anything(tmp_path):
    from lazymem.errors import LoadError
    from lazymem.eval.table import EvalTableConfig, run_eval_table

    bad = tmp_path / "judge_audit.json"
    bad.write_text(json.dumps({"judge": {"kind": "locomo"}, "rates": {"all": {"false_accept": {}}}}))
    cfg = EvalTableConfig(
        base=str(ROOT / "configs" / "eval" / "demo.yaml"),
        sets={"s": {}},
        rows={"r": {}},
        output_dir=str(tmp_path / "t"),
        judge_audit=str(bad),
    )
    with pytest.raises(LoadError, match=r"judge_audit.json.*rates.all.false_reject"):
        run_eval_table(cfg, progress=False)
    assert not (tmp_path / "t").exists()
    with pytest.raises(ConfigError, match="unknown sets"):
        EvalTableConfig(base="b.yaml", sets={"s": {}}, rows={"r": {}}, judge_audit={"nope": str(bad)})
