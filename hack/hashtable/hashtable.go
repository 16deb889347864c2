// Package hashtable is the driver the golden-table commands (hack/nodepool-hash, hack/ec2nodeclass-hash)
// share: it reads a YAML or JSON stream of documents (the files named as arguments, else stdin), hands
// each non-empty document to the command's hash function, and prints the entries as an indented JSON
// array. Each command keeps only what is its own: the API type it decodes into and the hash it checks.
package hashtable

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// EntryOf turns one document (its bytes, and the same decoded as a plain map) into a table entry.
type EntryOf[T any] func(doc []byte, raw map[string]any) (T, error)

// Main runs the command: entries of every document of every input, as JSON on stdout; on the first
// error, the error (and the file it came from) on stderr and exit status 1.
func Main[T any](entryOf EntryOf[T]) {
	entries := []T{}
	if len(os.Args) == 1 {
		if err := readAll(os.Stdin, entryOf, &entries); err != nil {
			fail(err)
		}
	}
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err == nil {
			err = readAll(f, entryOf, &entries)
			_ = f.Close()
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(entries); err != nil {
		fail(err)
	}
}

func readAll[T any](r io.Reader, entryOf EntryOf[T], out *[]T) error {
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
		entry, err := entryOf(doc, raw)
		if err != nil {
			return err
		}
		*out = append(*out, entry)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
