"""Your own environment and agent in Podracer: an example package (see its README)."""
