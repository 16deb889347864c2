"""`karpy top`: the fleet at a glance, per node and per NodePool, with what it costs.

`model` holds the rows, totals, filters and sorts (no UI); `feed` is the watch seam that fills
it; `estimate` prices nodes and computes the plan lower bound; `app` is the Textual view and
`command` the CLI (`--once` prints one view as a table or JSON)."""
