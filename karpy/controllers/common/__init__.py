"""Helpers every controller area shares: reading and patching raw objects (`objects`), and
writing status conditions safely (`status`; the condition rules are `karpy.apis.conditions`)."""
