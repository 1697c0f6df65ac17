package mcptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"
)

// This file lets replicas share streamable HTTP sessions (issue 32): with
// HTTPOptions.Sessions, an initialize's session is saved in the store
// before its id is answered, and a replica that is handed an id it did not
// issue looks it up there and, if the request's identity owns it, rebuilds
// it before serving the request, so that a load balancer needs no affinity
// for /mcp.
//
// mcp-go's streamable server keeps a session (its client info and
// capabilities, its negotiated revision, its log level) in memory only and
// offers no way to register one it did not initialize. The one way in is
// the initialize itself, so adopt replays the client's own initialize,
// saved by the replica that answered it, through mcp-go with the stored id
// (adoptKey: the resolver's Generate returns it instead of a new one): the
// session is rebuilt exactly as its first replica built it, hooks and all.
// The client's last logging/setLevel is stored too (levels) and replayed
// after the initialize; a level set once a replica has adopted the session
// reaches that replica only if it adopts it again. What the replay does
// not bring: resource subscriptions, which stay on the replica that took
// them, and server-to-client streams (GET), which stay on the replica the
// client connected to.

// SessionStore keeps the streamable HTTP sessions replicas share; pgstore
// implements it. Every method is bounded by its ctx.
type SessionStore interface {
	// SaveSession records a new session: its id, its owner (an opaque
	// identity label, never a credential) and the initialize request it
	// was made by.
	SaveSession(ctx context.Context, id, owner string, initialize []byte) error
	// LoadSession returns a session that has had a request within the
	// idle timeout (the store's to know), with its log level ("" for
	// none); ok is false for any other.
	LoadSession(ctx context.Context, id string) (owner string, initialize []byte, logLevel string, ok bool, err error)
	// SetLogLevel records the session's log level (logging/setLevel).
	SetLogLevel(ctx context.Context, id, level string) error
	// TouchSession records a request of the session now.
	TouchSession(ctx context.Context, id string) error
	// DeleteSession ends the session for every replica.
	DeleteSession(ctx context.Context, id string) error
}

// storeTimeout bounds each call to the SessionStore.
const storeTimeout = 5 * time.Second

// Context keys of the requests the registry makes or marks for itself.
type (
	// initKey carries an initialize's body from admit to Generate.
	initKey struct{}
	// adoptKey carries the id a replayed initialize must get.
	adoptKey struct{}
	// localKey marks a DELETE that ends a session on this replica only
	// (the idle sweep: idle here is not idle everywhere).
	localKey struct{}
)

// save records a new session in the store before its id is answered, so
// that the client's next request finds it on any replica. A failure is
// logged: the session still works on this replica.
func (r *sessionRegistry) save(id, owner string, initialize []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.SaveSession(ctx, id, owner, initialize); err != nil {
		r.log.Warn("saving a client session in the shared store: other replicas will answer it 404", zap.String("session_id", id), zap.Error(err))
	}
}

// forget deletes a session from the store (a client's DELETE).
func (r *sessionRegistry) forget(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.DeleteSession(ctx, id); err != nil {
		r.log.Warn("deleting a client session from the shared store", zap.String("session_id", id), zap.Error(err))
	}
}

// touch records a request of a stored session, at most every idle/10, so
// that the store keeps a session that is busy on other replicas.
func (r *sessionRegistry) touch(id string, a *sessionActivity) {
	now := time.Now().UnixNano()
	last := a.touched.Load()
	if now-last < int64(r.idle/10) || !a.touched.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.TouchSession(ctx, id); err != nil {
		r.log.Warn("touching a client session in the shared store", zap.String("session_id", id), zap.Error(err))
	}
}

// adopt rebuilds session id, issued by another replica, from the store
// when req's identity owns it, and returns its activity; nil when the
// store has no such session of that identity. Concurrent requests naming
// one id adopt it once.
func (r *sessionRegistry) adopt(req *http.Request, id string) *sessionActivity {
	r.mu.Lock()
	if a := r.sessions[id]; a != nil {
		r.mu.Unlock()
		return a
	}
	if wait, busy := r.adopting[id]; busy {
		r.mu.Unlock()
		<-wait
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.sessions[id]
	}
	done := make(chan struct{})
	r.adopting[id] = done
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.adopting, id)
		r.mu.Unlock()
		close(done)
	}()

	ctx, cancel := context.WithTimeout(req.Context(), storeTimeout)
	defer cancel()
	owner, initialize, level, ok, err := r.store.LoadSession(ctx, id)
	if err != nil {
		r.log.Warn("looking a client session up in the shared store", zap.String("session_id", id), zap.Error(err))
		return nil
	}
	if !ok || owner != ownerOf(req) {
		return nil
	}
	rec := r.post(context.WithValue(req.Context(), adoptKey{}, id), initialize, nil)
	if rec.status != http.StatusOK || rec.header.Get(mcpserver.HeaderKeySessionID) != id {
		r.log.Warn("rebuilding a client session of another replica", zap.String("session_id", id), zap.Int("status", rec.status))
		_, _ = r.Terminate(id)
		return nil
	}
	if level != "" {
		r.replayLevel(req, id, level)
	}
	r.log.Debug("continuing a client session of another replica", zap.String("session_id", id))
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// replayLevel sets an adopted session's log level as the client set it on
// another replica. A failure is logged: the session goes on at mcp-go's
// default level.
func (r *sessionRegistry) replayLevel(req *http.Request, id, level string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": string(mcp.MethodSetLogLevel), "params": map[string]string{"level": level}})
	header := http.Header{}
	header.Set(mcpserver.HeaderKeySessionID, id)
	if v := req.Header.Get(mcp.HeaderProtocolVersion); v != "" {
		header.Set(mcp.HeaderProtocolVersion, v)
	}
	rec := r.post(req.Context(), body, header)
	if rec.status != http.StatusOK || bytes.Contains(rec.body.Bytes(), []byte(`"error"`)) {
		r.log.Warn("restoring the log level of a client session of another replica", zap.String("session_id", id), zap.String("level", level), zap.Int("status", rec.status))
	}
}

// levels records each logging/setLevel a client sends on a stored session
// (wrapping the streamable handler inside track), so that a replica
// adopting the session sets it too.
func (r *sessionRegistry) levels(id string, req *http.Request) {
	if req.Method != http.MethodPost || req.Body == nil {
		return
	}
	data, err := bodyBytes(req)
	// Most posts are calls: only a body naming the method is decoded.
	if err != nil || !bytes.Contains(data, []byte(mcp.MethodSetLogLevel)) {
		return
	}
	e, ok := readElement(data)
	if !ok || e.Method != string(mcp.MethodSetLogLevel) {
		return
	}
	var m struct {
		Params struct {
			Level string `json:"level"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil || m.Params.Level == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.SetLogLevel(ctx, id, m.Params.Level); err != nil {
		r.log.Warn("saving a client session's log level in the shared store", zap.String("session_id", id), zap.Error(err))
	}
}

// post hands mcp-go's streamable handler a POST of body that the registry
// makes for itself, with header's fields, and returns its answer.
func (r *sessionRegistry) post(ctx context.Context, body []byte, header http.Header) *recorder {
	rec := &recorder{header: http.Header{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, PathStreamable, bytes.NewReader(body))
	if err != nil {
		rec.status = http.StatusInternalServerError // a constant method and path: cannot fail
		return rec
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	r.replay.ServeHTTP(rec, req)
	return rec
}
