package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEmbeddingsConfigOffByDefault(t *testing.T) {
	cfg, err := Parse([]byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(EmbeddingsConfig{}, cfg.Embeddings); diff != "" {
		t.Errorf("absent section is not zero (-want +got):\n%s", diff)
	}
	if cfg.Embeddings.IsEnabled() {
		t.Errorf("got enabled, want off without a url")
	}
}

func TestEmbeddingsConfigParse(t *testing.T) {
	env := testEnv(map[string]string{"EMBED_KEY": "sk-test"})
	cfg, err := Parse([]byte(`{"embeddings": {"url": "http://127.0.0.1:11434/v1", "model": "nomic-embed-text",
		"api_key": "${EMBED_KEY}", "query_prefix": "search_query: ", "timeout": "10s"}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	want := EmbeddingsConfig{
		URL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text", APIKey: "sk-test", QueryPrefix: "search_query: ",
		BatchSize: DefaultEmbedBatchSize, Timeout: Duration(10 * time.Second),
		QueryTimeout: Duration(DefaultEmbedQueryTimeout), RetryInterval: Duration(DefaultEmbedRetryInterval),
		RRFK: DefaultRRFK, DenseWeightPct: DefaultDenseWeightPct,
	}
	if diff := cmp.Diff(want, cfg.Embeddings); diff != "" {
		t.Errorf("embeddings mismatch (-want +got):\n%s", diff)
	}
	if !cfg.Embeddings.IsEnabled() {
		t.Errorf("got disabled, want enabled with a url")
	}
	off := EmbeddingsConfig{URL: "http://h", Model: "m", Enabled: boolPtr(false)}
	if off.IsEnabled() {
		t.Errorf("enabled=false: got enabled, want off")
	}
}

func TestEmbeddingsConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings, each must appear; nil = valid
	}{
		{"minimal", `{"url": "http://127.0.0.1:1234/v1", "model": "m"}`, nil},
		{"all knobs in range", `{"url": "https://api.openai.com/v1", "model": "text-embedding-3-small", "api_key": "k",
			"dimensions": 256, "batch_size": 2048, "timeout": "1m", "query_timeout": "500ms", "retry_interval": "10s",
			"rrf_k": 1, "dense_weight_pct": 1000, "enabled": false}`, nil},
		{"model without url", `{"model": "m"}`, []string{"embeddings.url: is required with model or api_key"}},
		{"url without model", `{"url": "http://h/v1"}`, []string{"embeddings.model: is required with url"}},
		{"bad scheme", `{"url": "ftp://h/v1", "model": "m"}`, []string{"embeddings.url: want an http:// or https:// URL"}},
		{"out of range", `{"url": "http://h", "model": "m", "batch_size": 5000, "dimensions": -1, "rrf_k": 1001, "dense_weight_pct": -5}`,
			[]string{"embeddings.batch_size: 5000 is out of range", "embeddings.dimensions: -1 is out of range",
				"embeddings.rrf_k: 1001 is out of range", "embeddings.dense_weight_pct: -5 is out of range"}},
		{"key with newline", `{"url": "http://h", "model": "m", "api_key": "a\nb"}`, []string{"embeddings.api_key: contains a line break"}},
		{"zero duration", `{"url": "http://h", "model": "m", "query_timeout": "0s"}`, []string{"embeddings.query_timeout: must be > 0"}},
		{"unknown key", `{"url": "http://h", "model": "m", "batchsize": 3}`, []string{"embeddings.batchsize: unknown key", `did you mean "batch_size"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSection(t, "embeddings", tc.in, tc.want)
		})
	}
}

// TestEmbeddingsConfigErrorsHideSecrets checks that a problem with the url
// or key never repeats them: config errors end up in logs.
func TestEmbeddingsConfigErrorsHideSecrets(t *testing.T) {
	_, err := Parse([]byte(`{"embeddings": {"url": "ftp://user:hunter2@h/v1?key=sk-secret", "model": "m", "api_key": "sk-secret\n"}}`), nil)
	if err == nil {
		t.Fatal("got no error, want one")
	}
	for _, secret := range []string{"hunter2", "sk-secret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("got error %q, want it not to contain %q", err, secret)
		}
	}
}
