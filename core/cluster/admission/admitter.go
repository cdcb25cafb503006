package admission

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/cluster/nodestatus"
	"github.com/microlet/microlet/core/pods/syncloop"
)

// Admitter is the predicates as a syncloop admitter.
type Admitter struct {
	// Node is the node's Node object as the API server has it, or nil
	// while it is not known (not registered or not read yet).
	Node func() *v1.Node
	// Initial stands in for the Node until it is known, as upstream's
	// initialNode: the node's name, default labels and registration taints.
	Initial *v1.Node
}

var _ syncloop.PureAdmitter = (*Admitter)(nil)

// Name names the admitter in logs.
func (a *Admitter) Name() string { return "predicates" }

// Pure: the predicates only read the pod, the admitted pods and the Node.
func (a *Admitter) Pure() bool { return true }

// Admit runs the predicates.
func (a *Admitter) Admit(_ context.Context, pod *v1.Pod, admitted []*v1.Pod) syncloop.Admission {
	node := a.Node()
	if node == nil {
		node = a.Initial
	}
	if v := Check(pod, node, admitted); !v.Fits() {
		return syncloop.Admission{Reason: v.Reason, Message: v.Message}
	}
	return syncloop.Admission{Admit: true}
}

// InitialNode is the Node the node agent would register, as far as the
// predicates read it (upstream's initialNode): name, the hostname, OS and
// arch labels (nodestatus.DefaultLabels, the ones registration gives),
// node_labels over them, and the registration taints.
func InitialNode(name string, labels map[string]string, taints []v1.Taint) *v1.Node {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodestatus.DefaultLabels(name)},
		Spec:       v1.NodeSpec{Taints: taints},
	}
	maps.Copy(node.Labels, labels)
	return node
}
