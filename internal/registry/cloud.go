package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrapi "github.com/awslabs/amazon-ecr-credential-helper/ecr-login/api"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/google"
	"k8s.io/utils/clock"
)

// CloudIdentity is a keychain of the manager's own cloud identity, for the registries of the
// clouds that issue pull credentials to it, picked by registry host:
//   - Amazon ECR (<account>.dkr.ecr.<region>.amazonaws.com and the other partitions, as
//     amazon-ecr-credential-helper reads them), through the AWS SDK's default chain: IAM roles
//     for service accounts, EKS Pod Identity, or the node's instance role;
//   - Google Artifact Registry (*.pkg.dev) and Container Registry (gcr.io), through
//     go-containerregistry's Google authenticator: Application Default Credentials, so GKE
//     Workload Identity or the node's service account, from the metadata server.
//
// Any other host resolves to anonymous, so that the keychain can follow pull secrets in a
// authn.MultiKeychain. Each resolution is bounded by Timeout, and a credential is reused for TTL:
// the clouds' tokens live an hour or more, and an exchange on every listing would cost a round
// trip or two to the cloud's API each time.
type CloudIdentity struct {
	Timeout time.Duration // one resolution; default 10s
	TTL     time.Duration // how long a credential is reused; default 5m
	Clock   clock.PassiveClock

	mu    sync.Mutex
	creds map[string]cloudCredential // by registry host
}

type cloudCredential struct {
	auth    authn.AuthConfig
	expires time.Time
}

// IdentityError is a credential the manager's cloud identity could not get.
type IdentityError struct {
	Cloud, Host string
	Err         error
}

func (e *IdentityError) Error() string {
	return "the manager's " + e.Cloud + " identity for " + e.Host + ": " + e.Err.Error()
}
func (e *IdentityError) Unwrap() error { return e.Err }

// cloudResolver asks one cloud for a credential of host.
type cloudResolver func(ctx context.Context, host string) (authn.AuthConfig, error)

// resolverFor is the cloud of host, and its name for messages; nil when it is of none.
func resolverFor(host string) (cloudResolver, string) {
	if _, err := ecrapi.ExtractRegistry(host); err == nil {
		return resolveECR, "AWS"
	}
	if host == "gcr.io" || strings.HasSuffix(host, ".gcr.io") || strings.HasSuffix(host, ".pkg.dev") {
		return resolveGoogle, "Google Cloud"
	}
	return nil, ""
}

// Resolve implements authn.Keychain.
func (c *CloudIdentity) Resolve(target authn.Resource) (authn.Authenticator, error) {
	host := target.RegistryStr()
	resolve, cloud := resolverFor(host)
	if resolve == nil {
		return authn.Anonymous, nil
	}
	now := c.Clock.Now()
	c.mu.Lock()
	cached, ok := c.creds[host]
	c.mu.Unlock()
	if ok && now.Before(cached.expires) {
		return authn.FromConfig(cached.auth), nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultLookUpTimeout
	}
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
		a, err := resolve(ctx, host)
		got <- answer{a, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		a.err = fmt.Errorf("no answer within %s", timeout)
	}
	if a.err != nil {
		return nil, &IdentityError{Cloud: cloud, Host: host, Err: a.err}
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	c.mu.Lock()
	if c.creds == nil {
		c.creds = map[string]cloudCredential{}
	}
	c.creds[host] = cloudCredential{auth: a.auth, expires: now.Add(ttl)}
	c.mu.Unlock()
	return authn.FromConfig(a.auth), nil
}

// resolveECR exchanges the AWS identity for an ECR token (GetAuthorizationToken), with the AWS
// SDK itself: the credential helper's client panics on a bad AWS configuration, takes no context
// and keeps a file cache, where the manager's root file system is read-only.
func resolveECR(ctx context.Context, host string) (authn.AuthConfig, error) {
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
func resolveGoogle(ctx context.Context, _ string) (authn.AuthConfig, error) {
	auth, err := google.NewEnvAuthenticator(ctx)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	if auth == authn.Anonymous {
		return authn.AuthConfig{}, fmt.Errorf("no Application Default Credentials")
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	return *cfg, nil
}
