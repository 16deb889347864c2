"""apis/kwok/v1alpha1"""
