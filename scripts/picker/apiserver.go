package main

// A stand-in for the Kubernetes API server, as far as the endpoint picker reaches it with
// --pool-name: API discovery for the core group and inference.networking.k8s.io/v1, and LIST
// and WATCH of one InferencePool and of the Pods in its namespace (the picker's standalone
// mode, --endpoint-selector, fails at start in v1.4.0 and v1.5.0: it builds its pool from
// --pool-name, which that mode requires to be empty). Each qm box is one Pod, Ready, at
// 127.0.0.1, whose `inference.networking.k8s.io/active-ports` annotation names its API port,
// so the picker makes one endpoint per box out of the pool's targetPorts. Nothing here
// changes after the start: the picker learns which models a box holds from the box's
// /metrics, not from here.

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

const (
	podNamespace = "qm"
	podLabel     = "app"
	podLabelVal  = "qm"
)

const poolName = "qm"

type fakeAPIServer struct {
	URL  string
	pods []map[string]any
	pool map[string]any
	log  *log.Logger
}

// poolObject is deploy/kubernetes/gateway/inferencepool.yaml with one target port per box.
func poolObject(ports []int) map[string]any {
	targets := []any{}
	for _, p := range ports {
		targets = append(targets, map[string]any{"number": p})
	}
	return map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1",
		"kind":       "InferencePool",
		"metadata": map[string]any{"name": poolName, "namespace": podNamespace,
			"uid": "00000000-0000-0000-0000-000000000001", "resourceVersion": "1",
			"creationTimestamp": "2026-01-01T00:00:00Z"},
		"spec": map[string]any{
			"selector":    map[string]any{"matchLabels": map[string]string{podLabel: podLabelVal}},
			"targetPorts": targets,
			"endpointPickerRef": map[string]any{"name": "qm-epp", "port": map[string]any{"number": 9002},
				"failureMode": "FailClose"},
		},
	}
}

func podObject(name string, port int) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":              name,
			"namespace":         podNamespace,
			"uid":               "00000000-0000-0000-0000-" + fmt.Sprintf("%012d", port),
			"resourceVersion":   "1",
			"creationTimestamp": "2026-01-01T00:00:00Z",
			"labels":            map[string]string{podLabel: podLabelVal},
			"annotations": map[string]string{
				"inference.networking.k8s.io/active-ports": fmt.Sprint(port),
			},
		},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "qm", "image": "qm",
				"ports": []any{map[string]any{"containerPort": port}}}},
		},
		"status": map[string]any{
			"phase":  "Running",
			"podIP":  "127.0.0.1",
			"podIPs": []any{map[string]any{"ip": "127.0.0.1"}},
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
			},
		},
	}
}

