"""Does the between-seed test find a real effect? The grokking control's features per checkpoint
(``features``) and its verdicts (``grokking``)."""
