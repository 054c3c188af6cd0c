"""The Gateway API Inference Extension's own Endpoint Picker (EPP), for the suites that put it behind a
gateway (tests/envoy/istio.py): built from `sigs.k8s.io/gateway-api-inference-extension` (pinned in
tests/epp/go.mod) on the Go module proxy, and started as an overlay's EPP Deployment starts it (its
args and the epp-plugins ConfigMap), against harness/kubeapi.py's read-only Kubernetes API holding the
InferencePool and the pool's pods. The EPP needs an API server even with one pool (its runner calls
ctrl.GetConfig() and runs a controller-runtime manager whose reconcilers read the pool and the pods);
that one serves exactly what a cluster would show it.

    epp = Epp(objs, "llama-epp", pods=[("127.0.0.2", port), ...])
    epp.port, epp.ready, epp.logs()
"""
import copy, os, re, socket, subprocess, tempfile, time

from harness import gotools, runner
from harness.kubeapi import KubeApi, ready_pod

PACKAGE = "sigs.k8s.io/gateway-api-inference-extension/cmd/epp"


def binary():
    """The EPP built from the pinned module (cached by go.mod and go.sum), or None and why."""
    return gotools.build(os.path.join("tests", "epp"), "epp", [PACKAGE])


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Epp(runner.Process):
    """The overlay's EPP Deployment `name`, run here: its pool from the overlay with `targetPorts` set to
    the pods' port, one Ready pod per (ip, port) in `pods` with the pool's selector labels, its plugins
    file from the overlay's ConfigMap, its ports free ones."""

    def __init__(self, objs, name, pods):
        self.dir = tempfile.mkdtemp(prefix="toolfit-epp-")
        exe, self.build_error = binary()
        dep = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == name)
        spec = dep["spec"]["template"]["spec"]
        args = list(spec["containers"][0]["args"])
        flag = lambda f: args[args.index(f) + 1] if f in args else None  # noqa: E731
        ns = flag("--pool-namespace") or dep["metadata"].get("namespace", "default")
        pool = copy.deepcopy(next(o for o in objs if o["kind"] == "InferencePool" and o["metadata"]["name"] == flag("--pool-name")))
        pool["metadata"]["namespace"] = ns
        pool["spec"]["targetPorts"] = [{"number": pods[0][1]}]
        labels = pool["spec"]["selector"]["matchLabels"]
        self.pods = [ready_pod(f"{pool['metadata']['name']}-{i}", ns, dict(labels), ip, [{"name": "model-server", "image": "model-server"}])
                     for i, (ip, _) in enumerate(pods)]
        self.api = KubeApi([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, pool] + self.pods)
        # the plugins file where the Deployment mounts it, read from the ConfigMap behind that volume
        mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0].get("volumeMounts", [])}
        for v in spec.get("volumes", []):
            cm = next((o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == v.get("configMap", {}).get("name")), None)
            if cm and v["name"] in mounts:
                for key, text in cm["data"].items():
                    local = os.path.join(self.dir, key)
                    open(local, "w").write(text)
                    args = [local if a == os.path.join(mounts[v["name"]], key) else a for a in args]
        self.port, self.health, self.metrics = runner.free_port(), runner.free_port(), runner.free_port()
        ports = {"--grpc-port": self.port, "--grpc-health-port": self.health, "--metrics-port": self.metrics}
        args = [str(ports[args[i - 1]]) if i and args[i - 1] in ports else a for i, a in enumerate(args)]
        args += [f for f, p in ports.items() if f not in args for f in (f, str(p))]
        self.args = args
        self.log = open(os.path.join(self.dir, "epp.log"), "w+")
        self.proc = None
        self.ready = False
        if exe is None:
            return
        self.proc = subprocess.Popen([exe, *args, "--v", "4"], env=dict(os.environ, KUBECONFIG=self.api.kubeconfig, GRPC_GO_LOG_SEVERITY_LEVEL="info", GRPC_GO_LOG_VERBOSITY_LEVEL="2"), stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end and self.proc.poll() is None and not self.ready:
            # the pool's pods in its datastore and its ext_proc port taking connections (the health
            # server says "listening" too, on its own port)
            added = set(re.findall(r'Pod added.*?"name": \{"name":"([^"]+)"', self.logs()))
            self.ready = added >= {p["metadata"]["name"] for p in self.pods} and accepts(self.port)
            time.sleep(0.1)

    def stop(self):
        if self.proc is not None:
            super().stop()
        self.api.stop()
