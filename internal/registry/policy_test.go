package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
)

func mustPolicy(t *testing.T, allow ...string) AddressPolicy {
	t.Helper()
	p, err := ParseAllowList(allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loopback lists from the test registries on 127.0.0.1, which the zero policy refuses.
func loopback(t *testing.T) Remote {
	return Remote{Transport: mustPolicy(t, "127.0.0.1").Transport()}
}

func TestAddressPolicy(t *testing.T) {
	cases := []struct {
		allow []string
		addr  string
		// expected
		refused bool
	}{
		{addr: "127.0.0.1", refused: true},
		{addr: "127.1.2.3", refused: true},
		{addr: "::1", refused: true},
		{addr: "::ffff:127.0.0.1", refused: true},
		{addr: "169.254.169.254", refused: true},
		{addr: "fe80::1", refused: true},
		{addr: "fd00:ec2::254", refused: true},
		{addr: "100.100.100.200", refused: true},
		{addr: "168.63.129.16", refused: true},
		{addr: "0.0.0.0", refused: true},
		{addr: "::", refused: true},
		{addr: "224.0.0.1", refused: true},
		{addr: "64:ff9b::a9fe:a9fe", refused: true}, // 169.254.169.254 through NAT64
		{addr: "64:ff9b::7f00:1", refused: true},
		{addr: "64:ff9b::8c52:7021"}, // 140.82.112.33 through NAT64
		{addr: "10.96.0.10"},
		{addr: "192.168.1.20"},
		{addr: "172.16.0.1"},
		{addr: "fd12::1"},
		{addr: "140.82.112.33"},
		{addr: "2606:50c0:8000::154"},
		{allow: []string{"127.0.0.1"}, addr: "127.0.0.1"},
		{allow: []string{"127.0.0.1"}, addr: "::ffff:127.0.0.1"},
		{allow: []string{"127.0.0.1"}, addr: "127.0.0.2", refused: true},
		{allow: []string{"127.0.0.0/8"}, addr: "127.0.0.2"},
		{allow: []string{"169.254.0.0/16"}, addr: "169.254.169.254"},
		{allow: []string{"::1"}, addr: "::1"},
		{allow: []string{"::ffff:127.0.0.0/104"}, addr: "127.0.0.1"},
		{allow: []string{"127.0.0.1"}, addr: "64:ff9b::7f00:1"},
		{allow: []string{"localhost"}, addr: "127.0.0.1", refused: true}, // a name allows by name, not by address
	}
	for _, tc := range cases {
		if got := mustPolicy(t, tc.allow...).Refuses(netip.MustParseAddr(tc.addr)); got != tc.refused {
			t.Errorf("allow %v, %s: refused = %v, want %v", tc.allow, tc.addr, got, tc.refused)
		}
	}
}

func TestParseAllowList(t *testing.T) {
	for _, bad := range []string{"", "http://127.0.0.1", "10.0.0.0/33", "registry:5000", "a..b", "-a.b", "*.local"} {
		if _, err := ParseAllowList([]string{bad}); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if _, err := ParseAllowList([]string{"10.0.0.0/8", "::1", "Registry.Local", "localhost"}); err != nil {
		t.Error(err)
	}
}

// A tenant names the host; the policy decides whether the manager connects to it at all.
func TestAListingKeepsToTheAddressPolicy(t *testing.T) {
	var requests atomic.Int32
	counted := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1); h.ServeHTTP(w, r) })
	}
	host, _ := testRegistry(t, "1.0.0", "1.1.0")
	moving := httptest.NewServer(counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case r.URL.Query().Get("moved") == "":
			http.Redirect(w, r, r.URL.Path+"?moved=1", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, `{"name":"demo/app","tags":["2.0.0"]}`)
		}
	})))
	t.Cleanup(moving.Close)
	// Served as "localhost", it redirects to the same port by address: another host.
	viaName := "localhost:" + strings.Split(host, ":")[1]
	redirecting := httptest.NewServer(counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Redirect(w, r, "http://"+viaName+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})))
	t.Cleanup(redirecting.Close)
	// A token realm is fetched through the same transport, so a realm on a name is the policy's to
	// refuse like any host; go-containerregistry refuses one on a literal loopback, private or
	// link-local address before that.
	metadataRealm := httptest.NewServer(counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://169.254.169.254/latest/meta-data",service="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	})))
	t.Cleanup(metadataRealm.Close)
	trim := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	cases := []struct {
		name  string
		allow []string
		host  string
		// expected
		wantTags     int
		wantSays     string
		wantRequests int32
	}{
		{name: "loopback is refused before connecting", host: host,
			wantSays: "registry refused: the registry's address is not allowed by the manager (--registry-allow)"},
		{name: "a name that resolves to loopback is refused too", host: viaName,
			wantSays: "registry refused: the registry's address is not allowed"},
		{name: "an allowed address lists", allow: []string{"127.0.0.1"}, host: host, wantTags: 2},
		{name: "an allowed name lists", allow: []string{"localhost"}, host: viaName, wantTags: 2},
		{name: "a redirect to another host is not followed", allow: []string{"127.0.0.0/8", "localhost"},
			host: trim(redirecting), wantSays: "registry refused: the server redirected to another host", wantRequests: 2},
		{name: "a token realm on the metadata address is not asked", allow: []string{"127.0.0.1"},
			host: trim(metadataRealm), wantSays: "registry unreachable (no valid answer)", wantRequests: 1},
		{name: "a redirect on the same host is followed", allow: []string{"127.0.0.1"}, host: trim(moving), wantTags: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			tags, err := Remote{Transport: mustPolicy(t, tc.allow...).Transport()}.ListTags(context.Background(), tc.host+"/demo/app", authn.DefaultKeychain)
			if tc.wantSays == "" {
				if err != nil || len(tags) != tc.wantTags {
					t.Fatalf("tags = %v, %v; want %d tags", tags, err, tc.wantTags)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) || !strings.Contains(err.Error(), tc.wantSays) {
				t.Fatalf("error = %v (%v), want a listing error saying %q", err, errors.Unwrap(err), tc.wantSays)
			}
			if n := requests.Load(); n != tc.wantRequests {
				t.Errorf("the test servers got %d requests, want %d", n, tc.wantRequests)
			}
		})
	}
}

