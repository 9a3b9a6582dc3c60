"""Repository tools run by CI (not part of the package): the licence check."""
