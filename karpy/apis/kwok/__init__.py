"""apis/kwok"""