// Through a proxy the dialler sees only the proxy's address; the host's own addresses are checked
// before the request goes to the proxy.
func TestAProxiedListingKeepsToTheAddressPolicy(t *testing.T) {
	// The proxy is on 127.0.0.2, which every case allows, so that a request on a name that resolves
	// to 127.0.0.1 reaches it unless the host's own address is checked.
	var proxied atomic.Int32
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy.Listener = l
	proxy.Start()
	t.Cleanup(proxy.Close)
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		allow []string
		host  string
		// expected
		wantSays    string
		wantProxied bool
	}{
		{name: "the metadata address", host: "169.254.169.254",
			wantSays: "registry refused: the registry's address is not allowed"},
		{name: "a name that resolves to loopback", host: "localhost:5000",
			wantSays: "registry refused: the registry's address is not allowed"},
		{name: "a name the manager cannot resolve", host: "registry.invalid",
			wantSays: "registry unreachable (name not found)"},
		{name: "an allowed name goes to the proxy unresolved", allow: []string{"registry.invalid"},
			host: "registry.invalid", wantSays: "registry unreachable (no valid answer)", wantProxied: true}, // the proxy refuses its CONNECT
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxied.Store(0)
			p := mustPolicy(t, append(tc.allow, "127.0.0.2")...)
			p.proxy = http.ProxyURL(proxyURL)
			_, err := Remote{Transport: p.Transport()}.ListTags(context.Background(), tc.host+"/demo/app", authn.DefaultKeychain)
			if err == nil || !strings.Contains(err.Error(), tc.wantSays) {
				t.Fatalf("error = %v (%v), want one saying %q", err, errors.Unwrap(err), tc.wantSays)
			}
			if got := proxied.Load() > 0; got != tc.wantProxied {
				t.Errorf("the proxy got %d requests", proxied.Load())
			}
		})
	}
}
