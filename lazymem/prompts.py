"""Every prompt in one place: the paper's listings verbatim, and the official judge prompts.

Templates use named ``{placeholders}`` (identifier inside braces). Anything else in braces,
such as the JSON examples in the listings, is literal text, so templates are rendered by a
single-pass substitution of placeholder names rather than ``str.format``.

>>> PROMPTS["answer_text"].render(query_time="2023/05/30", query="Where do I live?",
...                               memory_text="[2023/05/20] user: I moved to Lisbon.").splitlines()[-4:]
['# Memory', '[2023/05/20] user: I moved to Lisbon.', '', '# Answer']
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lazymem.records import Message

# A placeholder is a Python identifier in braces; "{\n" or '{"op": ...}' never matches.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ESCAPES = ("none", "json")


@dataclass(frozen=True)
class PromptTemplate:
    """A system message and a user-message template with named placeholders."""

    name: str  # key in PROMPTS, recorded in run manifests
    template: str  # user message with {placeholders}
    system: str = ""  # system message ("" when the prompt is a single user message)
    source: str = ""  # where the text comes from (paper listing or repository@commit)
    escape: str = "none"  # "json": values are inserted as JSON string contents (template is JSON)

    def __post_init__(self) -> None:
        if self.escape not in _ESCAPES:
            raise ValueError(f"prompt {self.name!r}: escape must be one of {_ESCAPES}, got {self.escape!r}")
        if _PLACEHOLDER.search(self.system):
            # System messages are sent as is: a placeholder there would never be filled.
            raise ValueError(f"prompt {self.name!r}: the system message has a placeholder")

    @property
    def placeholders(self) -> tuple[str, ...]:
        """Placeholder names in order of first appearance."""
        return tuple(dict.fromkeys(_PLACEHOLDER.findall(self.template)))

    def render(self, **values: object) -> str:
        """The user message with every placeholder filled (values are str()-ed, never re-parsed).

        Raises ValueError naming a missing placeholder or an unknown value name.

        >>> PromptTemplate("t", '{"q": "{query}"}', escape="json").render(query='say "hi"')
        '{"q": "say \\\\"hi\\\\""}'
        """
        names = self.placeholders
        missing = [n for n in names if n not in values]
        if missing:
            raise ValueError(
                f"prompt {self.name!r}: missing value for placeholder {{{missing[0]}}} (needs {', '.join(names)})"
            )
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"prompt {self.name!r}: no placeholder {{{unknown[0]}}} (has {', '.join(names)})")
        if self.escape == "json":
            filled = {k: json.dumps(str(v), ensure_ascii=False)[1:-1] for k, v in values.items()}
        else:
            filled = {k: str(v) for k, v in values.items()}
        return _PLACEHOLDER.sub(lambda m: filled[m.group(1)], self.template)

    def messages(self, **values: object) -> list[dict[str, str]]:
        """Chat messages: the system message (when there is one), then the rendered user message."""
        user = {"role": "user", "content": self.render(**values)}
        return [{"role": "system", "content": self.system}, user] if self.system else [user]

    @property
    def sha256(self) -> str:
        """Hash of the text actually sent (system, template, escape mode), for run manifests."""
        blob = json.dumps([self.system, self.template, self.escape], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------
# The paper's listings (Appendix "Method-Specific Prompts and Output Schemas"), verbatim.
# The "SYSTEM PROMPT" / "USER PROMPT TEMPLATE" headings are not sent (the appendix says so);
# the system messages keep the listing's line breaks.
# ---------------------------------------------------------------------------------------
_PAPER = "LazyMem paper, Appendix 'Method-Specific Prompts and Output Schemas'"

# Listing heading: SYSTEM PROMPT
_WINDOW_SYSTEM = """\
You are a local memory editing model.

You will receive a user query and one local chronological memory window.
Your task is to output a sequence of local editing decisions for this local window only, following the original message order.

Return exactly one valid JSON array.
Each item in the array must correspond to one non-empty role message in previous_bridge, core_messages, and next_bridge.
Each item in the array must contain exactly three fields: op, compressed_content, and reason.

The only allowed decision operations are KEEP and DROP.
For KEEP, retain dialogue content that is relevant to the query and useful for answering the query.
KEEP may be realized as verbatim keeping, key-span extraction, or concise compression depending on each message.
For DROP, compressed_content must be an empty string.

Use only the provided window content.
Do not output markdown, explanations, or any extra text.
Your output must be directly parseable by json.loads()."""  # noqa: E501  (verbatim listing: wrapping would change the prompt hash)

# Listing heading: USER PROMPT TEMPLATE
_WINDOW_USER = """\
# Task
Given the following query-conditioned memory window, produce a sequence of local editing decisions.

