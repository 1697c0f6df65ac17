package config

import "net/url"

// TracingConfig turns on OpenTelemetry traces (issue 30): one span per tool
// call through the proxy, exported over OTLP/HTTP. The zero value is off.
type TracingConfig struct {
	// Endpoint is the OTLP/HTTP collector, e.g. "http://127.0.0.1:4318"
	// (spans go to its /v1/traces unless the URL has a path of its own).
	// Empty means no traces.
	Endpoint string `json:"endpoint,omitempty"`
}

// Enabled reports whether traces are exported.
func (t TracingConfig) Enabled() bool { return t.Endpoint != "" }

// TracesURL is the URL spans are posted to: Endpoint, with /v1/traces when
// it has no path.
func (t TracingConfig) TracesURL() string {
	u, err := url.Parse(t.Endpoint)
	if err != nil {
		return t.Endpoint
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String()
}

func (t TracingConfig) validate(path string) []error {
	if t.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []error{fieldErr(path+".endpoint", "not an http(s) URL with a host: give the OTLP/HTTP collector, e.g. \"http://127.0.0.1:4318\", or leave it out for no traces")}
	}
	return nil
}
