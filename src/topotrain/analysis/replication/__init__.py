"""Does each of the seed paper's claims hold on our runs? The claims' rows (``claims``), the
rules' text (``rules``), the size-ordering claims (``sizes``), the Pythia claims
(``pythia_claims``) and Study B's perplexity correlations they read (``perplexity``)."""
