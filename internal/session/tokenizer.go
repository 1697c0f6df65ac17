package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcproxy/mcproxy/internal/tokens"
)

// SessionFile names the tokenizer a session was made with (Options.
// Tokenizer): the token figures frozen in its refs came from it, and so did
// every size its Compress calls were checked against, so a later open,
// Inspect and Rebuild count the session with it even when the
// configuration's tokenizer has changed since. A session made before
// sessions named theirs, or by a host whose Count is not a named encoding,
// has none and is counted with the Options it is opened with.
const SessionFile = "session.json"

// sessionMeta is SessionFile's content.
type sessionMeta struct {
	Tokenizer string `json:"tokenizer"`
}

// sessionTokenizer returns opts counting as the session in dir was made
// to: with the tokenizer SessionFile names when it differs from
// opts.Tokenizer. create saves opts.Tokenizer for a new session (one whose
// transcript does not exist yet). With no named tokenizer in opts, the file
// is neither read nor written: the caller's Count is a test's or a tool's.
func sessionTokenizer(opts Options, dir string, create bool) (Options, error) {
	if opts.Tokenizer == "" {
		return opts, nil
	}
	path := filepath.Join(dir, SessionFile)
	data, err := os.ReadFile(path)
	if notExist(err) {
		if !create {
			return opts, nil
		}
		if _, err := os.Stat(filepath.Join(dir, TranscriptFile)); !notExist(err) {
			return opts, nil // an older session: what it was made with is unknown
		}
		b, _ := json.Marshal(sessionMeta{Tokenizer: opts.Tokenizer})
		if _, err := writeAtomic(opts.FS, path, append(b, '\n')); err != nil {
			return opts, fmt.Errorf("saving %s: %w", SessionFile, err)
		}
		return opts, nil
	}
	if err != nil {
		return opts, fmt.Errorf("reading %s: %w", SessionFile, err)
	}
	var meta sessionMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return opts, fmt.Errorf("reading %s: %w (delete it to count the session with the configured tokenizer, %s)", path, err, opts.Tokenizer)
	}
	if meta.Tokenizer == "" || meta.Tokenizer == opts.Tokenizer {
		return opts, nil
	}
	counter, err := tokens.New(meta.Tokenizer)
	if err != nil {
		return opts, fmt.Errorf("%s names the tokenizer the session was made with: %w (delete it to count the session with the configured tokenizer, %s)", path, err, opts.Tokenizer)
	}
	opts.Tokenizer, opts.Count = meta.Tokenizer, CountOpaque(counter.Count)
	return opts, nil
}
