"""How do the features move through training? Phase transitions (``phases``), velocity against
the loss's (``velocity``) and per layer type (``layer_types``)."""
