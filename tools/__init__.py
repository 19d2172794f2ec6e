"""solforge.tools"""
