package vm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrModuleNotFound means that a module a test package needs is neither a
// loadable module nor built into the kernel.
var ErrModuleNotFound = errors.New("module not found")

// Module is one module file to load in the guest.
type Module struct {
	Name string
	// Path is the file's path relative to the module directory.
	Path string
	// Optional modules come from soft dependencies: the guest logs a failed
	// load and goes on (e.g. crc32c_intel on a CPU without SSE4.2).
	Optional bool
}

// ModuleIndex is what depmod wrote into a kernel's module directory.
type ModuleIndex struct {
	dir     string
	paths   map[string]string   // module name -> relative path
	deps    map[string][]string // module name -> names of its dependencies
	builtin map[string]bool     // built-in modules and the aliases they provide
	aliases map[string][]string // plain aliases (no wildcards) -> module names
	pre     map[string][]string // soft dependencies loaded before a module
	post    map[string][]string // soft dependencies loaded after a module
}

// LoadModuleIndex reads modules.dep, modules.builtin, modules.builtin.modinfo,
// modules.alias and modules.softdep from dir.
func LoadModuleIndex(dir string) (*ModuleIndex, error) {
	x := &ModuleIndex{
		dir:     dir,
		paths:   map[string]string{},
		deps:    map[string][]string{},
		builtin: map[string]bool{},
		aliases: map[string][]string{},
		pre:     map[string][]string{},
		post:    map[string][]string{},
	}
	readers := []struct {
		file     string
		required bool
		parse    func(line string)
	}{
		{"modules.dep", true, x.parseDep},
		{"modules.builtin", false, func(l string) { x.builtin[moduleName(l)] = true }},
		{"modules.alias", false, x.parseAlias},
		{"modules.softdep", false, x.parseSoftdep},
	}
	for _, r := range readers {
		if err := eachLine(filepath.Join(dir, r.file), r.parse); err != nil {
			if !r.required && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("module index: %w", err)
		}
	}
	if err := x.readBuiltinAliases(filepath.Join(dir, "modules.builtin.modinfo")); err != nil {
		return nil, fmt.Errorf("module index: %w", err)
	}
	return x, nil
}

// Resolve returns the modules to load, in load order, for the given module
// names: every dependency before its user, soft "pre" dependencies before and
// "post" ones after. Built-in modules need no file and are left out.
func (x *ModuleIndex) Resolve(names []string) ([]Module, error) {
	r := resolver{x: x, seen: map[string]bool{}}
	for _, n := range names {
		if err := r.visit(normalize(n), false); err != nil {
			return nil, err
		}
	}
	return r.order, nil
}

// Dir is the module directory the index was read from.
func (x *ModuleIndex) Dir() string { return x.dir }

type resolver struct {
	x     *ModuleIndex
	seen  map[string]bool
	order []Module
}

func (r *resolver) visit(name string, optional bool) error {
	if r.x.builtin[name] || r.seen[name] {
		return nil
	}
	if _, ok := r.x.paths[name]; !ok {
		// Soft dependencies are often aliases ("crypto-crc32c").
		if targets := r.x.aliases[name]; len(targets) > 0 {
			for _, t := range targets {
				if err := r.visit(t, optional); err != nil {
					return err
				}
			}
			return nil
		}
		if optional {
			return nil
		}
		return fmt.Errorf("%w: %q in %s", ErrModuleNotFound, name, r.x.dir)
	}
	r.seen[name] = true
	for _, p := range r.x.pre[name] {
		if err := r.visit(p, true); err != nil {
			return err
		}
	}
	for _, d := range r.x.deps[name] {
		if err := r.visit(d, optional); err != nil {
			return err
		}
	}
	r.order = append(r.order, Module{Name: name, Path: r.x.paths[name], Optional: optional})
	for _, p := range r.x.post[name] {
		if err := r.visit(p, true); err != nil {
			return err
		}
	}
	return nil
}

// parseDep reads "kernel/a/x.ko: kernel/b/y.ko kernel/c/z.ko".
func (x *ModuleIndex) parseDep(line string) {
	path, deps, ok := strings.Cut(line, ":")
	if !ok {
		return
	}
	name := moduleName(path)
	x.paths[name] = path
	for _, d := range strings.Fields(deps) {
		x.deps[name] = append(x.deps[name], moduleName(d))
	}
}

// parseAlias reads "alias <alias> <module>" and keeps aliases without
// wildcards: soft dependencies name modules by such aliases.
func (x *ModuleIndex) parseAlias(line string) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "alias" || strings.ContainsAny(f[1], "*?[") {
		return
	}
	a := normalize(f[1])
	x.aliases[a] = append(x.aliases[a], normalize(f[2]))
}

// parseSoftdep reads "softdep <module> pre: a b post: c"; names before any
// "pre:" or "post:" are ignored, as modprobe does.
func (x *ModuleIndex) parseSoftdep(line string) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "softdep" {
		return
	}
	name := normalize(f[1])
	var into map[string][]string
	for _, w := range f[2:] {
		switch w {
		case "pre:":
			into = x.pre
		case "post:":
			into = x.post
		default:
			if into != nil {
				into[name] = append(into[name], normalize(w))
			}
		}
	}
}

// readBuiltinAliases marks the aliases provided by built-in modules
// (NUL-separated "module.alias=value" records) as built in.
func (x *ModuleIndex) readBuiltinAliases(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, rec := range bytes.Split(b, []byte{0}) {
		key, value, ok := strings.Cut(string(rec), "=")
		if _, field, _ := strings.Cut(key, "."); ok && field == "alias" {
			x.builtin[normalize(value)] = true
		}
	}
	return nil
}

func eachLine(path string, fn func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// moduleName turns "kernel/net/ipv4/ip_tunnel.ko.xz" into "ip_tunnel".
func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return normalize(base)
}

// normalize applies the kernel's rule that "-" and "_" are the same in
// module names.
func normalize(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}
