"""Synthetic households: scene model, generator, personalized episodes, formats."""
