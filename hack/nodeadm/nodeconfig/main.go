// Command nodeconfig reads NodeConfig files with nodeadm's own API types (its public v1alpha1
// package, at the version hack/nodeadm builds) and prints, as JSON, what each file decodes
// to. `nodeadm config check` of that version accepts unknown fields and unknown enum values,
// so the AWS user data tests use this strict reading to see that every field karpy writes is
// one nodeadm has, and that its local-storage strategy is one nodeadm defines.
//
// Usage: nodeconfig FILE
// Output: {"error": "..."} or {"config": {...}}, plus "localStorageStrategies".
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/awslabs/amazon-eks-ami/nodeadm/api/v1alpha1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nodeconfig FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	answer := map[string]any{
		"localStorageStrategies": []v1alpha1.LocalStorageStrategy{
			v1alpha1.LocalStorageRAID0,
			v1alpha1.LocalStorageMount,
		},
	}
	var config v1alpha1.NodeConfig
	if err := yaml.UnmarshalStrict(data, &config); err != nil {
		answer["error"] = err.Error()
	} else {
		answer["config"] = config
	}
	if err := json.NewEncoder(os.Stdout).Encode(answer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
