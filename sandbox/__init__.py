"""solforge.sandbox"""
