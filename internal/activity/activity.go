// Package activity keeps mcproxy's call history (issue 30): one entry per
// tool call through the proxy (when, which client session, server:tool, how
// long, ok or the error), appended as JSON lines to one file in the data dir
// and read back by `mcproxy activity` and the dashboard. Arguments and error
// texts are masked by Options.Mask (the transcripts' redactor) and cut to
// MaxText before anything keeps them; results are not stored. The history
// is bounded by age and count (config activity.retention and
// activity.max_entries): the file is rewritten without what fell out every
// so often. Writes happen off the call path, on one goroutine that Close
// flushes and stops. The package decides nothing about where the file is or
// what gets recorded; its caller does.
package activity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// MaxText bounds an entry's arguments and error text, in bytes: the history
// says what a call was, the transcript holds it whole.
const MaxText = 512

// Entry is one tool call.
type Entry struct {
	Time time.Time `json:"time"`
	// Session is the client session's id; Client the name its client gave
	// in initialize. Either may be empty.
	Session string `json:"session,omitempty"`
	Client  string `json:"client,omitempty"`
	// Token names the client token the call came with (its name, never
	// its value), "(admin)" for auth_token; empty without a credential.
	Token  string `json:"token,omitempty"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// DurationMS is how long the call took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Error is "" for a call that succeeded, else the error the client got.
	Error string `json:"error,omitempty"`
	// Arguments are the call's arguments as JSON, masked and cut.
	Arguments string `json:"arguments,omitempty"`
}

// OK reports whether the call succeeded.
func (e Entry) OK() bool { return e.Error == "" }

// Filter selects entries; the zero value selects every one.
type Filter struct {
	Server, Tool, Session, Token string
	// Errors keeps only failed calls.
	Errors bool
}

// Match reports whether e passes f.
func (f Filter) Match(e Entry) bool {
	return (f.Server == "" || e.Server == f.Server) && (f.Tool == "" || e.Tool == f.Tool) &&
		(f.Session == "" || e.Session == f.Session) && (f.Token == "" || e.Token == f.Token) && (!f.Errors || !e.OK())
}

// Options configure a Log.
type Options struct {
	// MaxAge drops entries older than it (config activity.retention); zero
	// keeps them whatever their age.
	MaxAge time.Duration
	// MaxEntries is how many entries are kept at most (config
	// activity.max_entries); zero or less means 10000.
	MaxEntries int
	// Mask masks secrets in arguments and error texts before they are kept;
	// nil keeps them as they are (tests only: production passes the
	// transcripts' redactor).
	Mask func(string) string
	// Logger gets write failures; nil = no-op.
	Logger *zap.Logger
	// Now is the clock for retention (nil = time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10000
	}
	if o.Mask == nil {
		o.Mask = func(s string) string { return s }
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// queueSize is how many entries wait for the writer before Add drops the
// write (the entry stays in memory): a stalled disk never slows a call.
const queueSize = 1024

// Log is an open call history. Its methods are safe for concurrent use.
type Log struct {
	path string
	opts Options
	ch   chan Entry
	done <-chan struct{}

	mu     sync.Mutex
	recent []Entry // oldest first; the newest MaxEntries are kept
	closed bool
	// dropped counts entries whose write was dropped (queue full);
	// guarded by mu.
	dropped int
}

// Open opens (creating if needed) the history at path, loads what it keeps
// and starts the writer.
func Open(path string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the call history's directory: %w", err)
	}
	all, err := readFile(path)
	if err != nil {
		return nil, err
	}
	kept := retain(all, opts)
	if len(kept) < len(all) {
		if err := rewrite(path, kept); err != nil {
			return nil, err
		}
	}
	l := &Log{path: path, opts: opts, ch: make(chan Entry, queueSize), recent: kept}
	l.done = goroutine.Go(opts.Logger, "activity writer", l.write)
	return l, nil
}

// Add records e: masked and cut at once, written by the writer. It never
// blocks on the disk.
func (l *Log) Add(e Entry) {
	e.Arguments = maskCut(l.opts.Mask, e.Arguments)
	e.Error = maskCut(l.opts.Mask, e.Error)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.recent = append(l.recent, e)
	// Trimmed a quarter at a time, so a full history costs a call no copy.
	if len(l.recent) > l.opts.MaxEntries+l.opts.MaxEntries/4 {
		l.recent = slices.Clone(l.recent[len(l.recent)-l.opts.MaxEntries:])
	}
	select {
	case l.ch <- e:
	default:
		l.dropped++
	}
}

// Close writes what is queued and stops the writer.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.ch)
	dropped := l.dropped
	l.mu.Unlock()
	<-l.done
	if dropped > 0 {
		return fmt.Errorf("the call history dropped %d entries: the disk did not keep up", dropped)
	}
	return nil
}

// Recent returns up to n entries (n <= 0: all) that pass f, newest first,
// from memory: those Open loaded and those added since.
func (l *Log) Recent(f Filter, n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return newest(l.recent[max(0, len(l.recent)-l.opts.MaxEntries):], f, n, l.cutoff())
}

// cutoff is the oldest time retention keeps (zero: any).
func (l *Log) cutoff() time.Time {
	if l.opts.MaxAge <= 0 {
		return time.Time{}
	}
	return l.opts.Now().Add(-l.opts.MaxAge)
}

// write is the writer goroutine: it appends each batch of queued entries in
// one write and rewrites the file without what fell out of retention once
// as many entries again as a quarter of max_entries were appended.
func (l *Log) write() {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.opts.Logger.Warn("opening the call history; calls are not kept on disk", zap.String("path", l.path), zap.Error(err))
		for range l.ch {
		}
		return
	}
	defer func() { _ = f.Close() }()
	every := max(l.opts.MaxEntries/4, 1)
	appended := 0
	var buf bytes.Buffer
	for e := range l.ch {
		buf.Reset()
		appendLine(&buf, e)
		for n := len(l.ch); n > 0; n-- {
			appendLine(&buf, <-l.ch)
		}
		lines := bytes.Count(buf.Bytes(), []byte{'\n'})
		if _, err := f.Write(buf.Bytes()); err != nil {
			l.opts.Logger.Warn("writing the call history", zap.String("path", l.path), zap.Error(err))
			continue
		}
		if appended += lines; appended < every {
			continue
		}
		appended = 0
		// Reread, not the memory: another mcproxy may append to the
		// same file.
		all, err := readFile(l.path)
		if err == nil {
			err = rewrite(l.path, retain(all, l.opts))
		}
		if err != nil {
			l.opts.Logger.Warn("trimming the call history to activity.retention and activity.max_entries", zap.String("path", l.path), zap.Error(err))
			continue
		}
		// The rename left f on the old file.
		_ = f.Close()
		if f, err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			l.opts.Logger.Warn("reopening the call history; calls are not kept on disk", zap.String("path", l.path), zap.Error(err))
			for range l.ch {
			}
			return
		}
	}
}

func appendLine(buf *bytes.Buffer, e Entry) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	buf.Write(b)
	buf.WriteByte('\n')
}

// Read returns up to n entries (n <= 0: all) of the history at path that
// pass f and retention, newest first. A missing file is an empty history.
func Read(path string, f Filter, n int, opts Options) ([]Entry, error) {
	opts = opts.withDefaults()
	all, err := readFile(path)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts}
	return newest(retain(all, opts), f, n, l.cutoff()), nil
}

// readFile reads every entry of path, oldest first; a line that does not
// parse (a write cut by a crash) is skipped.
func readFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the call history: %w", err)
	}
	defer f.Close()
	var out []Entry
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e Entry
			if json.Unmarshal(line, &e) == nil {
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the call history: %w", err)
		}
	}
	// Appends from several writers may interleave out of order.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// retain keeps the newest MaxEntries entries of all (oldest first) younger
// than MaxAge.
func retain(all []Entry, opts Options) []Entry {
	l := &Log{opts: opts}
	from := max(0, len(all)-opts.MaxEntries)
	if c := l.cutoff(); !c.IsZero() {
		for from < len(all) && all[from].Time.Before(c) {
			from++
		}
	}
	return all[from:]
}

// rewrite replaces the file at path with entries.
func rewrite(path string, entries []Entry) error {
	err := atomicfile.Write(path, atomicfile.Options{NoSync: true}, func(w io.Writer) error {
		var buf bytes.Buffer
		for _, e := range entries {
			appendLine(&buf, e)
		}
		_, err := w.Write(buf.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("rewriting the call history: %w", err)
	}
	return nil
}

// newest returns up to n entries of list (oldest first) that pass f and are
// not older than cutoff, newest first.
func newest(list []Entry, f Filter, n int, cutoff time.Time) []Entry {
	out := []Entry{}
	for i := len(list) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		e := list[i]
		if !cutoff.IsZero() && e.Time.Before(cutoff) {
			break
		}
		if f.Match(e) {
			out = append(out, e)
		}
	}
	return out
}

// maskSpan is how much of a long text is masked before it is cut: MaxText
// and a margin longer than any secret the transcripts' redactor knows, so
// a secret that starts in the part kept is masked whole. Masking all of a
// 5 MB write_file's arguments to keep 512 bytes of them was most of what
// the history cost such a call (issue 28).
const maskSpan = MaxText + 64<<10

// Excerpt is as much of a text as an Entry can show after masking: text
// itself up to maskSpan bytes, else its first maskSpan bytes and "…". Add
// masks and cuts an excerpt as it would the whole text.
func Excerpt(text []byte) string {
	if len(text) <= maskSpan {
		return string(text)
	}
	return string(text[:maskSpan]) + "…"
}

// maskCut is s masked and cut to MaxText bytes. Of a text longer than
// maskSpan only the first maskSpan bytes are masked; should masking shrink
// them by more than half the margin, what is kept could reach a secret cut
// in two at the span's end, so nothing of the text is kept.
func maskCut(mask func(string) string, s string) string {
	if len(s) <= maskSpan {
		return cut(mask(s))
	}
	m := mask(s[:maskSpan])
	if len(m) < maskSpan-(maskSpan-MaxText)/2 {
		return "…"
	}
	return cut(m)
}

// cut shortens s to MaxText bytes at a rune boundary, marking the cut.
func cut(s string) string {
	if len(s) <= MaxText {
		return s
	}
	i := MaxText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
