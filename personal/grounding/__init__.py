"""personal.grounding"""
