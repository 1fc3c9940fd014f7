package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodSpec is what the bed needs to run a pod.
type PodSpec struct {
	Namespace string
	Name      string
	Labels    map[string]string
	Node      string
	Ports     []corev1.ContainerPort // served for real inside the pod
}

// Pod is a running pod: its API object and its namespace.
type Pod struct {
	PodSpec
	IP  netip.Addr
	UID types.UID

	net *podNet
	obj *corev1.Pod // last version written
}

func (p *Pod) key() string { return p.Namespace + "/" + p.Name }

// StartPod runs a new pod the way a kubelet does, in four writes: create
// (already bound to the node), Pending with hostIP, Running with podIP but not
// ready, then Ready.
func (b *Bed) StartPod(ctx context.Context, spec PodSpec) (*Pod, error) {
	p, err := b.createPod(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := b.runPod(ctx, p); err != nil {
		return nil, err
	}
	if err := b.setReady(ctx, p, true); err != nil {
		return nil, err
	}
	return p, nil
}

// ReplacePod replaces old by a new pod with the same spec and a fresh name,
// in the eight writes of a realistic replacement (a ReplicaSet's controller
// and the kubelets, interleaved):
//
//  1. graceful delete of old (deletionTimestamp set)
//  2. create the replacement, bound to the node
//  3. old Ready=False
//  4. new Pending with hostIP
//  5. new Running with podIP, not ready
//  6. old Succeeded (its containers have stopped)
//  7. final delete of old (grace 0)
//  8. new Ready=True
//
// Only 5→6 change what the firewall knows, and readiness what endpoints hold.
func (b *Bed) ReplacePod(ctx context.Context, old *Pod, newName string) (*Pod, error) {
	pods := b.client.CoreV1().Pods(old.Namespace)
	grace := int64(30)
	if err := pods.Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return nil, fmt.Errorf("replace %s: graceful delete: %w", old.key(), err)
	}
	spec := old.PodSpec
	spec.Name = newName
	p, err := b.createPod(ctx, spec)
	if err != nil {
		return nil, err
	}
	// The graceful delete changed the object; read it back before writing status.
	cur, err := pods.Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", old.key(), err)
	}
	old.obj = cur
	if err := b.setReady(ctx, old, false); err != nil {
		return nil, err
	}
	if err := b.runPod(ctx, p); err != nil {
		return nil, err
	}
	if err := b.finishPod(ctx, old); err != nil {
		return nil, err
	}
	if err := b.setReady(ctx, p, true); err != nil {
		return nil, err
	}
	return p, nil
}

// DeletePod stops a pod the way a kubelet does: graceful delete, Ready=False,
// Succeeded, final delete.
func (b *Bed) DeletePod(ctx context.Context, p *Pod) error {
	grace := int64(30)
	pods := b.client.CoreV1().Pods(p.Namespace)
	if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		return fmt.Errorf("delete %s: %w", p.key(), err)
	}
	cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("delete %s: %w", p.key(), err)
	}
	p.obj = cur
	if err := b.setReady(ctx, p, false); err != nil {
		return err
	}
	return b.finishPod(ctx, p)
}

// Pods returns the running pods, in no particular order.
func (b *Bed) Pods() []*Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*Pod
	for _, p := range b.pods {
		out = append(out, p)
	}
	return out
}

// createPod is write 1 of a new pod: the object, bound to its node. Its IP is
// allocated here so the object and the namespace agree.
func (b *Bed) createPod(ctx context.Context, spec PodSpec) (*Pod, error) {
	node, err := b.Node(spec.Node)
	if err != nil {
		return nil, err
	}
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace, Labels: spec.Labels},
		Spec: corev1.PodSpec{
			NodeName:   spec.Node,
			Containers: []corev1.Container{{Name: "app", Image: "nfrouter.test/app", Ports: spec.Ports}},
		},
	}
	created, err := b.client.CoreV1().Pods(spec.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	p := &Pod{PodSpec: spec, UID: created.UID, obj: created}
	b.mu.Lock()
	p.IP, err = node.pool.get()
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// runPod is writes 2 and 3: Pending with hostIP; then the pod's namespace and
// servers come up and it is Running with its IP, not yet ready.
func (b *Bed) runPod(ctx context.Context, p *Pod) error {
	node, err := b.Node(p.Node)
	if err != nil {
		return err
	}
	now := metav1.Now()
	st := &p.obj.Status
	st.Phase = corev1.PodPending
	st.HostIP = node.IP.String()
	st.HostIPs = []corev1.HostIP{{IP: node.IP.String()}}
	st.StartTime = &now
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, true),
		cond(corev1.ContainersReady, false), cond(corev1.PodReady, false),
	}
	st.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nfrouter.test/app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	if err := b.writeStatus(ctx, p); err != nil {
		return err
	}
	pn, err := b.addPodNet(node, p)
	if err != nil {
		return err
	}
	p.net = pn
	b.mu.Lock()
	b.pods[p.key()] = p
	b.mu.Unlock()
	st = &p.obj.Status
	st.Phase = corev1.PodRunning
	st.PodIP = p.IP.String()
	st.PodIPs = []corev1.PodIP{{IP: p.IP.String()}}
	st.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nfrouter.test/app", Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	return b.writeStatus(ctx, p)
}

// setReady flips the Ready and ContainersReady conditions.
func (b *Bed) setReady(ctx context.Context, p *Pod, ready bool) error {
	st := &p.obj.Status
	var conds []corev1.PodCondition
	for _, c := range st.Conditions {
		if c.Type != corev1.PodReady && c.Type != corev1.ContainersReady {
			conds = append(conds, c)
		}
	}
	st.Conditions = append(conds, cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready))
	for i := range st.ContainerStatuses {
		st.ContainerStatuses[i].Ready = ready
	}
	return b.writeStatus(ctx, p)
}

// finishPod is the end of a pod: its containers stop (namespace removed), it
// is Succeeded, and the final delete removes the object.
func (b *Bed) finishPod(ctx context.Context, p *Pod) error {
	b.mu.Lock()
	delete(b.pods, p.key())
	b.mu.Unlock()
	if p.net != nil {
		if err := p.net.close(); err != nil {
			return fmt.Errorf("stop pod %s: %w", p.key(), err)
		}
	}
	st := &p.obj.Status
	st.Phase = corev1.PodSucceeded
	st.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "nfrouter.test/app",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}}}
	if err := b.writeStatus(ctx, p); err != nil {
		return err
	}
	zero := int64(0)
	err := b.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil {
		return fmt.Errorf("final delete %s: %w", p.key(), err)
	}
	if node, err := b.Node(p.Node); err == nil {
		b.mu.Lock()
		node.pool.put(p.IP)
		b.mu.Unlock()
	}
	return nil
}

func (b *Bed) writeStatus(ctx context.Context, p *Pod) error {
	upd, err := b.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p.obj, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("pod %s: status: %w", p.key(), err)
	}
	p.obj = upd
	return nil
}

func cond(t corev1.PodConditionType, ok bool) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(time.Now())}
}

func ptr[T any](v T) *T { return &v }
