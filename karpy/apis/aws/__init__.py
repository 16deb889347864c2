"""apis/aws"""
