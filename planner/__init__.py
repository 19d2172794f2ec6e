"""solforge.planner"""
