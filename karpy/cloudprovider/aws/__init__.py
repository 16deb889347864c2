"""cloudprovider/aws"""
