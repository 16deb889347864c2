"""`autoscaling.x-k8s.io`: SIG Autoscaling's APIs that karpy serves (CapacityBuffer)."""
