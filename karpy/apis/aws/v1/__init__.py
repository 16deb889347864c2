"""apis/aws/v1"""
