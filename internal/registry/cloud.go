package registry

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/containers/azcontainerregistry"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrapi "github.com/awslabs/amazon-ecr-credential-helper/ecr-login/api"
	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/google"
	"k8s.io/utils/clock"
)

// CloudIdentity is a keychain of the manager's own cloud identity, for the registries of the
// clouds that issue pull credentials to it, picked by registry host:
//   - private Amazon ECR (<account>.dkr.ecr.<region>.amazonaws.com and the other partitions, as
//     amazon-ecr-credential-helper reads them), through the AWS SDK's default chain: IAM roles
//     for service accounts, EKS Pod Identity, or the node's instance role. Such a registry has no
//     anonymous access, so a credential that cannot be had fails the look;
//   - Google Artifact Registry (*.pkg.dev) and Container Registry (gcr.io), through
//     go-containerregistry's Google authenticator: Application Default Credentials, so GKE
//     Workload Identity or the node's service account, from the metadata server. These hold
//     public images too: without a credential they are read anonymously;
//   - Azure Container Registry (*.azurecr.io, .cn, .us), with an Entra ID token of the
//     manager's identity (azureCredential: AKS Workload Identity, the node's managed identity, a
//     service principal), which the registry's /oauth2/exchange turns into a registry refresh
//     token. A registry may allow anonymous pulls: without a credential it is read anonymously.
//
// Any other host (ECR Public among them) resolves to anonymous, so that the keychain can follow
// pull secrets in an authn.MultiKeychain. Each exchange is bounded by Timeout, and its answer kept
// for TTL (a failure for FailureTTL, so that a broken identity does not cost every look the
// timeout): the clouds' tokens live an hour or more. Conditions get rollgate's words; the clouds'
// own, which may name the manager's role, go to Log.
type CloudIdentity struct {
	Timeout    time.Duration // one exchange; default 10s
	TTL        time.Duration // how long a credential is reused; default 5m
	FailureTTL time.Duration // how long a failure is; default 30s
	Clock      clock.PassiveClock
	Log        logr.Logger
	// AzureTransport carries the Azure clients' requests (Entra ID, the managed identity
	// endpoint, the registry's token exchange); default the SDK's. Tests point it at 127.0.0.1,
	// as the other clouds' endpoints are pointed by their SDKs' environment.
	AzureTransport policy.Transporter

	mu    sync.Mutex
	creds map[string]cloudCredential // by cloudOf's key

	azureOnce sync.Once
	azure     azcore.TokenCredential // made once, so that its tokens are reused until they expire
	azureErr  error
}

type cloudCredential struct {
	auth    *authn.AuthConfig // nil: anonymous
	err     error
	expires time.Time
}

// maxCloudCredentials bounds the credentials kept: ECR's are per registry host, and a tenant
// names hosts. Past it, the expired go, and then all.
const maxCloudCredentials = 256

// IdentityError is a credential the manager's cloud identity could not get.
type IdentityError struct {
	Cloud, Host string
	Err         error // the cloud's own words, for the log
}

func (e *IdentityError) Error() string {
	return "the manager's " + e.Cloud + " identity got no credential for " + e.Host + " (the manager's log says why)"
}
func (e *IdentityError) Unwrap() error { return e.Err }

// cloudResolver asks one cloud for a credential of host, with c's clients.
type cloudResolver func(ctx context.Context, c *CloudIdentity, host string) (authn.AuthConfig, error)

// cloud is the cloud of a registry host.
type cloud struct {
	name    string
	resolve cloudResolver
	// key of its credential: Google's token is the same for every host.
	key string
	// anonymousWithout: the registry holds public images, read anonymously without a credential.
	anonymousWithout bool
}

// cloudOf is the cloud of host; ok is false when it is of none.
func cloudOf(host string) (cloud, bool) {
	if reg, err := ecrapi.ExtractRegistry(host); err == nil && reg.Service == ecrapi.ServiceECR {
		return cloud{name: "AWS", resolve: resolveECR, key: host}, true
	}
	if host == "gcr.io" || strings.HasSuffix(host, ".gcr.io") || strings.HasSuffix(host, ".pkg.dev") {
		return cloud{name: "Google Cloud", resolve: resolveGoogle, key: "google", anonymousWithout: true}, true
	}
	if strings.HasSuffix(host, ".azurecr.io") || strings.HasSuffix(host, ".azurecr.cn") || strings.HasSuffix(host, ".azurecr.us") {
		return cloud{name: "Azure", resolve: resolveAzure, key: host, anonymousWithout: true}, true
	}
	return cloud{}, false
}

// CloudOf names the cloud whose identity reads the registry host, if any.
func CloudOf(host string) (string, bool) {
	cl, ok := cloudOf(host)
	return cl.name, ok
}

// Resolve implements authn.Keychain.
func (c *CloudIdentity) Resolve(target authn.Resource) (authn.Authenticator, error) {
	host := target.RegistryStr()
	cl, ok := cloudOf(host)
	if !ok {
		return authn.Anonymous, nil
	}
	now := c.Clock.Now()
	c.mu.Lock()
	cached, ok := c.creds[cl.key]
	c.mu.Unlock()
	if !ok || !now.Before(cached.expires) {
		cached = c.exchange(cl, host, now)
	}
	switch {
	case cached.err != nil:
		return nil, &IdentityError{Cloud: cl.name, Host: host, Err: cached.err}
	case cached.auth == nil:
		return authn.Anonymous, nil
	}
	return authn.FromConfig(*cached.auth), nil
}

