// Package image builds OCI images without Docker: an empty base plus one layer
// of files (a static binary), a config with a non-shell entrypoint, one image
// per platform gathered in one index, written as a tarball that both
// `ctr image import` and `docker load` accept.
//
// # The tarball
//
// It is an OCI image layout (oci-layout, index.json, blobs/sha256/…) whose
// index.json points at the multi-platform index, named with the annotations
// containerd reads (io.containerd.image.name with the full reference,
// org.opencontainers.image.ref.name with the tag). It also holds a Docker
// manifest.json (the docker save format) for one platform, because Docker
// engines before 25 load nothing else; both refer to the same blobs.
//
// # Reproducible
//
// Files in the layer have owner root, a fixed modification time and the
// mode they are given; the config's creation time is the same fixed time. The
// same binaries give the same digests.
//
// `make image` uses it through cmd/mkimage; the node tier builds its pause and
// test-server images with it. Nothing in the product imports it.
package image