# Required Output
Return only a JSON array with the following structure:
[
  {
    "op": "KEEP | DROP",
    "compressed_content": "empty string if DROP; otherwise retained content in one KEEP style: verbatim keeping, key-span extraction, or concise compression",
    "reason": "brief local reason"
  }
]

# Local Editing Rules
1. The output array must contain one decision for every non-empty role message in previous_bridge, core_messages, and next_bridge.
2. The decisions must follow the original chronological order: previous_bridge, then core_messages, then next_bridge.
3. Each decision must contain exactly three fields: op, compressed_content, and reason.
4. op must be either KEEP or DROP.
5. KEEP means preserving dialogue content that is relevant to the query and useful for the main model to answer the question.
6. DROP means the message is locally irrelevant and should not enter the final memory.
7. For KEEP, choose the most appropriate retention style for each message:
   - verbatim keeping: keep the original message text when it is short and directly useful;
   - key-span extraction: keep only the query-relevant span when only part of the message is relevant;
   - concise compression: faithfully rewrite the message into a shorter form when it is useful but too long, or only partially relevant.
8. For any KEEP style, remain faithful to the source meaning and do not introduce unsupported facts.
9. If the whole window is irrelevant, still output one decision for every non-empty role message, and set every op to DROP.
10. When op is DROP, compressed_content must be an empty string.
11. If a message may contain answer evidence, user facts, temporal updates, or content related to the query entity/attribute, prefer KEEP even when relevance is uncertain.
12. Return only the JSON array. Do not output markdown, comments, or extra text.
13. The output must be directly parseable by json.loads().

# Query
Query Time: {query_time}
Query: {query}

# History Window
{window}"""  # noqa: E501  (verbatim listing)

# Listing heading: SYSTEM PROMPT
_REWARD_JUDGE_SYSTEM = """\
You are a strict reward judge for memory construction. Evaluate whether a kept
constructed_memory is faithful and useful. Keep the two dimensions strictly
separate: faithfulness only judges the relationship between constructed_memory
and source_messages; utility judges how helpful constructed_memory is for the
gold_answer and referenced_reasoning_chain. Return exactly one valid JSON object.
Do not output Markdown, explanations, or extra text."""

# Listing heading: USER PROMPT TEMPLATE
_REWARD_JUDGE_USER = """\
{
  "query_time": "{query_time}",
  "query": "{query}",
  "gold_answer": "{gold_answer}",
  "referenced_reasoning_chain": "{referenced_reasoning_chain}",
  "source_messages": [
    {
      "role": "{role}",
      "content": "{source_message_content}",
      "timestamp": "{timestamp}"
    }
  ],
  "constructed_memory": "{compressed_memory}",
  "evaluation_rules": [
    "Score faithfulness using only source_messages. Do not use gold_answer or referenced_reasoning_chain for faithfulness.",
    "Each source message may include a timestamp. Treat that timestamp as part of the source evidence when checking dates, chronology, ordering, and time intervals.",
    "Treat query_time as the time when the query was asked. Compare it with source message timestamps when judging temporal relevance, recency, chronology, and knowledge updates.",
    "Faithfulness checks whether constructed_memory contains unsupported, fabricated, contradictory, or over-inferred information relative to source_messages, including their timestamps.",
    "Score utility using query, gold_answer, and referenced_reasoning_chain together.",
    "Utility checks whether constructed_memory helps answer the query, reach or verify gold_answer, or perform the reasoning in referenced_reasoning_chain.",
    "Utility does not require a direct one-hop contribution. Indirectly useful evidence, constraints, background, disambiguation, chronology, entities, or context can receive utility credit if they help the final answer or reasoning chain.",
    "Score faithfulness and utility independently; a faithful but useless memory may have faithfulness=2 and utility=0.",
    "A useful but unfaithful memory must have faithfulness=0; do not raise faithfulness because it matches gold_answer or referenced_reasoning_chain.",
    "If constructed_memory is only generic background or repeats information irrelevant to gold_answer and referenced_reasoning_chain, assign a low utility score.",
    "If constructed_memory preserves key direct or indirect evidence needed by gold_answer or referenced_reasoning_chain, assign a high utility score.",
    "When uncertain, choose the lower score."
  ],
  "rubric": {
    "faithfulness": {
      "0": "Contains information unsupported by source_messages, fabrication, clear contradiction, or states uncertain information as fact.",
      "1": "Mostly faithful, but has minor ambiguity, mild over-generalization, imprecise wording, or details not explicitly supported by source_messages.",
      "2": "Fully faithful; all key information is explicitly supported by source_messages, with no contradiction, hallucination, or over-inference."
    },
    "utility": {
      "0": "Not helpful for gold_answer or referenced_reasoning_chain, irrelevant, or misleading for the final answer or reasoning.",
      "1": "Somewhat helpful for gold_answer or referenced_reasoning_chain, including indirect support, useful background, disambiguating context, chronology, entities, constraints, or partially relevant evidence.",
      "2": "Strongly helpful for gold_answer or referenced_reasoning_chain; preserves key direct or indirect evidence, constraints, facts, or context needed to reach, verify, or explain the answer."
    }
  },
  "required_output": {
    "faithfulness": 0,
    "utility": 0,
    "unsupported_claims": [],
    "useful_evidence": [],
    "reason": "Brief reason in English"
  }
}"""  # noqa: E501  (verbatim listing)

# Listing heading: SYSTEM PROMPT
_ANSWER_SYSTEM = """\
Answer the user question concisely and faithfully from the provided memory."""

# Listing heading: USER PROMPT TEMPLATE FOR COMPRESSED MEMORY
_ANSWER_COMPRESSED_USER = """\
You are answering a user question using compressed chronological conversation memory.
Use the memory when it is relevant. If the memory is insufficient, say what is missing instead of inventing facts.

