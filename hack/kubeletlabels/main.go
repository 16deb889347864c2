// Command kubeletlabels prints, as one JSON object, the node labels a kubelet may set on its own
// Node (k8s.io/kubelet's KubeletLabels and KubeletLabelNamespaces) and, for each label key given
// as an argument, whether IsKubeletLabel allows it. karpy's tests compare its kubelet-safe label
// filter with this output rather than with a list typed by hand.
package main

import (
	"encoding/json"
	"os"

	kubeletapis "k8s.io/kubelet/pkg/apis"
)

type answer struct {
	Labels     []string        `json:"labels"`
	Namespaces []string        `json:"namespaces"`
	Allowed    map[string]bool `json:"allowed"`
}

func main() {
	out := answer{
		Labels:     kubeletapis.KubeletLabels(),
		Namespaces: kubeletapis.KubeletLabelNamespaces(),
		Allowed:    map[string]bool{},
	}
	for _, key := range os.Args[1:] {
		out.Allowed[key] = kubeletapis.IsKubeletLabel(key)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