// exchange asks cl for a credential of host, and keeps the answer.
func (c *CloudIdentity) exchange(cl cloud, host string, now time.Time) cloudCredential {
	timeout := cmp.Or(c.Timeout, DefaultLookUpTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	type answer struct {
		auth authn.AuthConfig
		err  error
	}
	// Not every step of a cloud's library heeds the context (Google's finds its credentials
	// without it): the answer is waited for no longer than the timeout.
	got := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				got <- answer{err: fmt.Errorf("the cloud's library failed: %v", p)}
			}
		}()
		a, err := cl.resolve(ctx, c, host)
		got <- answer{a, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		a.err = fmt.Errorf("no answer within %s", timeout)
	}
	cred := cloudCredential{auth: &a.auth, expires: now.Add(cmp.Or(c.TTL, 5*time.Minute))}
	if a.err != nil {
		c.Log.Info("the manager's cloud identity got no credential", "cloud", cl.name, "registry", host, "error", a.err.Error())
		cred = cloudCredential{err: a.err, expires: now.Add(cmp.Or(c.FailureTTL, 30*time.Second))}
		if cl.anonymousWithout {
			cred.err = nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.creds) >= maxCloudCredentials {
		maps.DeleteFunc(c.creds, func(_ string, v cloudCredential) bool { return !now.Before(v.expires) })
		if len(c.creds) >= maxCloudCredentials {
			clear(c.creds)
		}
	}
	if c.creds == nil {
		c.creds = map[string]cloudCredential{}
	}
	c.creds[cl.key] = cred
	return cred
}

// resolveECR exchanges the AWS identity for an ECR token (GetAuthorizationToken), with the AWS
// SDK itself: the credential helper's client panics on a bad AWS configuration, takes no context
// and keeps a file cache, where the manager's root file system is read-only.
func resolveECR(ctx context.Context, _ *CloudIdentity, host string) (authn.AuthConfig, error) {
	reg, err := ecrapi.ExtractRegistry(host)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(reg.Region)}
	if reg.FIPS {
		opts = append(opts, awsconfig.WithUseFIPSEndpoint(aws.FIPSEndpointStateEnabled))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	out, err := ecr.NewFromConfig(cfg).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return authn.AuthConfig{}, fmt.Errorf("no ECR token (is the identity allowed ecr:GetAuthorizationToken?): %w", err)
	}
	if len(out.AuthorizationData) == 0 || out.AuthorizationData[0].AuthorizationToken == nil {
		return authn.AuthConfig{}, errors.New("ECR answered with no token")
	}
	// The token is base64 of user:password, as Docker's basic authentication.
	raw, err := base64.StdEncoding.DecodeString(*out.AuthorizationData[0].AuthorizationToken)
	user, password, ok := strings.Cut(string(raw), ":")
	if err != nil || !ok {
		return authn.AuthConfig{}, errors.New("ECR answered with a token that is not base64 of user:password")
	}
	return authn.AuthConfig{Username: user, Password: password}, nil
}

// resolveGoogle takes an access token of Application Default Credentials.
func resolveGoogle(ctx context.Context, _ *CloudIdentity, _ string) (authn.AuthConfig, error) {
	auth, err := google.NewEnvAuthenticator(ctx)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	return *cfg, nil
}

// acrScope is the Entra ID scope of Azure Container Registry, the same in every Azure cloud.
const acrScope = "https://containerregistry.azure.net/.default"

// acrTokenUser is the user a registry refresh token is sent with, as `az acr login` does.
const acrTokenUser = "00000000-0000-0000-0000-000000000000"

// resolveAzure exchanges an Entra ID token of the manager's identity for a refresh token of the
// registry host (its POST /oauth2/exchange), which authenticates as the password of acrTokenUser.
func resolveAzure(ctx context.Context, c *CloudIdentity, host string) (authn.AuthConfig, error) {
	cred, err := c.azureCredential()
	if err != nil {
		return authn.AuthConfig{}, err
	}
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{acrScope}})
	if err != nil {
		return authn.AuthConfig{}, err
	}
	client, err := azcontainerregistry.NewAuthenticationClient("https://"+host,
		&azcontainerregistry.AuthenticationClientOptions{ClientOptions: azcore.ClientOptions{Transport: c.AzureTransport}})
	if err != nil {
		return authn.AuthConfig{}, err
	}
	out, err := client.ExchangeAADAccessTokenForACRRefreshToken(ctx, azcontainerregistry.PostContentSchemaGrantTypeAccessToken, host,
		&azcontainerregistry.AuthenticationClientExchangeAADAccessTokenForACRRefreshTokenOptions{AccessToken: &tok.Token})
	if err != nil {
		return authn.AuthConfig{}, fmt.Errorf("the registry refused the identity's Entra ID token: %w", err)
	}
	if out.RefreshToken == nil || *out.RefreshToken == "" {
		return authn.AuthConfig{}, errors.New("the registry answered with no refresh token")
	}
	return authn.AuthConfig{Username: acrTokenUser, Password: *out.RefreshToken}, nil
}

// azureCredential is the manager's Azure identity, DefaultAzureCredential's: a service principal
// of the environment (AZURE_CLIENT_SECRET or a certificate), AKS Workload Identity when its
// webhook set the pod's environment, then the node's managed identity (the user-assigned one
// AZURE_CLIENT_ID names, if set). The instance metadata service is probed for a second first, so
// that a cluster outside Azure that names an Azure registry does not wait for its retries. Its
// developer tools (the Azure CLI) come last and fail at once in the manager's image, which has
// none.
func (c *CloudIdentity) azureCredential() (azcore.TokenCredential, error) {
	c.azureOnce.Do(func() {
		c.azure, c.azureErr = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
			ClientOptions: azcore.ClientOptions{Transport: c.AzureTransport}})
	})
	return c.azure, c.azureErr
}
