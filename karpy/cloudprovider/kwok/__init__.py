"""cloudprovider/kwok"""
