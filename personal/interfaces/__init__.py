"""personal.interfaces"""
