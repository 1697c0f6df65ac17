package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// cdpBrowser is a headless chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: commands on its fd 3, answers and events
// on its fd 4, each a JSON message ended by a NUL byte), with one page
// attached. Unlike one `chromium --dump-dom` run per URL, every page it
// loads shares one running browser and its profile, cookies included:
// session cookies live only as long as the browser process.
type cdpBrowser struct {
	t       *testing.T
	w       io.WriteCloser
	stderr  *lockedBuffer
	session string // the attached page's

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	readErr error
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startCDP starts chromium at bin with a fresh profile and a blank page
// attached; the test's cleanup closes it.
func startCDP(t *testing.T, bin string) *cdpBrowser {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	b := &cdpBrowser{t: t, w: cmdW, stderr: &lockedBuffer{}, pending: map[int]chan cdpMessage{}}
	cmd.Stderr = b.stderr
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fd 3 and fd 4
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting chromium: %v", err)
	}
	cmdR.Close()
	outW.Close()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b.read(outR)
	}()
	t.Cleanup(func() {
		// Browser.close ends chromium; closing its command pipe backs
		// that up, and the context kills what is left at its deadline.
		_, _ = b.send(cdpMessage{Method: "Browser.close"})
		cmdW.Close()
		_ = cmd.Wait()
		cancel()
		outR.Close()
		<-readDone
		if t.Failed() {
			out := b.stderr.String()
			t.Logf("chromium stderr (its end):\n%s", out[max(0, len(out)-4000):])
		}
	})

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.browserCall("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.browserCall("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	return b
}

// read dispatches chromium's answers to their callers until the pipe ends;
// events are not used and dropped.
func (b *cdpBrowser) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("reading chromium's pipe: %w", err)
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// send writes m with a fresh id and returns the channel its answer comes
// on (closed unanswered if the pipe ends).
func (b *cdpBrowser) send(m cdpMessage) (<-chan cdpMessage, error) {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return nil, b.readErr
	}
	b.nextID++
	m.ID = b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[m.ID] = ch
	b.mu.Unlock()
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return nil, fmt.Errorf("writing to chromium: %w", err)
	}
	return ch, nil
}

func (b *cdpBrowser) call(session, method string, params, out any) {
	b.t.Helper()
	ch, err := b.send(cdpMessage{Method: method, SessionID: session, Params: params})
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", method, err, b.stderr.String())
	}
	select {
	case m, ok := <-ch:
		if !ok {
			b.t.Fatalf("%s: chromium went away\n%s", method, b.stderr.String())
		}
		if m.Error != nil {
			b.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				b.t.Fatalf("%s: decoding %s: %v", method, m.Result, err)
			}
		}
	case <-time.After(time.Minute):
		b.t.Fatalf("%s: no answer within a minute\n%s", method, b.stderr.String())
	}
}

// browserCall calls a method of the browser; pageCall one of the page.
func (b *cdpBrowser) browserCall(method string, params, out any) {
	b.t.Helper()
	b.call("", method, params, out)
}
func (b *cdpBrowser) pageCall(method string, params, out any) {
	b.t.Helper()
	b.call(b.session, method, params, out)
}

// navigate loads url in the page (Page.navigate returns once the response
// has arrived; what the page does next is for eval to wait on).
func (b *cdpBrowser) navigate(url string) {
	b.t.Helper()
	var res struct {
		ErrorText string `json:"errorText"`
	}
	b.pageCall("Page.navigate", map[string]any{"url": url}, &res)
	if res.ErrorText != "" {
		b.t.Fatalf("navigating to %s: %s", url, res.ErrorText)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into out.
func (b *cdpBrowser) eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	b.pageCall("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		b.t.Fatalf("evaluating %s: decoding %s: %v", expr, res.Result.Value, err)
	}
}

// waitTrue polls a boolean JavaScript expression until it holds.
func (b *cdpBrowser) waitTrue(what, expr string, dump func() string) {
	b.t.Helper()
	eventually(b.t, what, 45*time.Second, func() bool {
		var ok bool
		b.eval(expr, &ok)
		return ok
	}, dump)
}
