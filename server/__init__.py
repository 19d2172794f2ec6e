"""solforge.server"""
