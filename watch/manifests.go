package watch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// ManifestError is a problem with one document of a manifest file. Loading goes
// on past it: one bad object never stops the others.
type ManifestError struct {
	File     string
	Document int    // 1-based position in the file
	Object   string // "Kind namespace/name" when known
	Err      error
}

func (e *ManifestError) Error() string {
	where := fmt.Sprintf("%s: document %d", e.File, e.Document)
	if e.Object != "" {
		where += " (" + e.Object + ")"
	}
	return where + ": " + e.Err.Error()
}

func (e *ManifestError) Unwrap() error { return e.Err }

// LoadManifests feeds every object in path — a YAML or JSON file, or a
// directory of them (*.yaml, *.yml, *.json, not recursive) — into f.
// Multi-document files and `kind: List` are supported. It returns how many
// objects were applied and one error per document that could not be, each a
// *ManifestError naming the file and object; a file that cannot be read at all
// is an error too, and the other files are still loaded.
func LoadManifests(path string, f *Feeder) (int, []error) {
	files, err := manifestFiles(path)
	if err != nil {
		return 0, []error{err}
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	applied := 0
	var errs []error
	for _, file := range files {
		n, fileErrs := loadFile(file, decoder, f)
		applied += n
		errs = append(errs, fileErrs...)
	}
	return applied, errs
}

func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

func loadFile(file string, decoder runtime.Decoder, f *Feeder) (int, []error) {
	fh, err := os.Open(file)
	if err != nil {
		return 0, []error{fmt.Errorf("manifests: %w", err)}
	}
	defer fh.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(fh))
	applied := 0
	var errs []error
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, &ManifestError{File: file, Document: doc, Err: err})
			break // the reader cannot find the next document after a read error
		}
		if len(bytes.TrimSpace(raw)) == 0 || isCommentOnly(raw) {
			doc--
			continue
		}
		n, docErrs := applyDocument(raw, decoder, f)
		applied += n
		for _, e := range docErrs {
			e.File, e.Document = file, doc
			errs = append(errs, e)
		}
	}
	return applied, errs
}

// applyDocument decodes one document, unrolling a List, and applies it.
func applyDocument(raw []byte, decoder runtime.Decoder, f *Feeder) (int, []*ManifestError) {
	obj, gvk, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return 0, []*ManifestError{{Err: fmt.Errorf("decode: %w", err)}}
	}
	if list, ok := obj.(*corev1.List); ok {
		applied := 0
		var errs []*ManifestError
		for i, item := range list.Items {
			n, itemErrs := applyDocument(item.Raw, decoder, f)
			applied += n
			for _, e := range itemErrs {
				e.Err = fmt.Errorf("item %d of the List: %w", i, e.Err)
				errs = append(errs, e)
			}
		}
		return applied, errs
	}
	defaultNamespace(obj)
	name := gvk.Kind + " " + objectName(obj)
	if _, err := f.Apply(obj); err != nil {
		return 0, []*ManifestError{{Object: name, Err: err}}
	}
	return 1, nil
}

// defaultNamespace puts namespaced objects that name no namespace into
// "default", as kubectl apply does.
func defaultNamespace(obj runtime.Object) {
	switch obj.(type) {
	case *corev1.Namespace, *corev1.Node:
		return
	}
	if m, ok := obj.(interface {
		GetNamespace() string
		SetNamespace(string)
	}); ok && m.GetNamespace() == "" {
		m.SetNamespace(metav1.NamespaceDefault)
	}
}

func objectName(obj runtime.Object) string {
	m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	if !ok {
		return ""
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func isCommentOnly(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}