# Query
Query Time: {query_time}
Query: {query}

# Memory
{memory}

# Answer"""

# Listing heading: USER PROMPT TEMPLATE FOR GOLD/TEXT MEMORY
_ANSWER_TEXT_USER = """\
You are answering a user question using chronological conversation memory.
Use the memory when it is relevant. If the memory is insufficient, say what is missing instead of inventing facts.

# Query
Query Time: {query_time}
Query: {query}

# Memory
{memory_text}

# Answer"""

# The listing shows the memory block as one line per kept message followed by "...";
# the template holds the whole block in {memory}, built line by line with MEMORY_LINE.
MEMORY_LINE = "[{timestamp}] {role}: {compressed_content}"

# ---------------------------------------------------------------------------------------
# Official judge prompts (the paper: "we adopt the official evaluation scripts and judge
# prompts ... changing only the judge model").
# LongMemEval: get_anscheck_prompt() in src/evaluation/evaluate_qa.py of
# xiaowu0162/LongMemEval (MIT licence, Copyright (c) 2024 Di Wu), commit b11ff723; the texts
# below are the official strings verbatim with their positional "{}" slots, named in order
# (question, answer, response) by _named().
# ---------------------------------------------------------------------------------------
_LONGMEMEVAL = "xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py@b11ff723 (MIT)"
_LME_STANDARD = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
_LME_TEMPORAL = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
_LME_KNOWLEDGE_UPDATE = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
_LME_PREFERENCE = "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
_LME_ABSTENTION = "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."  # noqa: E501

# LoCoMo's own release scores answers by token F1 only (lazymem.eval.f1.locomo_f1) and has no
# LLM-judge prompt; the paper does not print one. This is the widely used Mem0 LoCoMo judge,
# ACCURACY_PROMPT in evaluation/metrics/llm_judge.py of mem0ai/mem0 (Apache-2.0), commit
# 2352a441, verbatim (curly quotes and trailing spaces included). Mem0 skips category 5.
_MEM0 = "mem0ai/mem0 evaluation/metrics/llm_judge.py@2352a441 ACCURACY_PROMPT (Apache-2.0)"
_LOCOMO_JUDGE = (
    "\n"
    "Your task is to label an answer to a question as \u2019CORRECT\u2019 or \u2019WRONG\u2019. You will be given the following data:\n"  # noqa: E501
    "    (1) a question (posed by one user to another user), \n"
    "    (2) a \u2019gold\u2019 (ground truth) answer, \n"
    "    (3) a generated answer\n"
    "which you will score as CORRECT/WRONG.\n"
    "\n"
    "The point of the question is to ask about something one user should know about the other user based on their prior conversations.\n"  # noqa: E501
    "The gold answer will usually be a concise and short answer that includes the referenced topic, for example:\n"
    "Question: Do you remember what I got the last time I went to Hawaii?\n"
    "Gold answer: A shell necklace\n"
    "The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. \n"  # noqa: E501
    "\n"
    'For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.\n'  # noqa: E501
    "\n"
    "Now it's time for the real question:\n"
    "Question: {question}\n"
    "Gold answer: {gold_answer}\n"
    "Generated answer: {generated_answer}\n"
    "\n"
    "First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. \n"
    "Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.\n"
    "\n"
    'Just return the label CORRECT or WRONG in a json format with the key as "label".\n'
)


