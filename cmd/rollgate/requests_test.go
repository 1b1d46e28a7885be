package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestDescribeRequest(t *testing.T) {
	cases := []struct{ method, url, verb, resource string }{
		{"GET", "/apis/rollgate.dev/v1alpha1/namespaces/team-a/rollingupgradeconfigs/web", "get", "rollingupgradeconfigs.rollgate.dev"},
		{"PUT", "/apis/rollgate.dev/v1alpha1/namespaces/team-a/rollingupgradeconfigs/web/status", "update", "rollingupgradeconfigs.rollgate.dev/status"},
		{"PUT", "/apis/rollgate.dev/v1alpha1/namespaces/team-a/rollingupgradeconfigs/web", "update", "rollingupgradeconfigs.rollgate.dev"},
		{"GET", "/apis/rollgate.dev/v1alpha1/rollingupgradeconfigs?limit=500", "list", "rollingupgradeconfigs.rollgate.dev"},
		{"GET", "/apis/rollgate.dev/v1alpha1/rollingupgradeconfigs?watch=true&resourceVersion=5", "watch", "rollingupgradeconfigs.rollgate.dev"},
		{"PATCH", "/apis/apps/v1/namespaces/team-a/deployments/web?fieldManager=rollgate", "patch", "deployments.apps"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", "create", "events.events.k8s.io"},
		{"GET", "/api/v1/namespaces/team-a/pods?labelSelector=app%3Dweb", "list", "pods"},
		{"DELETE", "/api/v1/namespaces/team-a/pods/web-1", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/team-a/pods", "deletecollection", "pods"},
		{"GET", "/api/v1/namespaces/team-a", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/rollgate-system/leases/rollgate.rollgate.dev", "update", "leases.coordination.k8s.io"},
		{"GET", "/version", "get", "other"},
		{"GET", "/apis", "get", "other"},
		{"GET", "/api/v1", "get", "other"},
	}
	for _, c := range cases {
		verb, resource := describeRequest(httptest.NewRequest(c.method, c.url, nil))
		if verb != c.verb || resource != c.resource {
			t.Errorf("%s %s: got %s %s, want %s %s", c.method, c.url, verb, resource, c.verb, c.resource)
		}
	}
}

// The manager's client configuration carries the API limits and counts every request it sends.
func TestRestConfigLimitsAndCountsRequests(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: api.URL}},
		Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c"}},
		CurrentContext: "c",
	}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, err := options{Kubeconfig: kubeconfig, KubeAPIQPS: 7, KubeAPIBurst: 9}.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 7 || cfg.Burst != 9 {
		t.Errorf("QPS, burst = %v, %d; want 7, 9", cfg.QPS, cfg.Burst)
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(apiRequests.WithLabelValues("delete", "pods"))
	req, _ := http.NewRequest(http.MethodDelete, api.URL+"/api/v1/namespaces/a/pods/b", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := testutil.ToFloat64(apiRequests.WithLabelValues("delete", "pods")) - before; got != 1 {
		t.Errorf("counted %v pod deletions, want 1", got)
	}
}
