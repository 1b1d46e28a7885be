package main

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// apiRequests counts the manager's requests to the Kubernetes API by verb and resource.
// client-go's rest_client_requests_total has the HTTP method only, which cannot tell an event
// from a status write; this says what the manager costs the API server, per kind of object.
var apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "rollgate_api_requests_total",
	Help: "Requests the manager sent to the Kubernetes API, by verb (get, list, watch, create, update, patch, delete) and resource (resource.group/subresource).",
}, []string{"verb", "resource"})

func init() {
	metrics.Registry.MustRegister(apiRequests)
}

// countAPIRequests makes every client built from cfg count its requests in apiRequests.
func countAPIRequests(cfg *rest.Config) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			verb, resource := describeRequest(r)
			apiRequests.WithLabelValues(verb, resource).Inc()
			return next.RoundTrip(r)
		})
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// describeRequest names a request as RBAC does: its verb and its resource, written
// resource.group/subresource (the core group has no suffix). Paths that are not resources
// (/version, /healthz, discovery) are "other".
func describeRequest(r *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api": // /api/v1/...
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis": // /apis/group/version/...
		group, parts = parts[1], parts[3:]
	default:
		return strings.ToLower(r.Method), "other"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" { // a namespaced resource, not a Namespace
		parts = parts[2:]
	}
	resource = parts[0]
	if group != "" {
		resource += "." + group
	}
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	named := len(parts) >= 2
	switch r.Method {
	case http.MethodGet:
		switch watch := r.URL.Query().Get("watch"); {
		case watch == "true" || watch == "1":
			return "watch", resource
		case named:
			return "get", resource
		}
		return "list", resource
	case http.MethodPost:
		return "create", resource
	case http.MethodPut:
		return "update", resource
	case http.MethodDelete:
		if !named {
			return "deletecollection", resource
		}
	}
	return strings.ToLower(r.Method), resource
}
