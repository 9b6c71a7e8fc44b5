"""Training recipes of the SkillCDG papers (no Streamlit; torch/PEFT imported where used).

- :mod:`workbench.train.data`: training records from audit cases (exact judge and keyword
  prompts, label, gold rules, pseudonymised session, complexity); JSONL / HF dataset.
- :mod:`workbench.train.rewards`: graph-verified and coverage rewards for the keyworder,
  group-normalised GRPO advantages.
- :mod:`workbench.train.opd`: k1 estimator, clipping, entropy gate for on-policy distillation.
- :mod:`workbench.train.trainers`: the GRPO and OPD trainers (LoRA, checkpoints, resumption).
- :mod:`workbench.train.models`: LoRA, sampling and scoring over a checkpoint that
  :mod:`workbench.llm.transformers_load` loads (the product's activations use that loader too).
"""
