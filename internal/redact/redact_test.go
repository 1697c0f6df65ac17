package redact

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8/mcp", "http://127.0.0.1:8/mcp"},
		{"http://127.0.0.1:8/mcp?api_key=s3cret&v=2", "http://127.0.0.1:8/mcp?api_key=[REDACTED]&v=[REDACTED]"},
		{"https://user:pw@example.com/x?debug", "https://[REDACTED]@example.com/x?debug"},
		{"https://tok123@example.com", "https://[REDACTED]@example.com"},
		{"https://example.com/p?ABCDEF0123456789ABCDEF#frag", "https://example.com/p?[REDACTED]#frag"},
		{"https://example.com/a@b/c", "https://example.com/a@b/c"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLsInGoErrors(t *testing.T) {
	e := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp?api_key=tok-42", Err: errors.New("connection refused")}
	got := URLs(fmt.Sprintf("sending request: %v", e))
	want := `sending request: Post "http://127.0.0.1:1/mcp?api_key=[REDACTED]": connection refused`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBuiltin(t *testing.T) {
	r := New(Options{})
	for _, tc := range []struct{ name, secret, context string }{
		{"github", "ghp_" + strings.Repeat("a1B2", 9), "token is %s ok"},
		{"github pat", "github_pat_11ABCDEFG0" + strings.Repeat("x", 40), "%s"},
		{"openai", "sk-proj-" + strings.Repeat("Ab3", 10), "OPENAI_API_KEY=%s"},
		{"anthropic", "sk-ant-api03-" + strings.Repeat("Zz9_", 10), "key: %s"},
		{"aws", "AKIAIOSFODNN7EXAMPLE", "id=%s"},
		{"slack", "xoxb-1234567890-abcdefghij", "(%s)"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "%s"},
		{"bearer", "abcDEF123456789xyz", "Authorization: Bearer %s"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----", "x\n%s\ny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fmt.Sprintf(tc.context, tc.secret)
			got := r.String(in)
			if strings.Contains(got, tc.secret) || !strings.Contains(got, Mask) {
				t.Errorf("got %q, want the secret masked", got)
			}
		})
	}
	if got := r.String("Bearer abcDEF123456789xyz"); got != "Bearer "+Mask {
		t.Errorf("got %q, want only the credential masked", got)
	}
	plain := "the basic token representation of a skeleton key, sk-short, AKIA"
	if got := r.String(plain); got != plain {
		t.Errorf("got %q, want prose untouched", got)
	}
}

func TestLiteralsAndPatterns(t *testing.T) {
	pats, err := Compile([]string{`acme_[0-9]{6}`, `pin=(\d+)`})
	if err != nil {
		t.Fatal(err)
	}
	r := New(Options{Literals: []string{"hunter2hunter2", "a+b/c=d&e", "abc"}, Patterns: pats})
	in := "pw hunter2hunter2, escaped a%2Bb%2Fc%3Dd%26e, short abc, acme_123456, pin=4242"
	want := "pw [REDACTED], escaped [REDACTED], short abc, [REDACTED], pin=[REDACTED]"
	if got := r.String(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := Compile([]string{"("}); err == nil || !strings.Contains(err.Error(), "redact[0]") {
		t.Errorf("got %v, want an error naming redact[0]", err)
	}
	var nilR *Redactor
	if got := nilR.String("ghp_x"); got != "ghp_x" {
		t.Errorf("nil redactor changed text: %q", got)
	}
}

func TestSecrets(t *testing.T) {
	cfg := &config.Config{AuthToken: "front-token-1", MCPServers: map[string]config.ServerConfig{
		"a": {URL: "https://u:pw123456@h/mcp?api_key=QUERYTOKEN&page=1", Headers: map[string]string{"Authorization": "Bearer HDRTOKEN1", "Accept": "application/json"}},
		"b": {Command: "x", Env: map[string]string{"GITHUB_TOKEN": "ENVTOKEN9", "NODE_ENV": "production", "OPAQUE": "q8Zr2LmN4pX7vB1cD9eF3g"},
			Args: []string{"--api-key", "ARGTOKEN1", "--password=ARGTOKEN2", "/srv/data/project2024-files-v3", "--verbose"}},
	}}
	got := strings.Join(Secrets(cfg), " ")
	for _, want := range []string{"front-token-1", "pw123456", "QUERYTOKEN", "Bearer HDRTOKEN1", "ENVTOKEN9", "q8Zr2LmN4pX7vB1cD9eF3g", "ARGTOKEN1", "ARGTOKEN2"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets lacks %q (got %q)", want, got)
		}
	}
	for _, not := range []string{"application/json", "production", "/srv/data/project2024-files-v3", "--verbose"} {
		if strings.Contains(got, not) {
			t.Errorf("Secrets holds the non-secret %q", not)
		}
	}
}

func TestCore(t *testing.T) {
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	r := New(Options{URLs: true, Literals: []string{"LITERAL-SECRET"}})
	log := Logger(zap.New(zapcore.NewCore(enc, zapcore.AddSync(&buf), zap.DebugLevel)), r)
	err := &url.Error{Op: "Get", URL: "http://h/mcp?api_key=QTOKEN", Err: errors.New("refused")}
	log.With(zap.String("ctx", "LITERAL-SECRET")).Warn("failed http://h/?api_key=QTOKEN",
		zap.Error(err), zap.Strings("list", []string{"LITERAL-SECRET"}), zap.Int("n", 3), zap.Any("m", map[string]string{"k": "LITERAL-SECRET"}))
	out := buf.String()
	for _, s := range []string{"QTOKEN", "LITERAL-SECRET"} {
		if strings.Contains(out, s) {
			t.Errorf("log line holds %q: %s", s, out)
		}
	}
	if !strings.Contains(out, `"n":3`) || !strings.Contains(out, "api_key=[REDACTED]") {
		t.Errorf("log line lost its other fields: %s", out)
	}
}

// BenchmarkRedact compares masking a 1 MB tool result without secrets
// against copying it (the floor).
func BenchmarkRedact(b *testing.B) {
	text := strings.Repeat("The quick brown fox reads /api/v1/items?id=7 and jumps over 42 lazy dogs.\n", 1<<20/75)
	pats, _ := Compile([]string{`acme_[0-9]{6}`})
	r := New(Options{Literals: []string{"hunter2hunter2", "ENVTOKEN9"}, Patterns: pats})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for i := 0; i < b.N; i++ {
			_ = strings.Clone(text)
		}
	})
	b.Run("redact", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for i := 0; i < b.N; i++ {
			_ = r.String(text)
		}
	})
}

