package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// RBACFile is deploy/'s RBAC manifest, relative to Config.DeployDir.
const RBACFile = "rbac.yaml"

// ApplyRBAC creates the ServiceAccount, ClusterRole and ClusterRoleBinding of
// deploy/rbac.yaml. edit, when not nil, changes the ClusterRole first (tests
// remove a verb to prove it is needed).
func (b *Bed) ApplyRBAC(ctx context.Context, edit func(*rbacv1.ClusterRole)) error {
	objs, err := readManifests(filepath.Join(b.cfg.DeployDir, RBACFile))
	if err != nil {
		return err
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = b.client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			if edit != nil {
				edit(o)
			}
			_, err = b.client.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = b.client.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("unexpected %T", o)
		}
		if err != nil {
			return fmt.Errorf("apply %s: %w", RBACFile, err)
		}
	}
	return nil
}

// serviceAccountToken returns a bound token of deploy/'s ServiceAccount, the
// credential a DaemonSet pod would get.
func (b *Bed) serviceAccountToken(ctx context.Context) (string, error) {
	objs, err := readManifests(filepath.Join(b.cfg.DeployDir, RBACFile))
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		sa, ok := o.(*corev1.ServiceAccount)
		if !ok {
			continue
		}
		tr, err := b.client.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
			&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(24 * 3600))}}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("token for %s/%s: %w", sa.Namespace, sa.Name, err)
		}
		return tr.Status.Token, nil
	}
	return "", fmt.Errorf("%s has no ServiceAccount", RBACFile)
}

// readManifests decodes every object of a multi-document YAML file.
func readManifests(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		out = append(out, obj)
	}
}