# NanoMemory's pruning prompt (PROMPT_P in gen.py of yuqian2003/Nano-Memory, verbatim).
_NANOMEMORY = "yuqian2003/Nano-Memory gen.py@5a1b152 PROMPT_P"
_NANOMEMORY_PRUNE = (
    "\n"
    'You are an intelligent dialog bot. You will be shown a "Fused Historical Event" which contains all the '
    "consolidated details relevant to your question.\n"
    "\n"
    "Filter the information to extract only the parts directly relevant to the Question. Preserve original tokens, "
    "do not paraphrase. Remove irrelevant turns, redundant info, and non-essential details.\n"
    "\n"
    "[Input Information]\n"
    "Fused Historical Event: \n"
    "{fused_event}\n"
    "\n"
    "\n"
    "Question Date: {question_date}\n"
    "Question: {question}\n"
    "Answer:\n"
)


def _named(official: str, names: Sequence[str] = ("question", "answer", "response")) -> str:
    """Name the positional "{}" slots of an official str.format template, in order."""
    pieces = official.split("{}")
    if len(pieces) != len(names) + 1:
        raise ValueError(f"expected {len(names)} slots, found {len(pieces) - 1}")
    out = pieces[0]
    for name, piece in zip(names, pieces[1:]):
        out += "{" + name + "}" + piece
    return out


PROMPTS: dict[str, PromptTemplate] = {
    p.name: p
    for p in (
        PromptTemplate("window_annotation", _WINDOW_USER, _WINDOW_SYSTEM, f"{_PAPER}, Window Annotation Prompt"),
        PromptTemplate(
            "reward_judge",
            _REWARD_JUDGE_USER,
            _REWARD_JUDGE_SYSTEM,
            f"{_PAPER}, Memory-quality Reward Judge Prompt",
            escape="json",
        ),
        PromptTemplate(
            "answer_compressed",
            _ANSWER_COMPRESSED_USER,
            _ANSWER_SYSTEM,
            f"{_PAPER}, Answer Generation Prompt (compressed memory)",
        ),
        PromptTemplate(
            "answer_text", _ANSWER_TEXT_USER, _ANSWER_SYSTEM, f"{_PAPER}, Answer Generation Prompt (gold/text memory)"
        ),
        PromptTemplate("longmemeval_judge", _named(_LME_STANDARD), source=_LONGMEMEVAL),
        PromptTemplate("longmemeval_judge_temporal", _named(_LME_TEMPORAL), source=_LONGMEMEVAL),
        PromptTemplate("longmemeval_judge_knowledge_update", _named(_LME_KNOWLEDGE_UPDATE), source=_LONGMEMEVAL),
        PromptTemplate("longmemeval_judge_preference", _named(_LME_PREFERENCE), source=_LONGMEMEVAL),
        PromptTemplate("longmemeval_judge_abstention", _named(_LME_ABSTENTION), source=_LONGMEMEVAL),
        PromptTemplate("locomo_judge", _LOCOMO_JUDGE, source=_MEM0),
        PromptTemplate("nanomemory_prune", _NANOMEMORY_PRUNE, source=_NANOMEMORY),
    )
}


def prompt_hashes() -> dict[str, str]:
    """sha256 of every prompt by name, for run manifests."""
    return {name: p.sha256 for name, p in sorted(PROMPTS.items())}


# ---------------------------------------------------------------------------------------
# Rendering windows and memories.
# ---------------------------------------------------------------------------------------
def decision_positions(messages: Sequence[Message]) -> tuple[int, ...]:
    """Positions the annotator must decide on: the listing asks for one decision per
    *non-empty* role message, so blank messages are neither shown nor decided.

    >>> m = lambda pos, text: Message(pos, f"s#{pos}", "s", pos, "user", text, "2023/05/20")
    >>> decision_positions([m(4, "hi"), m(5, "  "), m(6, "ok")])
    (4, 6)
    """
    return tuple(m.pos for m in messages if m.text.strip())


def _as_json_message(m: Message) -> dict[str, str]:
    # Same fields and order as the reward judge's source_messages in the paper's listing.
    return {"role": m.role, "content": m.text, "timestamp": m.timestamp}


