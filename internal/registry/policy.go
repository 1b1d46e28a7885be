package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AddressPolicy says which addresses the manager may connect to when it lists tags. Any tenant can
// name any host in spec.image, and the manager runs inside the cluster's network: without a policy,
// a config could make it ask the cloud metadata service or a port on the node's loopback and read
// how they answer. The zero policy refuses loopback, link-local, unspecified and multicast
// addresses and the cloud metadata services; everything else (public and private ranges, where
// in-cluster registries live) is allowed. Allow lists the exceptions a cluster needs.
//
// The check is made on the address actually dialled, after name resolution, so a name that
// resolves to a refused address is refused too. A request that goes through an HTTP(S) proxy (from
// the environment) is checked before it leaves: its host's addresses, resolved by the manager, must
// all be allowed, and a name the manager cannot resolve is refused (name it in the allow list to let
// the proxy resolve it). A registry is also not followed when it redirects to another host.
type AddressPolicy struct {
	hosts    map[string]bool
	prefixes []netip.Prefix
	// proxy picks the proxy of a request; nil means http.ProxyFromEnvironment.
	proxy func(*http.Request) (*url.URL, error)
	// refused is the error of a refused address; nil: errAddressRefused.
	refused error
}

// RefusedWith is the policy, saying err of a refused address: the same policy guards other clients
// than the registry's (Git), whose errors name their own flag.
func (p AddressPolicy) RefusedWith(err error) AddressPolicy {
	p.refused = err
	return p
}

func (p AddressPolicy) refusal() error {
	if p.refused != nil {
		return p.refused
	}
	return errAddressRefused
}

// metadataAddresses are the instance metadata services that are not link-local, which the zero
// policy refuses as well: AWS over IPv6, Alibaba Cloud and Azure's wire server.
var metadataAddresses = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// ParseAllowList reads the manager's --registry-allow entries: a CIDR (10.0.0.0/8), an address
// (127.0.0.1, ::1) or a host name (localhost, registry.local), which allows every address it
// resolves to.
func ParseAllowList(entries []string) (AddressPolicy, error) {
	p := AddressPolicy{hosts: map[string]bool{}}
	for _, e := range entries {
		if pfx, err := netip.ParsePrefix(e); err == nil {
			if pfx.Addr().Is4In6() && pfx.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
			}
			p.prefixes = append(p.prefixes, pfx.Masked())
			continue
		}
		if addr, err := netip.ParseAddr(e); err == nil {
			p.prefixes = append(p.prefixes, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
			continue
		}
		host := strings.ToLower(e)
		if len(validation.IsDNS1123Subdomain(host)) > 0 {
			return AddressPolicy{}, fmt.Errorf("%q is neither a CIDR, an address nor a host name", e)
		}
		p.hosts[host] = true
	}
	return p, nil
}

// nat64 is the well-known NAT64 prefix: on an IPv6-only cluster with DNS64, 64:ff9b::a9fe:a9fe
// reaches 169.254.169.254.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Refuses says whether the policy refuses to connect to addr.
func (p AddressPolicy) Refuses(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, pfx := range p.prefixes {
		if pfx.Contains(addr) {
			return false
		}
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		return p.Refuses(netip.AddrFrom4([4]byte(b[12:])))
	}
	return addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsUnspecified() || addr.IsMulticast() ||
		slices.Contains(metadataAddresses, addr)
}

// Resolve is the address to connect to host at, for a client whose dialler the policy cannot guard
// (go-git's SSH): every address host resolves to must be allowed, or host named in the allow list.
// The client then dials the address, so the name cannot resolve elsewhere in between.
func (p AddressPolicy) Resolve(ctx context.Context, host string) (netip.Addr, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = &net.DNSError{Err: "no address", Name: host}
	}
	if err != nil {
		return netip.Addr{}, err
	}
	if !p.hosts[strings.ToLower(host)] && slices.ContainsFunc(addrs, p.Refuses) {
		return netip.Addr{}, p.refusal()
	}
	return addrs[0].Unmap(), nil
}

// Errors of the policy; classify turns them into a listing's reason.
var (
	errAddressRefused  = errors.New("the registry's address is not allowed by the manager (--registry-allow)")
	errRedirectRefused = errors.New("the server redirected to another host")
)

// allowedHostKey marks a request whose host the allow list names, for the dialler to see.
type allowedHostKey struct{}

// Transport is an HTTP transport that keeps to the policy, with deadlines for connecting, the TLS
// handshake and the response headers (http.DefaultTransport has none for the headers).
func (p AddressPolicy) Transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if allowed, _ := ctx.Value(allowedHostKey{}).(bool); !allowed && p.Refuses(ap.Addr()) {
				return p.refusal()
			}
			return nil
		}}
	t.DialContext = d.DialContext
	if p.proxy != nil {
		t.Proxy = p.proxy
	}
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 15 * time.Second
	return policed{base: t, policy: p, proxy: t.Proxy}
}

// policed refuses redirects to another host, but a blob's (registries hand blobs out from a CDN or
// object storage, and a blob is checked against its digest), checks the requests that go through a
// proxy, and tells the dialler which hosts the allow list names. The dialler sees the request's
// context values (net/http keeps them for the dial), so a redirect is dialled by the same policy;
// go-containerregistry sends its credentials to the registry's host only.
type policed struct {
	base   http.RoundTripper
	policy AddressPolicy
	proxy  func(*http.Request) (*url.URL, error)
}

func (t policed) RoundTrip(req *http.Request) (*http.Response, error) {
	// req.Response is set on a request that follows a redirect: the answer that redirected.
	if prev := req.Response; prev != nil && prev.Request != nil && !strings.EqualFold(prev.Request.URL.Host, req.URL.Host) && !isBlobGet(prev.Request) {
		return nil, errRedirectRefused
	}
	if t.policy.hosts[strings.ToLower(req.URL.Hostname())] {
		return t.base.RoundTrip(req.WithContext(context.WithValue(req.Context(), allowedHostKey{}, true)))
	}
	// Through a proxy, the dialler sees only the proxy's address: check the host's own here.
	if proxy, err := t.proxy(req); err != nil || proxy != nil {
		if _, err := t.policy.Resolve(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(req)
}

// isBlobGet: the request reads a blob of a repository (/v2/<name>/blobs/<digest>).
func isBlobGet(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v2/") && strings.Contains(req.URL.Path, "/blobs/sha256:")
}
