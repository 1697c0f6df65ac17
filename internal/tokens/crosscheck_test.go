package tokens

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The independent tokenizer we check against, as pinned in package.json.
const gptTokenizerVersion = "3.4.0"

// TestCrossCheckGPTTokenizer counts a few hundred strings with this package
// and with gpt-tokenizer (a separate JavaScript implementation with its own
// copy of the vocabularies) and requires identical counts for both encodings.
func TestCrossCheckGPTTokenizer(t *testing.T) {
	texts := append(handPicked(), corpusTexts(t)...)
	texts = append(texts, generatedTexts(300)...)
	if len(texts) < 400 {
		t.Fatalf("only %d texts to compare, want at least 400", len(texts))
	}
	// gpt-tokenizer mis-encodes U+FEFF (it splits the three bytes EF BB BF,
	// which both vocabularies hold as a single token), so texts with a BOM
	// are checked against the vocabulary itself in TestCountBOM instead.
	kept := texts[:0]
	for _, text := range texts {
		if !strings.ContainsRune(text, '\uFEFF') {
			kept = append(kept, text)
		}
	}
	texts = kept
	want := countWithGPTTokenizer(t, texts)
	counters := allCounters(t)
	mismatches := 0
	for i, text := range texts {
		for _, name := range Supported() {
			got := counters[name].Count(text)
			if got != want[i][name] {
				mismatches++
				if mismatches <= 20 {
					t.Errorf("%s Count(%q): got %d, gpt-tokenizer %d", name, clip(text), got, want[i][name])
				}
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d counts differ from gpt-tokenizer", mismatches, 2*len(texts))
	}
	t.Logf("%d texts, %d counts compared", len(texts), 2*len(texts))
}

// TestCountBOM pins the case where gpt-tokenizer is wrong: the byte
// sequence of U+FEFF is one entry of both vocabularies ("77u/" is rank 3305
// in cl100k_base.tiktoken and 5574 in o200k_base.tiktoken), so a lone BOM is
// exactly one token, as tiktoken itself encodes it.
func TestCountBOM(t *testing.T) {
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count("\uFEFF"); got != 1 {
			t.Errorf("%s Count(U+FEFF): got %d, want 1", name, got)
		}
		if got, want := c.Count("\uFEFFBOM at start"), 1+c.Count("BOM at start"); got != want {
			t.Errorf("%s Count(U+FEFF + %q): got %d, want %d", name, "BOM at start", got, want)
		}
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// handPicked covers the inputs where tokenizers usually disagree: regex
// pre-splitting (contractions, digit runs, whitespace before newlines),
// multi-byte scripts, emoji sequences and special-token spellings.
func handPicked() []string {
	texts := []string{
		"", " ", "a", "hello world", "Hello, World!", "I'm sure they'll say it's fine; we've done it, you'd agree.",
		"DON'T SHOUT, IT'S LOUD", "don’t (curly apostrophe)", "12345678901234567890", "3.14159 2.71828 -42 +7 1e-9",
		"The year 2024 had 366 days.", "phone: +1 (555) 010-0199",
		"func main() {\n\tfmt.Println(\"hello\")\n}\n",
		"def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n",
		"const x = await fetch(`https://example.com/api?q=${query}&limit=10`);",
		"SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days';",
		"<div class=\"card\"><p>Text &amp; more</p></div>",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`,
		"{\n  \"name\": \"read_file\",\n  \"description\": \"Read a file\"\n}",
		"日本語のテキストを数えます。", "中文分词测试，包含标点符号。", "한국어 문장입니다.", "Русский текст с пунктуацией.",
		"مرحبا بالعالم", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Ελληνικά γράμματα", "e\u0301 combining acute", "ﬁ ligature",
		"🎉", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵 flags", "emoji mid🎉word", "❤️‍🔥",
		"<|endoftext|>", "text before <|endoftext|> and after", "<|fim_prefix|>a<|fim_middle|>b<|fim_suffix|>", "<|endofprompt|>",
		"\n", "\n\n\n", "\r\n", "a\r\nb\r\n", "\t", "\t\t\tindented", "trailing spaces   ", "   leading", "a  \n  b",
		strings.Repeat(" ", 17), strings.Repeat(" ", 200), strings.Repeat("\n", 50), strings.Repeat(" \n", 40),
		strings.Repeat("\t ", 33), "word" + strings.Repeat(" ", 9) + "\n" + strings.Repeat(" ", 9) + "word",
		strings.Repeat("a", 1000), strings.Repeat("ab", 700), "Pneumonoultramicroscopicsilicovolcanoconiosis",
		"supercalifragilisticexpialidocious" + strings.Repeat("-ish", 20), strings.Repeat("日", 300),
		strings.Repeat("0", 257), "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZA==",
		"/usr/local/bin/mcproxy --config ~/.mcproxy/config.json", "C:\\Users\\Ada\\Documents\\file.txt",
		"mcp__filesystem__read_text_file", "snake_case_identifier camelCaseIdentifier kebab-case-identifier",
		"id,name,score\n1,Ada,99.5\n2,Bob,87\n", "tools[2]{name,server}:\n  read,fs\n  fetch,web",
		"\u00a0non-breaking\u00a0space", "zero\u200bwidth", "\ufeffBOM at start", "mixed\u3000ideographic space",
	}
	return texts
}

// corpusTexts returns the tool names, descriptions and schemas of corpus_v2.
func corpusTexts(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(testenv.Datasets(t), "corpus_v2.tools.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (set MCPROXY_DATASETS to the frozen corpora directory): %v", path, err)
	}
	var corpus struct {
		Tools []struct {
			Name        string          `json:"name"`
			Tool        string          `json:"tool"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &corpus); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if len(corpus.Tools) == 0 {
		t.Fatalf("%s has no tools", path)
	}
	var out []string
	for _, tool := range corpus.Tools {
		out = append(out, tool.Description, tool.Name+tool.Tool+": "+tool.Description, string(tool.Schema))
	}
	return out
}

// generatedTexts builds n strings deterministically from fragments of many
// kinds, joined by varied whitespace and punctuation.
func generatedTexts(n int) []string {
	r := rand.New(rand.NewPCG(83, 2026))
	fragments := []string{
		"the", "The", "tool", "server", "retrieve_tools", "call_tool", "JSON", "schema", "'s", "'ll", "'RE", "n't",
		"0", "7", "42", "1234", "98765", "3.5", "v1.2.3", "2026-05-29", "12:05", "$19.99", "50%",
		"日本", "語", "中文", "한국", "ру́сский", "ع", "🎉", "👍🏽", "🇯🇵", "é", "ñ", "ß", "Ω",
		"{", "}", "[", "]", "(", ")", "\"", "'", "`", "\\", "/", "|", "<", ">", "=", "==", "=>", "->", "::", "...",
		"<|endoftext|>", "<|", "|>", "http://", "www.", ".com", "#", "@", "&amp;", "\u00a0", "\u200b",
	}
	seps := []string{"", "", " ", " ", " ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", ", ", ". ", "_", "-", "    "}
	texts := make([]string, 0, n)
	for range n {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(fragments[r.IntN(len(fragments))])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// countWithGPTTokenizer counts every text for both encodings in one Node
// process and returns, per text, the counts by encoding name.
func countWithGPTTokenizer(t *testing.T, texts []string) []map[string]int {
	t.Helper()
	testenv.NodePackage(t, "gpt-tokenizer", gptTokenizerVersion)
	script, err := filepath.Abs(filepath.Join("testdata", "count_tokens.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, text := range texts {
		if err := enc.Encode(map[string]any{"id": i, "text": text}); err != nil {
			t.Fatal(err)
		}
	}
	out := testenv.NodeScript(t, script, &in)
	counts := make([]map[string]int, len(texts))
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var res struct {
			ID     int  `json:"id"`
			CL100K *int `json:"cl100k_base"`
			O200K  *int `json:"o200k_base"`
		}
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			t.Fatalf("reading gpt-tokenizer output %q: %v", sc.Text(), err)
		}
		if res.ID < 0 || res.ID >= len(texts) || res.CL100K == nil || res.O200K == nil {
			t.Fatalf("malformed gpt-tokenizer output %q", sc.Text())
		}
		counts[res.ID] = map[string]int{CL100KBase: *res.CL100K, O200KBase: *res.O200K}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		if c == nil {
			t.Fatalf("gpt-tokenizer returned nothing for text %d", i)
		}
	}
	return counts
}