// TestHintsAreSound checks that skipping a pattern whose hints are absent
// changes nothing: for every github token prefix (the hints name each one;
// issue 13: the old hint "gh" ran the expression over any text with
// "through" in it) and for prose around them, the hinted redactor masks
// exactly what the expressions alone mask.
func TestHintsAreSound(t *testing.T) {
	bare := New(Options{})
	for i := range bare.patterns {
		bare.patterns[i].hints = nil
	}
	hinted := New(Options{})
	var texts []string
	for _, p := range []string{"ghp", "gho", "ghu", "ghs", "ghr", "ghx", "GHP"} {
		secret := p + "_" + strings.Repeat("a1B2", 9)
		texts = append(texts, "token "+secret+" ok", "through the high "+secret, secret)
	}
	texts = append(texts, strings.Repeat("The quick brown fox jumps over the lazy dog; abcdefghij through.\n", 100))
	// Large texts take the one-pass scan for hints (scanMin): every
	// builtin's sample, alone and together, in prose, at the ends too.
	prose := strings.Repeat("prose with earer, uthorization, sk, xo, ey and gh in it; ", scanMin/50)
	all := ""
	for _, sample := range builtinSamples {
		texts = append(texts, prose+sample+prose, sample+prose, prose+sample)
		all += prose + sample
	}
	texts = append(texts, all, prose)
	for _, in := range texts {
		got, want := hinted.String(in), bare.String(in)
		if got != want {
			t.Errorf("String(%.60q) = %.60q, want %.60q", in, got, want)
		}
		if len(in) >= scanMin && strings.Contains(in, "github_pat_") && !strings.Contains(got, Mask) {
			t.Errorf("a large text with a token kept it: %.60q", got)
		}
	}
}

// BenchmarkStringLarge is masking a 5 MB text with no secret in it, the
// size of a large write_file's content (issue 13).
func BenchmarkStringLarge(b *testing.B) {
	r := New(Options{Literals: []string{"s3cret-value"}})
	text := strings.Repeat("line of a five megabyte file written through write_file, 0123456789.\n", 5<<20/70)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.String(text)
	}
}

// builtinSamples hold a secret for each builtin pattern.
var builtinSamples = []string{
	"ghp_" + strings.Repeat("a1B2", 9), "github_pat_11ABCDEFG0" + strings.Repeat("x", 40), "sk-proj-" + strings.Repeat("Ab3", 10),
	"sk_live_" + strings.Repeat("a", 20), "AKIAIOSFODNN7EXAMPLE", "AIza" + strings.Repeat("b", 35), "xoxb-1234567890-abcdefghij",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
	"Authorization: Bearer abcDEF123456789xyz", "authorization: basic dXNlcjpwYXNzd29yZA==",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----",
}
