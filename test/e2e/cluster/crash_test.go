//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// crashReplicas is the size of the Deployment on the crashed node.
const crashReplicas = 30

// TestCrashWith30Pods: microlet SIGKILLed, as a crash or the OOM killer
// would end it, and started again under a Deployment of 30 replicas. No
// container restarts (the same container of every pod on the runtime and
// in the API, restartCount 0, the same pods), every pod's status is
// Running and Ready again, and the Node stays Ready: a fresh heartbeat
// from the new process, the condition's transition time unchanged.
func TestCrashWith30Pods(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	ctx := context.Background()
	labels := map[string]string{"app": "crash"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(crashReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm}}),
			},
		},
	}
	if _, err := cluster(t).Admin.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitAllRunning(t, n, ns, nil)
	runtimeBefore := map[types.UID]string{}
	for uid := range before {
		runtimeBefore[uid] = containerIDs(n.Containers(uid))
	}
	readyBefore := readyCondition(apiNode(t, n))

	if err := syscall.Kill(n.CorePID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	n.StopCore() // reaps it and checks that its plugins died with it
	killed := time.Now()
	n.StartCore()

	// The restarted node posts its status at once (its report schedule
	// starts empty, as the kubelet's). The API keeps whole seconds: the
	// post may fall in the second of the kill, but after the last post.
	n.Eventually("a heartbeat from the restarted node", func() (bool, string) {
		ready := readyCondition(apiNode(t, n))
		fresh := ready.LastHeartbeatTime.After(readyBefore.LastHeartbeatTime.Time) && !ready.LastHeartbeatTime.Time.Before(killed.Truncate(time.Second))
		return fresh, fmt.Sprintf("%+v", ready)
	})
	if ready := readyCondition(apiNode(t, n)); ready.Status != v1.ConditionTrue || !ready.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("Ready after the crash %+v, before %+v: want True since before", ready, readyBefore)
	}
	waitAllRunning(t, n, ns, before)
	for uid, ids := range runtimeBefore {
		if now := containerIDs(n.Containers(uid)); now != ids {
			t.Errorf("pod %s: containers on the runtime %s after the crash, %s before", uid, now, ids)
		}
	}
}

// waitAllRunning waits until the namespace has crashReplicas pods, each
// Running and Ready with one container that never restarted, and returns
// each pod's container ID by UID. With want, the pods must be those pods
// with those containers.
func waitAllRunning(t *testing.T, n *clusterNode, ns string, want map[types.UID]string) map[types.UID]string {
	t.Helper()
	got := map[types.UID]string{}
	n.Eventually(fmt.Sprintf("%d pods Running and Ready, no restart", crashReplicas), func() (bool, string) {
		list, err := cluster(t).Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		clear(got)
		ready := 0
		for _, p := range list.Items {
			s := p.Status.ContainerStatuses
			if len(s) != 1 {
				continue
			}
			if s[0].RestartCount != 0 {
				t.Fatalf("pod %s restarted: %s", p.Name, describe(&p, nil))
			}
			if want != nil && want[p.UID] != "" && want[p.UID] != s[0].ContainerID {
				t.Fatalf("pod %s runs container %s, before %s", p.Name, s[0].ContainerID, want[p.UID])
			}
			if p.Status.Phase == v1.PodRunning && s[0].Ready && s[0].ContainerID != "" && podReady(&p) {
				got[p.UID] = s[0].ContainerID
				ready++
			}
		}
		done := ready == crashReplicas && len(list.Items) == crashReplicas
		for uid := range want {
			done = done && got[uid] != ""
		}
		return done, fmt.Sprintf("%d of %d pods ready", ready, len(list.Items))
	})
	return got
}
