// Command nodepool-hash prints Karpenter's NodePool hash for each NodePool document it reads.
//
// It exists to produce karpy's golden table (tests/unit/controllers/nodepool_hash_golden.json):
// the hash is computed by Karpenter's own API types and hash function, so the table records exactly the
// values Karpenter stamps in `karpenter.sh/nodepool-hash`. karpy's tests never run this program.
//
// Input: a YAML or JSON stream of NodePool documents (files named as arguments, or stdin).
// Output: a JSON array of {"name", "hashVersion", "hash", "nodePool"} where nodePool is the document as read.
// Reading and printing are hack/hashtable's, shared with hack/ec2nodeclass-hash.
package main

import (
	"fmt"

	"github.com/karpy/karpy/hack/hashtable"
	"github.com/mitchellh/hashstructure/v2"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

type entry struct {
	Name        string         `json:"name"`
	HashVersion string         `json:"hashVersion"`
	Hash        string         `json:"hash"`
	NodePool    map[string]any `json:"nodePool"`
}

func entryOf(doc []byte, raw map[string]any) (entry, error) {
	pool := karpv1.NodePool{}
	if err := sigsyaml.UnmarshalStrict(doc, &pool); err != nil {
		return entry{}, fmt.Errorf("nodepool %v: %w", raw["metadata"], err)
	}
	// Cross-check: Karpenter's method and the documented hashstructure call agree.
	direct, err := hashstructure.Hash(pool.Spec.Template, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		return entry{}, err
	}
	if fmt.Sprint(direct) != pool.Hash() {
		return entry{}, fmt.Errorf("nodepool %s: hashstructure gives %d, NodePool.Hash() %s", pool.Name, direct, pool.Hash())
	}
	return entry{
		Name:        pool.Name,
		HashVersion: karpv1.NodePoolHashVersion,
		Hash:        pool.Hash(),
		NodePool:    raw,
	}, nil
}

func main() {
	hashtable.Main(entryOf)
}
