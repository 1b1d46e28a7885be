// Package promquery asks the cluster admin's Prometheus the questions of configs and calendars, each
// bounded in time and in the size of its answer.
package promquery

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Querier answers a PromQL instant query with one number (spec.analysis), or with how many
// series it returns (a RolloutCalendar's freezeWhile).
type Querier interface {
	Query(ctx context.Context, query string, at time.Time) (float64, error)
	Series(ctx context.Context, query string, at time.Time) (int, error)
}

// Options are the cluster admin's settings of the Prometheus that spec.analysis queries.
type Options struct {
	// URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090.
	URL string
	// BearerTokenFile is read at each request (a projected token rotates).
	BearerTokenFile string
	// CAFile verifies an HTTPS Prometheus.
	CAFile string
	// Timeout of one query.
	Timeout time.Duration
}

// Prometheus runs the queries of spec.analysis.
type Prometheus struct {
	api     promv1.API
	timeout time.Duration
}

// New builds the client of o.
func New(o Options) (*Prometheus, error) {
	cfg := promconfig.DefaultHTTPClientConfig
	cfg.TLSConfig.CAFile = o.CAFile
	if o.BearerTokenFile != "" {
		cfg.Authorization = &promconfig.Authorization{Type: "Bearer", CredentialsFile: o.BearerTokenFile}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rt, err := promconfig.NewRoundTripperFromConfig(cfg, "rollgate")
	if err != nil {
		return nil, err
	}
	c, err := promapi.NewClient(promapi.Config{Address: o.URL, RoundTripper: boundedBodies{rt}})
	if err != nil {
		return nil, err
	}
	return &Prometheus{api: promv1.NewAPI(c), timeout: o.Timeout}, nil
}

// maxResponse bounds the answer to a query: one number takes a few hundred bytes, and a tenant's
// query that selects every series would otherwise be read into the manager's memory whole.
const maxResponse = 1 << 20

// boundedBodies reads at most maxResponse bytes of a response; past that, reading fails.
type boundedBodies struct{ next http.RoundTripper }

func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err == nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, maxResponse)
	}
	return resp, err
}

// Query evaluates query at at and returns its one number. No series, NaN, or more than one series
// is an error: each says nothing of the version, or not which part of it.
func (p *Prometheus) Query(ctx context.Context, query string, at time.Time) (float64, error) {
	v, err := p.instant(ctx, query, at)
	if err != nil {
		return 0, err
	}
	return oneNumber(v)
}

// instant evaluates query at at within the timeout.
func (p *Prometheus) instant(ctx context.Context, query string, at time.Time) (model.Value, error) {
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	v, _, _, err := p.api.Query(ctx, query, at)
	return v, err
}

// Series evaluates query at at and returns how many series it returns; a scalar counts as one
// unless it is 0.
func (p *Prometheus) Series(ctx context.Context, query string, at time.Time) (int, error) {
	v, err := p.instant(ctx, query, at)
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case model.Vector:
		return len(v), nil
	case *model.Scalar:
		if v.Value == 0 {
			return 0, nil
		}
		return 1, nil
	}
	return 0, fmt.Errorf("the query returned a %s; it must return a vector", v.Type())
}

// oneNumber is the number a query result holds.
func oneNumber(v model.Value) (float64, error) {
	var f float64
	switch v := v.(type) {
	case *model.Scalar:
		f = float64(v.Value)
	case model.Vector:
		switch len(v) {
		case 0:
			return 0, fmt.Errorf("no data: the query returned no series")
		case 1:
			f = float64(v[0].Value)
		default:
			return 0, fmt.Errorf("the query returned %d series; aggregate them into one, e.g. with sum() or max()", len(v))
		}
	default:
		return 0, fmt.Errorf("the query returned a %s; it must return a number (a scalar, or one series)", v.Type())
	}
	if math.IsNaN(f) {
		return 0, fmt.Errorf("no data: the query returned NaN (no traffic yet?)")
	}
	return f, nil
}
