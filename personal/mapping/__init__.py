"""personal.mapping"""
