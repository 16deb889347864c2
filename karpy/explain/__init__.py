"""`karpy explain`: why a pod waits, why a node stays or goes, what a NodePool may disrupt.

Read-only. It reads the cluster as `karpy simulate --from-cluster` does and answers with the
functions the controller itself runs (`controllers.disruption.blockers`,
`scheduling.engine.misfit`), so `explain` and the controller never disagree."""
