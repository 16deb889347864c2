// Command nodepool-hash prints Karpenter's NodePool hash for each NodePool document it reads.
//
// It exists to produce karpy's golden table (tests/unit/controllers/nodepool/nodepool_hash_golden.json):
// the hash is computed by Karpenter's own API types and hash function, so the table records exactly the
// values Karpenter stamps in `karpenter.sh/nodepool-hash`. karpy's tests never run this program.
//
// Input: a YAML or JSON stream of NodePool documents (files named as arguments, or stdin).
// Output: a JSON array of {"name", "hashVersion", "hash", "nodePool"} where nodePool is the document as read.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mitchellh/hashstructure/v2"
	"k8s.io/apimachinery/pkg/util/yaml"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

type entry struct {
	Name        string         `json:"name"`
	HashVersion string         `json:"hashVersion"`
	Hash        string         `json:"hash"`
	NodePool    map[string]any `json:"nodePool"`
}

func readAll(r io.Reader, out *[]entry) error {
	reader := yaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		raw := map[string]any{}
		if err := sigsyaml.Unmarshal(doc, &raw); err != nil {
			return err
		}
		if len(raw) == 0 {
			continue
		}
		pool := karpv1.NodePool{}
		if err := sigsyaml.UnmarshalStrict(doc, &pool); err != nil {
			return fmt.Errorf("nodepool %v: %w", raw["metadata"], err)
		}
		// Cross-check: Karpenter's method and the documented hashstructure call agree.
		direct, err := hashstructure.Hash(pool.Spec.Template, hashstructure.FormatV2, &hashstructure.HashOptions{
			SlicesAsSets:    true,
			IgnoreZeroValue: true,
			ZeroNil:         true,
		})
		if err != nil {
			return err
		}
		if fmt.Sprint(direct) != pool.Hash() {
			return fmt.Errorf("nodepool %s: hashstructure gives %d, NodePool.Hash() %s", pool.Name, direct, pool.Hash())
		}
		*out = append(*out, entry{
			Name:        pool.Name,
			HashVersion: karpv1.NodePoolHashVersion,
			Hash:        pool.Hash(),
			NodePool:    raw,
		})
	}
}

func main() {
	entries := []entry{}
	if len(os.Args) == 1 {
		if err := readAll(os.Stdin, &entries); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err == nil {
			err = readAll(f, &entries)
			_ = f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, path+":", err)
			os.Exit(1)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(entries); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
