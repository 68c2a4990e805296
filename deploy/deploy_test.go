// Package deploy_test checks deploy/: the Kubernetes manifests decode
// strictly into the Kubernetes API types (a misspelt or misplaced field
// fails), and the image builds and runs (Linux, with the test Docker
// engine).
package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// typed returns the API object of kind apiVersion/kind, to decode into.
func typed(t *testing.T, typeMeta metav1.TypeMeta) any {
	t.Helper()
	switch typeMeta.APIVersion + "/" + typeMeta.Kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	}
	t.Fatalf("no API type for %s %s: add it here", typeMeta.APIVersion, typeMeta.Kind)
	return nil
}

// TestManifestsDecodeStrictly decodes every document of deploy/kubernetes
// into its API type, refusing unknown and duplicate fields, and checks
// what the service relies on.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	objects := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var tm metav1.TypeMeta
			require.NoError(t, yaml.Unmarshal(doc, &tm), "%s #%d", f, i)
			obj := typed(t, tm)
			require.NoError(t, yaml.UnmarshalStrict(doc, obj), "%s #%d", f, i)
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal(doc, &meta))
			objects[tm.Kind+"/"+meta.Metadata.Name] = obj
		}
	}

	// A typo fails: the decoder is strict.
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n")
	require.Error(t, yaml.UnmarshalStrict(bad, &appsv1.Deployment{}))

	d, ok := objects["Deployment/hermes-wasm-exec"].(*appsv1.Deployment)
	require.True(t, ok, "the Deployment")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	// The grace period outlasts the drain timeout it passes.
	args := strings.Join(c.Args, " ")
	require.Contains(t, args, "--drain-timeout 30s")
	require.Greater(t, *pod.TerminationGracePeriodSeconds, int64(30))
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = true
	}
	require.True(t, mounts["/data"] && mounts["/tmp"], "HERMES_HOME and TMPDIR are writable volumes")
	for _, kind := range []string{"Service/hermes-wasm-exec", "PodDisruptionBudget/hermes-wasm-exec", "HorizontalPodAutoscaler/hermes-wasm-exec", "NetworkPolicy/hermes-wasm-exec", "Secret/hermes-wasm-exec"} {
		require.Contains(t, objects, kind)
	}
	np := objects["NetworkPolicy/hermes-wasm-exec"].(*networkingv1.NetworkPolicy)
	require.Contains(t, np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	require.Empty(t, np.Spec.Egress, "strict-only: no egress")
}