func startFakeAPIServer(ports map[string]int, logPath string) (*fakeAPIServer, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &fakeAPIServer{log: log.New(f, "", log.Lmicroseconds)}
	names := make([]string, 0, len(ports))
	for name := range ports {
		names = append(names, name)
	}
	var portList []int
	for _, name := range sortStrings(names) {
		s.pods = append(s.pods, podObject(name, ports[name]))
		portList = append(portList, ports[name])
	}
	s.pool = poolObject(portList)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	go func() { _ = http.Serve(ln, s) }()
	return s, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.log.Printf("%s %s", r.Method, r.URL.RequestURI())
	podsPath := "/api/v1/namespaces/" + podNamespace + "/pods"
	poolsPath := "/apis/inference.networking.k8s.io/v1/namespaces/" + podNamespace + "/inferencepools"
	switch {
	case r.URL.Path == "/api":
		writeJSON(w, 200, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]any{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
	case r.URL.Path == "/apis":
		gv := map[string]any{"groupVersion": "inference.networking.k8s.io/v1", "version": "v1"}
		writeJSON(w, 200, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{
			map[string]any{"name": "inference.networking.k8s.io", "versions": []any{gv}, "preferredVersion": gv}}})
	case r.URL.Path == "/apis/inference.networking.k8s.io/v1":
		writeJSON(w, 200, map[string]any{"kind": "APIResourceList", "apiVersion": "v1",
			"groupVersion": "inference.networking.k8s.io/v1",
			"resources": []any{map[string]any{"name": "inferencepools", "singularName": "inferencepool",
				"namespaced": true, "kind": "InferencePool", "verbs": []string{"get", "list", "watch"}}}})
	case r.URL.Path == "/apis/inference.networking.x-k8s.io/v1alpha2":
		// Asked for InferenceObjective and InferenceModelRewrite: none here.
		writeJSON(w, 200, map[string]any{"kind": "APIResourceList", "apiVersion": "v1",
			"groupVersion": "inference.networking.x-k8s.io/v1alpha2", "resources": []any{}})
	case r.URL.Path == poolsPath && r.URL.Query().Get("watch") == "true":
		s.watch(w, r, []map[string]any{s.pool}, "InferencePool")
	case r.URL.Path == poolsPath:
		writeJSON(w, 200, map[string]any{"kind": "InferencePoolList", "apiVersion": "inference.networking.k8s.io/v1",
			"metadata": map[string]any{"resourceVersion": "1"}, "items": []any{s.pool}})
	case r.URL.Path == poolsPath+"/"+poolName:
		writeJSON(w, 200, s.pool)
	case r.URL.Path == "/api/v1":
		writeJSON(w, 200, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
			"resources": []any{map[string]any{"name": "pods", "singularName": "pod", "namespaced": true,
				"kind": "Pod", "verbs": []string{"get", "list", "watch"}}}})
	case r.URL.Path == "/version":
		writeJSON(w, 200, map[string]any{"major": "1", "minor": "35", "gitVersion": "v1.35.0-qm-fake"})
	case (r.URL.Path == podsPath || r.URL.Path == "/api/v1/pods") && r.URL.Query().Get("watch") == "true":
		s.watch(w, r, s.pods, "Pod")
	case r.URL.Path == podsPath || r.URL.Path == "/api/v1/pods":
		writeJSON(w, 200, map[string]any{"kind": "PodList", "apiVersion": "v1",
			"metadata": map[string]any{"resourceVersion": "1"}, "items": s.pods})
	case strings.HasPrefix(r.URL.Path, podsPath+"/"):
		name := strings.TrimPrefix(r.URL.Path, podsPath+"/")
		for _, p := range s.pods {
			if p["metadata"].(map[string]any)["name"] == name {
				writeJSON(w, 200, p)
				return
			}
		}
		s.notFound(w, r)
	default:
		s.notFound(w, r)
	}
}

func (s *fakeAPIServer) notFound(w http.ResponseWriter, r *http.Request) {
	s.log.Printf("  404 %s", r.URL.Path)
	writeJSON(w, 404, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"reason": "NotFound", "code": 404, "message": "not served by this stand-in: " + r.URL.Path})
}

// watch streams nothing new after the start; with sendInitialEvents (the watch-list way of
// listing) it first sends every object and the bookmark that ends the initial events.
func (s *fakeAPIServer) watch(w http.ResponseWriter, r *http.Request, objs []map[string]any, kind string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	enc := json.NewEncoder(w)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		for _, o := range objs {
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": o})
		}
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"apiVersion": objs[0]["apiVersion"], "kind": kind,
			"metadata": map[string]any{"resourceVersion": "1",
				"annotations": map[string]string{"k8s.io/initial-events-end": "true"}},
		}})
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	<-r.Context().Done()
}

// kubeconfig writes a kubeconfig that points at the stand-in, without credentials.
func (s *fakeAPIServer) kubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: %s
current-context: fake
users:
- name: fake
  user: {}
`, s.URL, podNamespace)
	return path, os.WriteFile(path, []byte(text), 0o600)
}
