package promquery

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func TestOneNumber(t *testing.T) {
	sample := func(v float64) *model.Sample { return &model.Sample{Value: model.SampleValue(v)} }
	for _, tc := range []struct {
		name    string
		v       model.Value
		want    float64
		wantErr string
	}{
		{name: "a scalar", v: &model.Scalar{Value: 0.5}, want: 0.5},
		{name: "one series", v: model.Vector{sample(0.02)}, want: 0.02},
		{name: "no series", v: model.Vector{}, wantErr: "no data: the query returned no series"},
		{name: "NaN, as 0/0 of no traffic", v: model.Vector{sample(math.NaN())}, wantErr: "no data: the query returned NaN"},
		{name: "two series", v: model.Vector{sample(1), sample(2)}, wantErr: "returned 2 series; aggregate them into one"},
		{name: "a range", v: model.Matrix{}, wantErr: "returned a matrix"},
	} {
		got, err := oneNumber(tc.v)
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) || tc.wantErr == "" && (err != nil || got != tc.want) {
			t.Errorf("%s: %v, %v; want %v or an error with %q", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// The client reads a Prometheus answer up to maxResponse bytes: a query that selects every series
// fails instead of filling the manager's memory. One number is read as it is.
func TestPrometheusReadsBoundedAnswers(t *testing.T) {
	huge := strings.Repeat(`{"metric":{"__name__":"x"},"value":[1,"1"]},`, maxResponse/40)
	for _, tc := range []struct {
		name, body string
		want       float64
		wantErr    string
	}{
		{name: "one number", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.25"]}]}}`, want: 0.25},
		{name: "every series", body: `{"status":"success","data":{"resultType":"vector","result":[` + huge + `{"metric":{},"value":[1,"1"]}]}}`,
			wantErr: "request body too large"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(tc.body))
		}))
		p, err := New(Options{URL: srv.URL, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Query(context.Background(), "x", time.Now())
		srv.Close()
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) || tc.wantErr == "" && (err != nil || got != tc.want) {
			t.Errorf("%s: %v, %v; want %v or an error with %q", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// Series counts what a freezeWhile query returns: the series of a vector, a scalar unless it is 0.
func TestSeries(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       int
		wantErr    bool
	}{
		{name: "two firing alerts", data: `{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"1"]}]}`, want: 2},
		{name: "none", data: `{"resultType":"vector","result":[]}`, want: 0},
		{name: "a scalar 0", data: `{"resultType":"scalar","result":[1,"0"]}`, want: 0},
		{name: "a scalar 3", data: `{"resultType":"scalar","result":[1,"3"]}`, want: 1},
		{name: "a range", data: `{"resultType":"matrix","result":[]}`, wantErr: true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"success","data":` + tc.data + `}`))
		}))
		p, err := New(Options{URL: srv.URL, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Series(context.Background(), "x", time.Now())
		srv.Close()
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: %d, %v; want %d (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
