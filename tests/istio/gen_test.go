// Istio's own configuration generation (istio.io/istio pinned in go.mod): its test discovery server
// (pilot/test/xds, the one Istio's own xDS tests use) with Istio's config controllers as istiod wires
// them: the in-memory config store for Istio's objects, the Kubernetes registry (a fake client) for
// Services, Pods and the Gateway API and InferencePool objects, the Gateway API controller and the
// WasmPlugin -> TrafficExtension controller. For one proxy it writes what pilot would push to it:
// listeners, the route configurations they name, clusters and the extension configurations (ECDS)
// the listeners ask for, as JSON for tests/envoy/istio.py.
//
//	ISTIO_CONFIG=istio.yaml KUBE_OBJECTS=kube.yaml OUT=xds.json PROXY='{"type":"sidecar","namespace":"llm",
//	  "labels":{"app":"llama-server"},"ip":"10.244.0.7"}' [INFERENCE=<number of InferencePools>] ./istiogen.test -test.run TestXDS
package istiogen

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pilot/test/xdstest"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/schema/gvr"
	kubelib "istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/kclient/clienttest"
	"istio.io/istio/pkg/test"
	"istio.io/istio/pkg/test/util/retry"
)

type proxySpec struct {
	Type      string            `json:"type"` // sidecar | router
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
	IP        string            `json:"ip"`
	ID        string            `json:"id"` // pod name.namespace
}

func marshal[T proto.Message](t *testing.T, items []T) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(items))
	for _, m := range items {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestXDS(t *testing.T) {
	if os.Getenv("INFERENCE") != "" {
		// what PILOT_ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true does in istiod
		test.SetForTest(t, &features.EnableGatewayAPIInferenceExtension, true)
	}
	cfg, err := os.ReadFile(os.Getenv("ISTIO_CONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := os.ReadFile(os.Getenv("KUBE_OBJECTS"))
	if err != nil {
		t.Fatal(err)
	}
	var ps proxySpec
	if err := json.Unmarshal([]byte(os.Getenv("PROXY")), &ps); err != nil {
		t.Fatal(err)
	}
	configs, _, err := crd.ParseInputs(string(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for i := range configs {
		// what istiod's Kubernetes config store sets: short hosts (a VirtualService's "llama-server")
		// resolve to <name>.<namespace>.svc.cluster.local
		configs[i].Domain = "cluster.local"
	}
	opts := xds.FakeOptions{Configs: configs, KubernetesObjectString: string(kube)}
	if os.Getenv("INFERENCE") != "" {
		// the InferencePool CRD installed (the fake API server has the Gateway API's by default)
		opts.KubeClientModifier = func(c kubelib.Client) { clienttest.MakeCRD(t, c, gvr.InferencePool) }
	}
	s := xds.NewFakeDiscoveryServer(t, opts)
	typ := model.SidecarProxy
	if ps.Type == "router" {
		typ = model.Router
	}
	proxy := func() *model.Proxy {
		return s.SetupProxy(&model.Proxy{ID: ps.ID, Type: typ, IPAddresses: []string{ps.IP}, ConfigNamespace: ps.Namespace, Labels: ps.Labels,
			Metadata: &model.NodeMetadata{IstioVersion: "1.28.0", Labels: ps.Labels, Namespace: ps.Namespace}})
	}
	if n, _ := strconv.Atoi(os.Getenv("INFERENCE")); n > 0 {
		// Istio's InferencePool reconciler writes one shadow Service per pool (the routes' destination);
		// once the registry has them all, push again, as istiod does on a Service event
		retry.UntilOrFail(t, func() bool {
			found := 0
			for _, svc := range s.Env().ServiceDiscovery.Services() {
				if svc.Attributes.Labels[constants.InternalServiceSemantics] == constants.ServiceSemanticsInferencePool {
					found++
				}
			}
			return found >= n
		}, retry.Timeout(20*time.Second), retry.Delay(20*time.Millisecond))
		// the Gateway API controller resolves a route's pool to that Service when its own collections
		// see it, which may come after the push above on a busy machine: push until no route of the
		// proxy is left without a destination (what istiod converges to); past the timeout what was
		// generated is written as it is, and the suite's checks say which route has none
		_ = retry.Until(func() bool {
			s.Discovery.ConfigUpdate(&model.PushRequest{Forced: true, Reason: model.NewReasonStats(model.ServiceUpdate)})
			s.EnsureSynced(t)
			p := proxy()
			for _, rc := range s.RoutesFromListeners(p, s.Listeners(p)) {
				for _, vh := range rc.GetVirtualHosts() {
					for _, r := range vh.GetRoutes() {
						if r.GetRoute().GetCluster() == "UnknownService" {
							return false
						}
					}
				}
			}
			return true
		}, retry.Timeout(60*time.Second), retry.Delay(200*time.Millisecond))
	}
	p := proxy()
	ls := s.Listeners(p)
	// the extension configurations the HTTP filters ask for by name (a WasmPlugin's or TrafficExtension's module)
	var names []string
	for _, l := range ls {
		for _, fc := range l.GetFilterChains() {
			if h := xdstest.ExtractHTTPConnectionManager(t, fc); h != nil {
				for _, hf := range h.GetHttpFilters() {
					if hf.GetConfigDiscovery() != nil {
						names = append(names, hf.GetName())
					}
				}
			}
		}
	}
	out := map[string]any{
		"listeners": marshal(t, ls),
		"routes":    marshal(t, s.RoutesFromListeners(p, ls)),
		"clusters":  marshal(t, s.Clusters(p)),
		"ecds":      marshal(t, s.ConfigGen.BuildExtensionConfiguration(p, s.PushContext(), names, nil)),
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("OUT"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
