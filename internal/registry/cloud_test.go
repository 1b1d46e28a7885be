package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCloud answers on 127.0.0.1 as the clouds' own APIs do, by their documented contracts:
// AWS STS AssumeRoleWithWebIdentity (query protocol, XML), ECR GetAuthorizationToken (JSON 1.1,
// SigV4-signed), the Google metadata server's token of the default service account, and for
// Azure: Entra ID's instance and tenant discovery and its token endpoint (a federated
// credential), the instance metadata service's managed identity token, and a registry's
// /oauth2/exchange of an Entra ID token for a refresh token.
type fakeCloud struct {
	mu       sync.Mutex
	requests []string // "STS AssumeRoleWithWebIdentity token=…", "ECR signed-by=<key id>", "metadata token"
	hang     bool     // answer nothing until the test ends
	noGoogle bool     // the metadata server has no token: no service account
	noAzure  bool     // the instance metadata service has no managed identity
	done     chan struct{}
	// azure carries the Azure clients' requests to the fake, whatever their host: Azure's
	// endpoints are named by host (the registry's own), not by the environment.
	azure *http.Client
}

func (f *fakeCloud) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, s)
}

func (f *fakeCloud) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeCloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.hang {
		<-f.done
		return
	}
	switch {
	case r.Host == "login.microsoftonline.com":
		f.entra(w, r)
	case r.Host == "169.254.169.254" && r.URL.Path == "/metadata/identity/oauth2/token":
		if r.Header.Get("Metadata") != "true" || f.noAzure {
			http.Error(w, `{"error":"invalid_request","error_description":"Identity not found"}`, http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		f.record("IMDS token client_id=" + q.Get("client_id") + " resource=" + q.Get("resource"))
		// A minute: MSAL keeps managed identity tokens in a cache of the process, and reuses none
		// within five minutes of its expiry, so no test is handed another's token.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"entra-imds-token","expires_in":"60","expires_on":"%d","resource":%q,"token_type":"Bearer"}`,
			time.Now().Add(time.Minute).Unix(), q.Get("resource"))
	case strings.HasSuffix(r.Host, ".azurecr.io") && r.URL.Path == "/oauth2/exchange":
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "access_token" || r.PostForm.Get("service") != r.Host {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		f.record("ACR exchange service=" + r.PostForm.Get("service") + " access_token=" + r.PostForm.Get("access_token"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"refresh_token":"acr-refresh-token"}`)
	case r.Header.Get("X-Amz-Target") == "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken":
		// SigV4: Authorization: AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/ecr/aws4_request, …
		cred, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="), "/")
		f.record("ECR signed-by=" + cred + " session=" + r.Header.Get("X-Amz-Security-Token"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		token := base64.StdEncoding.EncodeToString([]byte("AWS:ecr-password"))
		fmt.Fprintf(w, `{"authorizationData":[{"authorizationToken":%q,"expiresAt":4102444800,"proxyEndpoint":"https://123456789012.dkr.ecr.eu-west-1.amazonaws.com"}]}`, token)
	case r.Method == http.MethodPost && r.Header.Get("Content-Type") == "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "AssumeRoleWithWebIdentity" {
			http.Error(w, "unexpected STS request", http.StatusBadRequest)
			return
		}
		f.record("STS AssumeRoleWithWebIdentity role=" + r.PostForm.Get("RoleArn") + " token=" + r.PostForm.Get("WebIdentityToken"))
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprint(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials><AccessKeyId>ASIAFROMSTS</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>
      <SessionToken>sts-session</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/rollgate/x</Arn><AssumedRoleId>AROA:x</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`)
	case r.URL.Path == "/computeMetadata/v1/instance/service-accounts/default/token":
		if r.Header.Get("Metadata-Flavor") != "Google" || f.noGoogle {
			http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
			return
		}
		f.record("metadata token")
		w.Header().Set("Metadata-Flavor", "Google")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"ya29.metadata-token","expires_in":3599,"token_type":"Bearer"}`)
	case r.URL.Path == "/computeMetadata/v1/project/project-id":
		w.Header().Set("Metadata-Flavor", "Google")
		fmt.Fprint(w, "acme-prod")
	default:
		http.NotFound(w, r)
	}
}

// entra answers as Entra ID (login.microsoftonline.com) does a confidential client: instance
// discovery, the tenant's OpenID configuration, and a token for a client assertion.
func (f *fakeCloud) entra(w http.ResponseWriter, r *http.Request) {
	const authority = "https://login.microsoftonline.com/"
	w.Header().Set("Content-Type", "application/json")
	tenant, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/common/discovery/instance":
		tenant = strings.TrimPrefix(r.URL.Query().Get("authorization_endpoint"), authority)
		tenant, _, _ = strings.Cut(tenant, "/")
		fmt.Fprintf(w, `{"tenant_discovery_endpoint":"%s%s/v2.0/.well-known/openid-configuration","api-version":"1.1",
			"metadata":[{"preferred_network":"login.microsoftonline.com","preferred_cache":"login.windows.net","aliases":["login.microsoftonline.com"]}]}`, authority, tenant)
	case rest == "v2.0/.well-known/openid-configuration":
		fmt.Fprintf(w, `{"token_endpoint":"%[1]s%[2]s/oauth2/v2.0/token","authorization_endpoint":"%[1]s%[2]s/oauth2/v2.0/authorize","issuer":"%[1]s%[2]s/v2.0"}`, authority, tenant)
	case rest == "oauth2/v2.0/token" && r.Method == http.MethodPost:
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		f.record("Entra token tenant=" + tenant + " client_id=" + r.PostForm.Get("client_id") +
			" assertion=" + r.PostForm.Get("client_assertion") + " scope=" + r.PostForm.Get("scope"))
		fmt.Fprint(w, `{"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,"access_token":"entra-workload-token"}`)
	default:
		http.NotFound(w, r)
	}
}

// startFakeCloud serves a fakeCloud and points the AWS SDK and Google's libraries at it, and at
// nothing else of the machine: no AWS files, no instance metadata, no gcloud configuration.
func startFakeCloud(t *testing.T) (*fakeCloud, string) {
	f := &fakeCloud{done: make(chan struct{})}
	srv, tlsSrv := httptest.NewServer(f), httptest.NewTLSServer(f)
	t.Cleanup(func() { close(f.done); srv.Close(); tlsSrv.Close() })
	// Every Azure host is this fake: https on the TLS server (whose certificate names
	// example.com), http (the instance metadata service) on the other.
	azure := tlsSrv.Client().Transport.(*http.Transport).Clone()
	azure.TLSClientConfig.ServerName = "example.com"
	azure.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := srv.Listener.Addr().String()
		if strings.HasSuffix(addr, ":443") {
			to = tlsSrv.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}
	f.azure = &http.Client{Transport: azure}
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "AWS_CONFIG_FILE": filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL_ECR": srv.URL, "AWS_ENDPOINT_URL_STS": srv.URL,
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"GCE_METADATA_HOST": strings.TrimPrefix(srv.URL, "http://"), "GOOGLE_APPLICATION_CREDENTIALS": "",
		"CLOUDSDK_CONFIG": filepath.Join(home, "gcloud"),
	} {
		t.Setenv(k, v)
	}
	// Azure's libraries tell a variable set empty from one unset.
	for _, k := range []string{"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
		"AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST", "AZURE_TOKEN_CREDENTIALS",
		"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IMDS_ENDPOINT", "MSI_ENDPOINT", "MSI_SECRET"} {
		t.Setenv(k, "") // restored when the test ends
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	return f, home
}

func resolveHost(t *testing.T, c *CloudIdentity, host string) (*authn.AuthConfig, error) {
	t.Helper()
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := c.Resolve(reg)
	if err != nil {
		return nil, err
	}
	return auth.Authorization()
}

// Each cloud's registries are read with the credential its API issues to the manager's identity,
// picked by registry host; any other host is anonymous and asks no cloud.
func TestCloudIdentityByRegistryHost(t *testing.T) {
	const ecrHost, arHost = "123456789012.dkr.ecr.eu-west-1.amazonaws.com", "europe-west1-docker.pkg.dev"
	cases := []struct {
		name string
		env  func(t *testing.T, home string)
		host string
		want authn.AuthConfig
		// the requests the clouds got
		asked []string
	}{
		{name: "ECR with the node's or a static AWS identity", host: ecrHost,
			env: func(t *testing.T, _ string) {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATIC")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
			},
			want: authn.AuthConfig{Username: "AWS", Password: "ecr-password"}, asked: []string{"ECR signed-by=AKIASTATIC session="}},
		{name: "ECR with IAM roles for service accounts: the projected token for the role's keys, then the ECR token", host: ecrHost,
			env: func(t *testing.T, home string) {
				token := filepath.Join(home, "token")
				if err := os.WriteFile(token, []byte("projected-sa-token"), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/rollgate")
				t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token)
			},
			want: authn.AuthConfig{Username: "AWS", Password: "ecr-password"},
			asked: []string{"STS AssumeRoleWithWebIdentity role=arn:aws:iam::123456789012:role/rollgate token=projected-sa-token",
				"ECR signed-by=ASIAFROMSTS session=sts-session"}},
		{name: "Artifact Registry with GKE Workload Identity or the node's service account, from the metadata server", host: arHost,
			env: func(*testing.T, string) {}, want: authn.AuthConfig{Username: "_token", Password: "ya29.metadata-token"},
			asked: []string{"metadata token"}},
		{name: "Container Registry likewise", host: "gcr.io", env: func(*testing.T, string) {},
			want: authn.AuthConfig{Username: "_token", Password: "ya29.metadata-token"}, asked: []string{"metadata token"}},
		{name: "another registry is anonymous", host: "ghcr.io", env: func(*testing.T, string) {}, want: authn.AuthConfig{}},
		{name: "ACR with AKS Workload Identity: the projected token for an Entra ID token, exchanged by the registry", host: "acme.azurecr.io",
			env: func(t *testing.T, home string) {
				token := filepath.Join(home, "azure-token")
				if err := os.WriteFile(token, []byte("projected-azure-token"), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AZURE_CLIENT_ID", "0c8e1ad0-7c55-4b5e-9d7e-000000000001")
				t.Setenv("AZURE_TENANT_ID", "72f988bf-86f1-41af-91ab-000000000002")
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", token)
				t.Setenv("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/")
			},
			want: authn.AuthConfig{Username: "00000000-0000-0000-0000-000000000000", Password: "acr-refresh-token"},
			asked: []string{"Entra token tenant=72f988bf-86f1-41af-91ab-000000000002 client_id=0c8e1ad0-7c55-4b5e-9d7e-000000000001 " +
				"assertion=projected-azure-token scope=https://containerregistry.azure.net/.default openid offline_access profile",
				"ACR exchange service=acme.azurecr.io access_token=entra-workload-token"}},
		{name: "ACR with the node's managed identity, from the instance metadata service", host: "acme.azurecr.io",
			env:  func(*testing.T, string) {},
			want: authn.AuthConfig{Username: "00000000-0000-0000-0000-000000000000", Password: "acr-refresh-token"},
			asked: []string{"IMDS token client_id= resource=https://containerregistry.azure.net",
				"ACR exchange service=acme.azurecr.io access_token=entra-imds-token"}},
		{name: "ACR with a user-assigned managed identity (AKS's kubelet identity)", host: "acme.azurecr.io",
			env:  func(t *testing.T, _ string) { t.Setenv("AZURE_CLIENT_ID", "5e1a7c2b-0000-4000-8000-000000000003") },
			want: authn.AuthConfig{Username: "00000000-0000-0000-0000-000000000000", Password: "acr-refresh-token"},
			asked: []string{"IMDS token client_id=5e1a7c2b-0000-4000-8000-000000000003 resource=https://containerregistry.azure.net",
				"ACR exchange service=acme.azurecr.io access_token=entra-imds-token"}},
		{name: "ECR Public is anonymous: its images are public", host: "public.ecr.aws", want: authn.AuthConfig{},
			env: func(t *testing.T, _ string) {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATIC")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cloud, home := startFakeCloud(t)
			tc.env(t, home)
			c := &CloudIdentity{Clock: clocktesting.NewFakePassiveClock(time.Now()), AzureTransport: cloud.azure}
			got, err := resolveHost(t, c, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			if *got != tc.want {
				t.Errorf("credential %+v, want %+v", *got, tc.want)
			}
			if asked := cloud.seen(); strings.Join(asked, "\n") != strings.Join(tc.asked, "\n") {
				t.Errorf("the clouds were asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(tc.asked, "\n"))
			}
		})
	}
}

// A credential is reused for its TTL, then asked for again.
func TestCloudIdentityReusesACredential(t *testing.T) {
	cloud, _ := startFakeCloud(t)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := &CloudIdentity{Clock: clk, TTL: 5 * time.Minute}
	for range 3 {
		if _, err := resolveHost(t, c, "gcr.io"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(cloud.seen()); n != 1 {
		t.Errorf("%d token requests within the TTL, want 1", n)
	}
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	if _, err := resolveHost(t, c, "gcr.io"); err != nil {
		t.Fatal(err)
	}
	if n := len(cloud.seen()); n != 2 {
		t.Errorf("%d token requests after the TTL, want 2", n)
	}
}

// A private ECR registry has no anonymous access: a credential that cannot be had fails the look,
// in rollgate's words (the cloud's go to the log), and never after more than the timeout. The
// failure is kept for FailureTTL, so that a broken identity does not cost every look the timeout.
func TestCloudIdentityFailures(t *testing.T) {
	const ecrHost = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
	t.Run("no answer", func(t *testing.T) {
		cloud, _ := startFakeCloud(t)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATIC")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
		cloud.hang = true
		c := &CloudIdentity{Clock: clocktesting.NewFakePassiveClock(time.Now()), Timeout: 200 * time.Millisecond}
		_, err := resolveHost(t, c, ecrHost)
		var ie *IdentityError
		if !errors.As(err, &ie) || ie.Err.Error() != "no answer within 200ms" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no AWS identity", func(t *testing.T) {
		cloud, _ := startFakeCloud(t)
		clk := clocktesting.NewFakePassiveClock(time.Now())
		c := &CloudIdentity{Clock: clk, Timeout: 5 * time.Second}
		_, err := resolveHost(t, c, ecrHost)
		if err == nil || err.Error() != "the manager's AWS identity got no credential for "+ecrHost+" (the manager's log says why)" {
			t.Errorf("error %v", err)
		}
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIASTATIC")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
		if _, err := resolveHost(t, c, ecrHost); err == nil || len(cloud.seen()) != 0 {
			t.Errorf("within FailureTTL: error %v, %d requests; want the failure kept and no request", err, len(cloud.seen()))
		}
		clk.SetTime(clk.Now().Add(30 * time.Second))
		if _, err := resolveHost(t, c, ecrHost); err != nil || len(cloud.seen()) != 1 {
			t.Errorf("after FailureTTL: error %v, %d requests; want the identity asked again", err, len(cloud.seen()))
		}
	})
}

// Google's registries hold public images: without a credential they are read anonymously. Its
// token is the same for every host, and asked for once.
func TestGoogleRegistriesWithoutAndWithAnIdentity(t *testing.T) {
	cloud, _ := startFakeCloud(t)
	cloud.noGoogle = true
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := &CloudIdentity{Clock: clk}
	if got, err := resolveHost(t, c, "gcr.io"); err != nil || *got != (authn.AuthConfig{}) {
		t.Errorf("without a service account: %+v %v, want anonymous", got, err)
	}
	cloud.noGoogle = false
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	for _, host := range []string{"gcr.io", "europe-west1-docker.pkg.dev", "mirror.gcr.io"} {
		if got, err := resolveHost(t, c, host); err != nil || got.Password != "ya29.metadata-token" {
			t.Errorf("%s: %+v %v", host, got, err)
		}
	}
	if n := len(cloud.seen()); n != 1 {
		t.Errorf("%d token requests for three Google hosts, want 1", n)
	}
}

// An Azure registry may allow anonymous pulls: without an identity it is read anonymously. With
// one, each registry has its own refresh token.
func TestAzureRegistriesWithoutAndWithAnIdentity(t *testing.T) {
	cloud, _ := startFakeCloud(t)
	cloud.noAzure = true
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := &CloudIdentity{Clock: clk, AzureTransport: cloud.azure, Log: testr.New(t)}
	if got, err := resolveHost(t, c, "acme.azurecr.io"); err != nil || *got != (authn.AuthConfig{}) {
		t.Errorf("without a managed identity: %+v %v, want anonymous", got, err)
	}
	cloud.noAzure = false
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	for _, host := range []string{"acme.azurecr.io", "tools.azurecr.io"} {
		if got, err := resolveHost(t, c, host); err != nil || got.Password != "acr-refresh-token" {
			t.Errorf("%s: %+v %v", host, got, err)
		}
	}
	want := []string{"IMDS token client_id= resource=https://containerregistry.azure.net",
		"ACR exchange service=acme.azurecr.io access_token=entra-imds-token",
		"IMDS token client_id= resource=https://containerregistry.azure.net",
		"ACR exchange service=tools.azurecr.io access_token=entra-imds-token"}
	if got := cloud.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the clouds were asked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Outside Azure the instance metadata service may not answer at all: the manager's Azure
// identity finds that out from a short probe, not from the look-up's timeout spent on retries,
// and reads the registry anonymously.
func TestAzureRegistryWhereNoMetadataServiceAnswers(t *testing.T) {
	cloud, _ := startFakeCloud(t)
	cloud.hang = true
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	c := &CloudIdentity{Clock: clocktesting.NewFakePassiveClock(time.Now()), AzureTransport: cloud.azure, Log: log, Timeout: 10 * time.Second}
	if got, err := resolveHost(t, c, "acme.azurecr.io"); err != nil || *got != (authn.AuthConfig{}) {
		t.Errorf("%+v %v, want anonymous", got, err)
	}
	if all := strings.Join(logged, "\n"); !strings.Contains(all, "ManagedIdentityCredential: managed identity timed out") || strings.Contains(all, "no answer within") {
		t.Errorf("logged:\n%s\nwant the managed identity's probe to have timed out, not the look-up", all)
	}
}
