"""Does early training, or size, predict the final loss, and when can training stop? Final-loss
predictors (``predict``, ``learned``, ``summary``), scaling fits over model size (``scaling``) and
stopping rules (``stopping``)."""
