package cni

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nfrouter/nfrouter/model"
)

// Writer is the backend that keeps the CNI config file in line with this
// node's pod CIDRs. It implements watch.Backend.
type Writer struct {
	NodeName string
	Path     string // the config file, e.g. /etc/cni/net.d/10-kuberouter.conflist
	Log      *slog.Logger

	waiting bool // "no pod CIDR yet" already logged
}

// Name implements watch.Backend.
func (w *Writer) Name() string { return "cni" }

// Kinds implements watch.Backend: only nodes carry pod CIDRs.
func (w *Writer) Kinds() model.Kinds { return model.KindNodes }

// Sync implements watch.Backend: it renders the file from what is there and
// the node's pod CIDRs and replaces it (write to a temporary file, rename)
// only when the content changes. Only node changes wake it, and a read of
// one small file is all an unchanged sync costs. A node without pod CIDRs yet is not an
// error: the file is written once they are assigned.
func (w *Writer) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	log := w.Log
	if log == nil {
		log = slog.Default()
	}
	node := state.Nodes.Get(w.NodeName)
	if node == nil || len(node.PodCIDRs) == 0 {
		if !w.waiting {
			log.InfoContext(ctx, "No pod CIDR assigned to this node yet; the CNI config is written once there is", "file", w.Path)
		}
		w.waiting = true
		return nil
	}
	w.waiting = false
	current, err := os.ReadFile(w.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cni config: %w", err)
	}
	want, err := Render(current, node.PodCIDRs)
	if err != nil {
		return fmt.Errorf("%s: %w", w.Path, err)
	}
	if bytes.Equal(current, want) {
		return nil
	}
	if err := writeAtomic(w.Path, want); err != nil {
		return fmt.Errorf("cni config: %w", err)
	}
	log.InfoContext(ctx, "Wrote the CNI config with this node's pod CIDRs", "file", w.Path, "podCIDRs", node.PodCIDRs)
	return nil
}

// writeAtomic replaces path with data: the kubelet never reads half a file.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".nfrouter-cni-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
