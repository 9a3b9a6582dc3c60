"""Input branches: the character corpus (``corpus``), checkpoint weight files (``weights``) and
EleutherAI Pythia hub revisions (``pythia``)."""
