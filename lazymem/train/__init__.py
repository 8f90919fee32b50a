"""Training the memory-processing model (paper Sec. 3.3), landing here one module per concern:

- SFT data: query-window pairs from the real retrieval and windowing, teacher annotations
  through the LLM client, discards by reason, window-level balancing, a data card;
- rewards: the format gate, the action reward R_act (eta-weighted gold / non-gold accuracy),
  the judged quality reward R_qual, their composite and the lambda curriculum;
- curriculum: the callback that switches lambda once validation format validity reaches tau;
- GRPO: TRL's GRPOTrainer configured as the paper's recipe, with a pure-PyTorch reference of
  its objective.

Training sits beside evaluation, above the query pipeline: it builds its prompts with the same
public functions as inference (``lazymem.construct.window_prompts``) and never imports
``lazymem.eval``.
"""
