"""Helpers every controller area shares: reading and patching raw objects (`objects`), writing
status and conditions safely (`status`; the condition rules are `karpy.apis.conditions`), and
the metrics several areas count (`metrics`)."""
