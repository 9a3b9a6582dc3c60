"""Does an exploratory hit hold on seeds that never saw it? Discovery freezes the hits (and the
named hypotheses) with their signs, then confirmation tests exactly those on fresh seeds, once, as
one family (``confirm``), for the GPT study and the grokking control."""
