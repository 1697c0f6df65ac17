package tokens

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNew(t *testing.T) {
	for _, name := range []string{CL100KBase, O200KBase} {
		c, err := New(name)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if got := c.Name(); got != name {
			t.Errorf("Name(): got %q, want %q", got, name)
		}
	}
}

func TestNewUnknownEncoding(t *testing.T) {
	for _, name := range []string{"", "p50k_base", "gpt-4o", "CL100K_BASE"} {
		c, err := New(name)
		if err == nil {
			t.Fatalf("New(%q) = %v, want an error", name, c)
		}
		for _, s := range Supported() {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("New(%q) error %q does not name the supported encoding %q", name, err, s)
			}
		}
	}
}

// Known counts, checked against OpenAI's tiktoken for these encodings.
func TestCountKnown(t *testing.T) {
	tests := []struct {
		encoding, text string
		want           int
	}{
		{CL100KBase, "", 0},
		{CL100KBase, "hello world", 2},
		{CL100KBase, "tiktoken is great!", 6},
		{O200KBase, "hello world", 2},
		{O200KBase, "", 0},
	}
	for _, tc := range tests {
		c, err := New(tc.encoding)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count(tc.text); got != tc.want {
			t.Errorf("%s Count(%q): got %d, want %d", tc.encoding, tc.text, got, tc.want)
		}
	}
}

// Special-token spellings in user text are plain text: no panic, and the
// count is that of the characters, not of one control token.
func TestCountSpecialTokensAsText(t *testing.T) {
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"<|endoftext|>", "a <|endofprompt|> b", "<|fim_prefix|><|fim_middle|><|fim_suffix|>"} {
			if got := c.Count(text); got <= 1 {
				t.Errorf("%s Count(%q): got %d, want it counted as several plain-text tokens", name, text, got)
			}
		}
	}
}

func TestCountConcurrent(t *testing.T) {
	texts := []string{"alpha beta", "func main() { fmt.Println(\"hi\") }", "日本語のテキスト", strings.Repeat("x y ", 500), "🎉👍🏽"}
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, len(texts))
		for i, s := range texts {
			want[i] = c.Count(s)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16*len(texts))
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A fresh Counter from the cache must agree with the shared one.
				c2, err := New(name)
				if err != nil {
					errs <- err
					return
				}
				for i := range texts {
					j := (i + g) % len(texts)
					if got := c2.Count(texts[j]); got != want[j] {
						errs <- fmt.Errorf("%s Count(%q): got %d concurrently, want %d", name, texts[j], got, want[j])
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// offlineChildEnv marks the child process of TestNeverTouchesNetwork.
const offlineChildEnv = "MCPROXY_TOKENS_OFFLINE_CHILD"

// TestNeverTouchesNetwork loads both encodings in a fresh process (so
// nothing is cached yet) in which every HTTP request fails, the proxy points
// at a closed port and tiktoken's download cache is an empty directory: if
// anything tried to fetch a vocabulary, New would fail.
func TestNeverTouchesNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(),
		offlineChildEnv+"=1",
		"TIKTOKEN_CACHE_DIR="+t.TempDir(),
		"DATA_GYM_CACHE_DIR="+t.TempDir(),
		"HTTP_PROXY=http://127.0.0.1:1",
		"HTTPS_PROXY=http://127.0.0.1:1",
		"NO_PROXY=",
	)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("offline child failed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "offline-ok") {
		t.Fatalf("offline child did not run its checks:\n%s", out.String())
	}
}

// failingTransport fails every request and records that one was attempted.
type failingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.urls = append(f.urls, r.URL.String())
	f.mu.Unlock()
	return nil, errors.New("network access is forbidden in this test")
}

func TestMain(m *testing.M) {
	if os.Getenv(offlineChildEnv) == "1" {
		os.Exit(offlineChild())
	}
	os.Exit(m.Run())
}

// offlineChild is the whole program of the child process: with HTTP made to
// fail, both encodings must load and count. This process runs nothing else,
// so replacing the default transport cannot leak into other tests.
func offlineChild() int {
	ft := &failingTransport{}
	http.DefaultTransport = ft
	http.DefaultClient.Transport = ft
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			fmt.Printf("New(%q) without network: %v\n", name, err)
			return 1
		}
		if got := c.Count("hello world"); got != 2 {
			fmt.Printf("%s Count(%q): got %d, want 2\n", name, "hello world", got)
			return 1
		}
	}
	if len(ft.urls) > 0 {
		fmt.Printf("HTTP requests were attempted: %v\n", ft.urls)
		return 1
	}
	fmt.Println("offline-ok")
	return 0
}

// benchText is about 10 KB of mixed prose, code, JSON and non-Latin text.
func benchText() string {
	parts := []string{
		"The proxy aggregates tool listings from every upstream server and answers retrieve_tools queries. ",
		"func (m *Manager) Call(ctx context.Context, server, tool string) error { return nil }\n",
		`{"type":"object","properties":{"path":{"type":"string","description":"File to read"}},"required":["path"]}` + "\n",
		"日本語のテキストと中文文本混合。Ünïcödé — ẞ ß 🎉👍🏽\n",
		"    indented   spaces\t\ttabs\n\n",
	}
	var b strings.Builder
	for i := 0; b.Len() < 10*1024; i++ {
		b.WriteString(parts[i%len(parts)])
	}
	return b.String()
}

// BenchmarkCount measures Count on 10 KB. The "baseline" sub-benchmark is the
// common length/4 estimate over the same text, so the tokenizer's cost can be
// read as a ratio against it within one run; "tiktoken-go" is the count
// without the ASCII path.
func BenchmarkCount(b *testing.B) {
	text := benchText()
	b.Run("baseline/runes-div-4", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		n := 0
		for b.Loop() {
			n += utf8.RuneCountInString(text) / 4
		}
		_ = n
	})
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.Count(text)
			}
		})
		// The same count all through tiktoken-go (no ASCII path), the
		// figure Count had before it (issue 13).
		b.Run(name+"/tiktoken-go", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tiktokenCount(c, text)
			}
		})
	}
}

func TestSplitLongRuns(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"ordinary text stays whole", "hello world, 123", 8, []string{"hello world, 123"}},
		{"long letter run is cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"classes reset the run", "abcd efgh", 4, []string{"abcd efgh"}},
		{"long space run is cut", "a" + strings.Repeat(" ", 9) + "b", 4, []string{"a    ", "    ", " b"}},
		{"multi-byte runes cut on rune boundaries", "ééééé", 2, []string{"éé", "éé", "é"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := splitLongRuns(tc.in, tc.max)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("splitLongRuns(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

// TestCountLongRunsClose checks that cutting pathological runs keeps the
// count within a few tokens per cut of the exact BPE count.
func TestCountLongRunsClose(t *testing.T) {
	c, err := New(CL100KBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		strings.Repeat("abcdefghijklmnopqrstuvwxyz", 200),
		strings.Repeat(" ", 5000),
		strings.Repeat("=-", 2500),
		"head " + strings.Repeat("Zq", 2500) + " tail",
	} {
		exact := len(c.enc.EncodeOrdinary(text))
		cuts := len(splitLongRuns(text, maxRun)) - 1
		if cuts == 0 {
			t.Fatalf("test text of %d runes was not cut; the test does not exercise the cut", len(text))
		}
		got := c.Count(text)
		if d := got - exact; d < -4*cuts || d > 4*cuts {
			t.Errorf("Count(%d-rune run) = %d, exact %d: off by %d with %d cuts", len(text), got, exact, d, cuts)
		}
	}
}
