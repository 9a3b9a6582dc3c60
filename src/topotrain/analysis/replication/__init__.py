"""Does each of the seed paper's claims hold on our runs? The claims' rows (``claims``), the
rules' text (``rules``), the size-ordering claims (``sizes``) and the Pythia claims
(``pythia_claims``)."""
