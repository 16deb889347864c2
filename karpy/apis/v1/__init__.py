"""apis/v1"""
