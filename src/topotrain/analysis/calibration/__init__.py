"""Are the tests honest, and what can the design see? The null and signal simulator
(``simulator``), the calibration suite (``suite``), the effect intervals' miss rates and the
artefact rule (``effect``), and the design's power at Δ (``power``, ``power_design``)."""
