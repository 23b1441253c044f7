"""personal.models"""
