"""How do the features move through training? Phase transitions (``phases``), velocity against
the loss's (``velocity``), per layer type (``layer_types``), and one of your runs' associations
with its logged losses and its phases (``runs``)."""
