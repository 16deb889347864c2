"""Controllers of Nodes (termination)."""
