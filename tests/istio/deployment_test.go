// Istio's gateway deployment controller (pilot/pkg/config/kube/gatewaycommon, as istiod runs it for
// Gateway API gateways of class istio) with the kube-gateway template from the same module: the
// Deployment, Service and ServiceAccount istiod would apply for the Gateways in KUBE_OBJECTS (with any
// infrastructure parametersRef ConfigMap there), as YAML documents for tests/envoy/istio.py.
//
//	KUBE_OBJECTS=kube.yaml ISTIO_SRC=<istio.io/istio module dir> OUT=applied.yaml ./istiogen.test -test.run TestGatewayDeployment
package istiogen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeVersion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/config/kube/gatewaycommon"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/cluster"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	kubelib "istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/revisions"
	"istio.io/istio/pkg/test"
	"istio.io/istio/pkg/test/util/retry"
)

func TestGatewayDeployment(t *testing.T) {
	raw, err := os.ReadFile(os.Getenv("KUBE_OBJECTS"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	gateways := 0
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		o, _, err := kubelib.IstioCodec.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.GetObjectKind().GroupVersionKind().Kind == "Gateway" {
			gateways++
		}
		objs = append(objs, o)
	}
	tmpl, err := os.ReadFile(filepath.Join(os.Getenv("ISTIO_SRC"), "manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	templates, err := inject.ParseTemplates(map[string]string{"kube-gateway": string(tmpl)})
	if err != nil {
		t.Fatal(err)
	}
	values, err := inject.NewValuesConfig("global:\n  hub: docker.io/istio\n  tag: 1.28.0\n")
	if err != nil {
		t.Fatal(err)
	}
	client := kubelib.NewFakeClient(objs...)
	client.Kube().Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &kubeVersion.Info{Major: "1", Minor: "32"}
	stop := test.NewStop(t)
	env := model.NewEnvironment()
	env.Watcher = meshwatcher.NewTestWatcher(mesh.DefaultMeshConfig())
	env.PushContext().InitDone.Store(true)
	tw := revisions.NewTagWatcher(client, "", "istio-system")
	go tw.Run(stop)
	d := gatewaycommon.NewDeploymentController(client, cluster.ID("Kubernetes"), env, func() inject.WebhookConfig {
		return inject.WebhookConfig{Templates: templates, Values: values, MeshConfig: mesh.DefaultMeshConfig()}
	}, func(fn func()) {}, tw, "", "")
	// istiod server-side applies what it rendered; a fake API server has no apply, so the controller's
	// patcher (unexported: Istio's own tests set it from inside the package) records each document
	var mu sync.Mutex
	var buf bytes.Buffer
	deployments, services := 0, 0
	patcher := func(gvr schema.GroupVersionResource, name string, namespace string, data []byte, subresources ...string) error {
		b, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		switch gvr.Resource {
		case "deployments":
			deployments++
		case "services":
			services++
		}
		buf.Write(b)
		buf.WriteString("---\n")
		return nil
	}
	f := reflect.ValueOf(d).Elem().FieldByName("patcher")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(patcher))
	client.RunAndWait(stop)
	go d.Run(stop)
	retry.UntilOrFail(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return deployments >= gateways && services >= gateways
	}, retry.Timeout(20*time.Second), retry.Delay(20*time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	if err := os.WriteFile(os.Getenv("OUT"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
