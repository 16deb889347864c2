// Command ec2nodeclass-hash prints Karpenter's EC2NodeClass hash for each EC2NodeClass document it reads.
//
// It exists to produce karpy's golden table (tests/unit/cloudprovider/aws/ec2nodeclass_hash_golden.json):
// the hash is computed by the AWS provider's own API types and hash function (the release pinned in
// go.mod), so the table records exactly the values Karpenter stamps in `karpenter.k8s.aws/ec2nodeclass-hash`.
// karpy's tests never run this program.
//
// Karpenter hashes the spec together with the cluster's CA bundle (--cluster-ca-bundle, or the CA of its
// kubeconfig, base64). A case passes it in the annotation `karpy.sh/test-ca-bundle`; annotations are not hashed.
//
// Input: a YAML or JSON stream of EC2NodeClass documents (files named as arguments, or stdin).
// Output: a JSON array of {"name", "hashVersion", "hash", "caBundle", "nodeClass"}; nodeClass is the document as read.
// Reading and printing are hack/hashtable's, shared with hack/nodepool-hash.
package main

import (
	"fmt"

	v1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/karpy/karpy/hack/hashtable"
	"github.com/mitchellh/hashstructure/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

const caBundleAnnotation = "karpy.sh/test-ca-bundle"

type entry struct {
	Name        string         `json:"name"`
	HashVersion string         `json:"hashVersion"`
	Hash        string         `json:"hash"`
	CABundle    *string        `json:"caBundle"`
	NodeClass   map[string]any `json:"nodeClass"`
}

func entryOf(doc []byte, raw map[string]any) (entry, error) {
	nodeClass := v1.EC2NodeClass{}
	if err := sigsyaml.UnmarshalStrict(doc, &nodeClass); err != nil {
		return entry{}, fmt.Errorf("ec2nodeclass %v: %w", raw["metadata"], err)
	}
	var caBundle *string
	if value, ok := nodeClass.Annotations[caBundleAnnotation]; ok {
		caBundle = &value
	}
	// Cross-check: the provider's method and the documented hashstructure call agree.
	direct, err := hashstructure.Hash([]any{
		nodeClass.Spec,
		nodeClass.AMIFamily(),
		func() string {
			if caBundle == nil {
				return ""
			}
			return *caBundle
		}(),
		nodeClass.Spec.Kubelet.String(),
	}, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		return entry{}, err
	}
	hash := nodeClass.Hash(caBundle)
	if fmt.Sprint(direct) != hash {
		return entry{}, fmt.Errorf("ec2nodeclass %s: hashstructure gives %d, EC2NodeClass.Hash() %s", nodeClass.Name, direct, hash)
	}
	return entry{
		Name:        nodeClass.Name,
		HashVersion: v1.EC2NodeClassHashVersion,
		Hash:        hash,
		CABundle:    caBundle,
		NodeClass:   raw,
	}, nil
}

func main() {
	hashtable.Main(entryOf)
}
