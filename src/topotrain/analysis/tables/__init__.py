"""What did each checkpoint measure? The feature tables every question reads: the records and
training logs of the spine (``aggregate``), of the Pythia revisions (``pythia``) and of your runs
(``runs``), one row per checkpoint."""
