package v1alpha1_test

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// releasedDir holds one directory per release, named after its tag, with one file per kind of
// the objects that release wrote (testdata/released/<release>/<lowercase kind>.yaml). A release
// adds its directory; nobody edits an older one.
const releasedDir = "testdata/released"

// releasedKinds are the kinds a release snapshots, by the name of their file.
var releasedKinds = map[string]func() any{
	"rollingupgradeconfig.yaml": func() any { return &v1alpha1.RollingUpgradeConfig{} },
	"applicationversion.yaml":   func() any { return &v1alpha1.ApplicationVersion{} },
	"gitwriteback.yaml":         func() any { return &v1alpha1.GitWriteBack{} },
	"rolloutcalendar.yaml":      func() any { return &v1alpha1.RolloutCalendar{} },
}

// releasedObject is one object of a snapshot file.
type releasedObject struct {
	release, file string
	index         int    // among the objects of the file
	yaml          []byte // the object's document, as the file holds it
	json          []byte // the same, as JSON
}

// name is the object's subtest name, e.g. v0.1.0/rollingupgradeconfig.yaml#0.
func (o releasedObject) name() string {
	return fmt.Sprintf("%s/%s#%d", o.release, o.file, o.index)
}

// releasedObjects reads every object of every snapshot file, by directory and file name, then in
// the order of the file's documents. A document that holds only comments is no object.
func releasedObjects(t *testing.T) []releasedObject {
	t.Helper()
	releases, err := os.ReadDir(releasedDir)
	if err != nil {
		t.Fatal(err)
	}
	var objs []releasedObject
	for _, rel := range releases {
		if !rel.IsDir() {
			t.Errorf("%s/%s: only release directories belong there", releasedDir, rel.Name())
			continue
		}
		files, err := os.ReadDir(filepath.Join(releasedDir, rel.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			path := filepath.Join(releasedDir, rel.Name(), f.Name())
			if _, ok := releasedKinds[f.Name()]; !ok {
				t.Errorf("%s: not the file of a kind (%v)", path, slices.Sorted(maps.Keys(releasedKinds)))
				continue
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			n := 0
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				j, err := yaml.YAMLToJSON(doc)
				if err != nil {
					t.Fatalf("%s, document after object %d: %v", path, n, err)
				}
				if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
					continue
				}
				objs = append(objs, releasedObject{release: rel.Name(), file: f.Name(), index: n, yaml: doc, json: j})
				n++
			}
			if n == 0 {
				t.Errorf("%s holds no object", path)
			}
		}
	}
	if len(objs) == 0 {
		t.Fatalf("no snapshot under %s", releasedDir)
	}
	return objs
}

// TestReleasedSnapshotsDecodeAndV010CoversEveryField decodes every released object strictly into
// the Go types, so that a typo in a snapshot fails here rather than as a puzzling difference
// against the API server (released_integration_test.go), and checks that the v0.1.0 snapshot
// sets every JSON field of spec and status of the four kinds.
func TestReleasedSnapshotsDecodeAndV010CoversEveryField(t *testing.T) {
	covered := map[string]map[string]bool{} // v0.1.0 file -> JSON paths its objects set
	for _, o := range releasedObjects(t) {
		obj := releasedKinds[o.file]()
		// As readStrict does, per document: readStrict reads a whole file, and a file may hold
		// several objects.
		kind := reflect.TypeOf(obj).Elem().Name()
		if err := yaml.UnmarshalStrict(o.yaml, obj); err != nil {
			t.Errorf("%s does not match the Go types: %v", o.name(), err)
		} else if tm := reflect.ValueOf(obj).Elem().FieldByName("TypeMeta").Interface().(metav1.TypeMeta); tm.APIVersion != v1alpha1.GroupVersion.String() || tm.Kind != kind {
			t.Errorf("%s: apiVersion %q kind %q, want %s %s", o.name(), tm.APIVersion, tm.Kind, v1alpha1.GroupVersion, kind)
		}
		// Coverage counts the object even when it does not decode: the error above says what is
		// wrong with it, and this check then lists only fields the file really lacks.
		if o.release != "v0.1.0" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(o.json, &m); err != nil {
			t.Fatal(err)
		}
		if covered[o.file] == nil {
			covered[o.file] = map[string]bool{}
		}
		collectSetPaths("", m, covered[o.file])
	}

	// Only v0.1.0 must cover every field. It is the schema of the code as it was when the
	// snapshot was made, and complete by construction; this check guards against a field
	// forgotten there. A later release's snapshot is what that release wrote, and it may be
	// checked for its own new fields when it is made, but once the types move on, an old
	// snapshot cannot be asked to set fields that did not exist when it was written.
	for file, newObj := range releasedKinds {
		set := covered[file]
		if set == nil {
			t.Errorf("v0.1.0/%s: missing", file)
			continue
		}
		root := reflect.TypeOf(newObj()).Elem()
		var missing []string
		for _, p := range jsonFieldPaths(root) {
			if !set[p] {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			t.Errorf("v0.1.0/%s sets no value for these fields of %s:\n  %s", file, root.Name(), strings.Join(missing, "\n  "))
		}
	}
}

// collectSetPaths adds the path of every value in v: maps give their keys (a.b), lists their
// elements (a[]). A Go map (a label selector's matchLabels) is set when its key is: its own keys
// below it are data, not fields. An empty list sets the list, none of its elements' fields.
func collectSetPaths(prefix string, v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p] = true
			collectSetPaths(p, e, into)
		}
	case []any:
		for _, e := range v {
			into[prefix+"[]"] = true
			collectSetPaths(prefix+"[]", e, into)
		}
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonFieldPaths lists the JSON paths of spec and status of a root type and of everything they
// hold: nested structs, list elements ([]), pointers. A type that marshals itself (metav1.Time,
// metav1.Duration, intstr.IntOrString) and a map are single values. The root's TypeMeta and
// ObjectMeta are the API machinery's, not the schema of this release.
func jsonFieldPaths(root reflect.Type) []string {
	var paths []string
	for i := range root.NumField() {
		f := root.Field(i)
		name := jsonName(f)
		if f.Anonymous || name == "metadata" || name == "" {
			continue // TypeMeta, ObjectMeta
		}
		paths = append(paths, name)
		walkJSONFields(name, f.Type, &paths, nil)
	}
	slices.Sort(paths)
	return paths
}

func walkJSONFields(prefix string, t reflect.Type, paths *[]string, seen []reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		if t.Elem().Kind() == reflect.Uint8 { // []byte is a base64 string
			return
		}
		*paths = append(*paths, prefix+"[]")
		walkJSONFields(prefix+"[]", t.Elem(), paths, seen)
		return
	}
	if t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return
	}
	if slices.Contains(seen, t) {
		panic("recursive type " + t.String() + " at " + prefix)
	}
	seen = append(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" { // inlined: its fields are this struct's
			walkJSONFields(prefix, f.Type, paths, seen)
			continue
		}
		p := prefix + "." + name
		*paths = append(*paths, p)
		walkJSONFields(p, f.Type, paths, seen)
	}
}

// jsonName is the field's name in JSON: its tag's, else the Go name ("" for an inlined field).
func jsonName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" && tag == "-" {
		return "-"
	}
	if name != "" {
		return name
	}
	if f.Anonymous || ok && strings.Contains(tag, "inline") {
		return ""
	}
	return f.Name
}
