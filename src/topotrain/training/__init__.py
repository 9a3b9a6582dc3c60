"""Training stage: the GPT family (``model``), the training loop (``train``) and its crash-safe run
state (``run_state``). The only stage that imports torch at module level."""
