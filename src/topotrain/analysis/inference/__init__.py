"""Is a feature tied to the loss beyond the training clock and the model's scale? Statistics, the
time-aware associations, the between-seed contrasts, their effects with intervals, the primary
family, the same test on a group of your seeds (``groups``), the verdict words and the checks
(one numerics per model) the tests rest on. The base of analysis/: it imports no other room."""
