package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With Options.Redact, neither the transcript nor an archived original
// holds the secret, in a call's arguments or its result, and the session
// reopens from what was recorded (issue 16).
func TestRedactBeforeRecording(t *testing.T) {
	const secret = "tok-SECRET-93e1"
	opts := testOptions(t)
	opts.Redact = strings.NewReplacer(secret, "[REDACTED]").Replace
	h := openHost(t, opts, "s1")
	args, _ := json.Marshal(map[string]any{"key": secret})
	small := callArgs(t, h, "fetch", args, "the key is "+secret)
	if got := small.Recorded[0].Text; got != "the key is [REDACTED]" {
		t.Errorf("recorded result %q, want the secret masked", got)
	}
	big := words(newRand(1), 6000) + " " + secret + " " + words(newRand(2), 6000)
	cut := call(t, h, "read", big)
	if cut.Recorded[0].Original == "" {
		t.Fatal("the large result was not cut to size; the archive path is untested")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(filepath.Join(opts.Dir, "s1"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	archived := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", f)
		}
		archived = archived || strings.Contains(f, ArchiveDir) && strings.Contains(string(b), "[REDACTED]")
	}
	if !archived {
		t.Errorf("no archive holds the masked original; files: %q", files)
	}
	h2 := openHost(t, opts, "s1")
	if n := len(h2.Messages()); n != 4 {
		t.Errorf("reopened session has %d messages, want 4", n)
	}
}
