//go:build e2e

package clustere2e

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestProjectedTokenRotated: a projected serviceAccountToken with an
// audience and the API's shortest life (600 s) is in the container and
// accepted by TokenReview for that audience, bound to the pod. The node
// then gets a new token for it (a restarted node has no cached token and
// asks for one, as the kubelet does; renewal at 80 % of the life or 24 h is
// the same path, which the API's 600 s minimum puts 8 minutes away:
// core/cluster/volumesources' unit tests cover when), and writes it to the
// running container's file, which TokenReview accepts too; the container
// was not restarted.
func TestProjectedTokenRotated(t *testing.T) {
	t.Parallel()
	// A short sync period: the restarted node writes the pod's volumes at
	// its first sync of the adopted pod, and again every period.
	n := startNode(t, nodeOptions{Settings: map[string]string{"sync_frequency": `"5s"`}})
	waitReady(t, n, "")
	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin
	const audience = "microlet-e2e"
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "3600"},
		VolumeMounts: []v1.VolumeMount{{Name: "token", MountPath: "/token"}}},
		v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: audience, ExpirationSeconds: ptr.To[int64](600), Path: "token"}}}}}})
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "token"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitAPIPod(t, n, ns, "token", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	review := func(token string) {
		t.Helper()
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := r.Status
		if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" ||
			strings.Join(st.User.Extra["authentication.kubernetes.io/pod-uid"], "") != string(pod.UID) ||
			strings.Join(st.Audiences, ",") != audience {
			t.Errorf("TokenReview for audience %s: %+v, want the default service account's, bound to pod %s", audience, st, pod.UID)
		}
	}
	first := execIn(t, n, pod.UID, "cat", "/token/token")
	review(first)
	before := n.Containers(pod.UID)

	n.RestartCore()
	var second string
	n.Eventually("a new token in the container's file", func() (bool, string) {
		second = execIn(t, n, pod.UID, "cat", "/token/token")
		return second != first && second != "", "the first token still"
	})
	review(second)
	if after := n.Containers(pod.UID); len(after) != 1 || len(before) != 1 || after[0].Id != before[0].Id {
		t.Errorf("containers before %s, after %s: want the same one container", containerIDs(before), containerIDs(after))
	}
}
