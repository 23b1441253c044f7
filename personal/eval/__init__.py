"""personal.eval"""
