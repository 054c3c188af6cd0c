// Istio's own configuration generation (istio.io/istio's pilot/pkg/networking/core, pinned in go.mod)
// for a sidecar in front of one workload, with the Istio objects of a deploy/ overlay: the listeners
// pilot would push to that sidecar, written as JSON for tests/envoy/istio.py to read.
//
//	ISTIO_CONFIG=objects.yaml OUT=listeners.json NS=llm APP=llama-server PORT=8080 ./istiogen.test
package istiogen

import (
	"os"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pkg/config/host"
	"istio.io/istio/pkg/config/labels"
	"istio.io/istio/pkg/config/protocol"
)

func TestSidecarListeners(t *testing.T) {
	cfg, err := os.ReadFile(os.Getenv("ISTIO_CONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	ns, app := os.Getenv("NS"), os.Getenv("APP")
	port, err := strconv.Atoi(os.Getenv("PORT"))
	if err != nil {
		t.Fatal(err)
	}
	// the workload's Service and its one pod, as the Kubernetes registry would give them
	svc := &model.Service{
		Hostname: host.Name(app + "." + ns + ".svc.cluster.local"),
		Ports:    model.PortList{{Name: "http", Port: port, Protocol: protocol.HTTP}},
		Attributes: model.ServiceAttributes{Name: app, Namespace: ns, ServiceRegistry: "Kubernetes",
			LabelSelectors: map[string]string{"app": app}},
		DefaultAddress: "10.96.0.20",
	}
	pod := &model.ServiceInstance{Service: svc, ServicePort: svc.Ports[0],
		Endpoint: &model.IstioEndpoint{Addresses: []string{"10.244.0.7"}, EndpointPort: uint32(port), ServicePortName: "http",
			Labels: labels.Instance{"app": app}, Namespace: ns}}
	cg := core.NewConfigGenTest(t, core.TestOptions{ConfigString: string(cfg), Services: []*model.Service{svc}, Instances: []*model.ServiceInstance{pod}})
	p := cg.SetupProxy(&model.Proxy{IPAddresses: []string{"10.244.0.7"}, ConfigNamespace: ns, Labels: map[string]string{"app": app},
		Metadata: &model.NodeMetadata{IstioVersion: "1.28.0", Labels: map[string]string{"app": app}, Namespace: ns}})
	out := []byte("[")
	for i, l := range cg.Listeners(p) {
		b, err := protojson.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	if err := os.WriteFile(os.Getenv("OUT"), append(out, ']'), 0o644); err != nil {
		t.Fatal(err)
	}
}
