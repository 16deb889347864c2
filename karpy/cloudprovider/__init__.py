"""cloudprovider"""
