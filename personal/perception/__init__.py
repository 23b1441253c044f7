"""Perception from pixels: training data from generated households, a locked-text image tower
(personal.models.lit) trained on it, and its evaluation on held-out households."""