def window_block(messages: Sequence[Message], *, n_prev_bridge: int = 0, n_next_bridge: int = 0) -> str:
    """The {window} block: a JSON object with previous_bridge, core_messages and next_bridge.

    The paper names the three parts but does not print the block; this rendering (JSON, the
    judge listing's role/content/timestamp fields) is ours. The first ``n_prev_bridge`` and the
    last ``n_next_bridge`` messages form the bridges (e.g. the message a sub-window shares with
    its neighbour); blank messages are left out, matching decision_positions().

    >>> m = Message(0, "s#0", "s", 0, "user", "I moved to Lisbon.", "2023/05/20 (Sat) 02:21")
    >>> print(window_block([m]))
    {
      "previous_bridge": [],
      "core_messages": [
        {
          "role": "user",
          "content": "I moved to Lisbon.",
          "timestamp": "2023/05/20 (Sat) 02:21"
        }
      ],
      "next_bridge": []
    }
    """
    n = len(messages)
    if n_prev_bridge < 0 or n_next_bridge < 0 or n_prev_bridge + n_next_bridge > n:
        raise ValueError(f"bridges {n_prev_bridge}+{n_next_bridge} do not fit a window of {n} messages")
    parts = {
        "previous_bridge": messages[:n_prev_bridge],
        "core_messages": messages[n_prev_bridge : n - n_next_bridge],
        "next_bridge": messages[n - n_next_bridge :],
    }
    block = {k: [_as_json_message(m) for m in v if m.text.strip()] for k, v in parts.items()}
    return json.dumps(block, ensure_ascii=False, indent=2)


def format_window(
    messages: Sequence[Message], query: str, query_time: str, *, n_prev_bridge: int = 0, n_next_bridge: int = 0
) -> str:
    """The window-annotation user message for one (query, window) pair."""
    return PROMPTS["window_annotation"].render(
        query_time=query_time,
        query=query,
        window=window_block(messages, n_prev_bridge=n_prev_bridge, n_next_bridge=n_next_bridge),
    )


def annotation_messages(
    messages: Sequence[Message], query: str, query_time: str, *, n_prev_bridge: int = 0, n_next_bridge: int = 0
) -> list[dict[str, str]]:
    """Chat messages (system + user) asking a model to annotate one window."""
    return [
        {"role": "system", "content": PROMPTS["window_annotation"].system},
        {
            "role": "user",
            "content": format_window(
                messages, query, query_time, n_prev_bridge=n_prev_bridge, n_next_bridge=n_next_bridge
            ),
        },
    ]


def memory_line(timestamp: str, role: str, content: str) -> str:
    """One memory line in the answer listing's format.

    >>> memory_line("2023/05/20 (Sat) 02:21", "user", "Moved to Lisbon.")
    '[2023/05/20 (Sat) 02:21] user: Moved to Lisbon.'
    """
    return MEMORY_LINE.format(timestamp=timestamp, role=role, compressed_content=content)


def text_memory(messages: Sequence[Message]) -> str:
    """Verbatim messages as memory text (oracle and RAG baselines), chronologically."""
    return "\n".join(memory_line(m.timestamp, m.role, m.text) for m in sorted(messages, key=lambda m: m.pos))


def reward_judge_prompt(
    *,
    query_time: str,
    query: str,
    gold_answer: str,
    reasoning_chain: str,
    sources: Sequence[Message],
    compressed_memory: str,
) -> str:
    """The quality-reward judge's user message for one kept message.

    The listing shows source_messages with one element; with several sources the rendered
    JSON is re-serialised in the listing's layout (2-space indent), which for one source is
    byte-identical to the plain rendering.
    """
    if not sources:
        raise ValueError("reward judge needs at least one source message")
    first = sources[0]
    text = PROMPTS["reward_judge"].render(
        query_time=query_time,
        query=query,
        gold_answer=gold_answer,
        referenced_reasoning_chain=reasoning_chain,
        role=first.role,
        source_message_content=first.text,
        timestamp=first.timestamp,
        compressed_memory=compressed_memory,
    )
    if len(sources) == 1:
        return text
    obj = json.loads(text)
    obj["source_messages"] = [_as_json_message(m) for m in sources]
    return json.dumps(obj, ensure_ascii=False, indent=2)


# Decision-schema annotation (construct.gate.decision_schema(think=True)): a <think> trace of this
# many numbered lines precedes the JSON array; the transformers backend builds it into the grammar.
THINK_LINES = "x-lazymem-think-lines"
TRACE_LINE_CHARS = 300  # most characters of one trace line under the grammar (after its "N. ")
# With it, item i's op is the op trace line i ends with (the transformers backend masks the other
# op where the grammar opens item i's op), so the decision is made once, in the trace, and the
# array cannot contradict it.
ARRAY_FOLLOWS_TRACE = "x-lazymem-array-follows-trace"
