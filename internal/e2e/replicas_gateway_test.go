package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// roundRobin is the load balancer of the test: each request goes to the
// next backend, with no affinity of any kind.
type roundRobin struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Int64
	mu      sync.Mutex
	served  []int // requests per backend
}

func newRoundRobin(t testing.TB, backends []string) (*httptest.Server, *roundRobin) {
	rr := &roundRobin{served: make([]int, len(backends))}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		rr.proxies = append(rr.proxies, httputil.NewSingleHostReverseProxy(u))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(rr.next.Add(1)-1) % len(rr.proxies)
		rr.mu.Lock()
		rr.served[i]++
		rr.mu.Unlock()
		rr.proxies[i].ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		rr.mu.Lock()
		defer rr.mu.Unlock()
		t.Logf("requests per replica: %v", rr.served)
	})
	return srv, rr
}

// TestGatewayConversationAcrossReplicas is issue 32's gateway acceptance
// through the binary: three replicas sharing one real PostgreSQL, each
// with a data directory of its own, behind a round-robin proxy, so each
// request of one conversation lands on another replica than the one
// before. The conversation stays one session: the agent's Compress calls,
// made on one replica, shape the views the others send; a question about a
// fact compressed away is answered through read_archive with the ref
// another replica gave; the store holds one session and one conversation.
// And while the model answers a turn, the conversation's advisory lock is
// held (turns are serialised across replicas).
func TestGatewayConversationAcrossReplicas(t *testing.T) {
	dsn := testenv.Postgres(t)
	t.Setenv("MCPROXY_E2E_PG_DSN", dsn)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	var mu sync.Mutex
	unlocked := 0 // model requests seen with no advisory lock held
	up := scriptedmodel.New(func(r *scriptedmodel.Request) scriptedmodel.Reply {
		var held int
		// The replicas hold no advisory lock but a turn's (the migration
		// lock is released once they listen).
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").Scan(&held); err != nil || held == 0 {
			mu.Lock()
			unlocked++
			mu.Unlock()
		}
		return gatewaytest.Agent(r)
	})
	defer up.Close()

	const model = "claude-sonnet-4-5"
	dir := t.TempDir()
	const replicas = 3
	backends := make([]string, replicas)
	procs := make([]*proc, replicas)
	configs := make([]string, replicas)
	for i := range replicas {
		cfg := writeConfigFile(t, filepath.Join(dir, fmt.Sprintf("config%d.json", i)), map[string]any{
			"mcpServers": map[string]any{},
			"data_dir":   filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"store":      map[string]any{"postgres": "${MCPROXY_E2E_PG_DSN}"},
			"gateway": map[string]any{"enabled": true, "anthropic": map[string]any{"base_url": up.URL},
				"models": map[string]any{model: map[string]any{"context_window": 30000}}},
		})
		configs[i] = cfg
		addr := freeAddr(t)
		procs[i] = startProc(t, fmt.Sprintf("replica %d", i), osexec.Command(binary, "serve", "--config", cfg, "--listen", addr))
		backends[i] = "http://" + addr
	}
	for i := range replicas {
		waitListening(t, strings.TrimPrefix(backends[i], "http://"), procs[i])
	}
	lb, rr := newRoundRobin(t, backends)

	sc := gatewaytest.NewScenario(gatewaytest.ScenarioOptions{Tasks: 21, FilesPerTask: 3, MinFileBytes: 2000, MaxFileBytes: 9000, Facts: 4, Seed: 11})
	requests := 0
	res, err := gatewaytest.Replay(ctx, sc, gatewaytest.ReplayOptions{
		URL: lb.URL + "/v1/messages", Model: model, System: "You are a careful log analyst.",
		Header:    map[string]string{"x-api-key": "sk-ant-replicas"},
		OnRequest: func(gatewaytest.ReplayRequest) { requests++ },
	})
	logs := func() string {
		var b strings.Builder
		for _, p := range procs {
			fmt.Fprintf(&b, "--- %s\n%s\n", p.name, p.output())
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, logs())
	}
	for i, st := range sc.Steps {
		if st.Question() && !res[i].Answered {
			t.Errorf("step %d asked for %s: got %q, want %q", i, st.Fact, res[i].Answer, st.Want)
		}
	}

	// Each replica's working copy is of the one conversation.
	convs := map[string]bool{}
	for i := range replicas {
		for _, id := range gatewayDirs(t, filepath.Join(dir, fmt.Sprintf("data%d", i), "sessions")) {
			convs[id] = true
		}
	}
	if len(convs) != 1 {
		t.Errorf("the replicas hold conversations %v, want one", slices.Sorted(maps.Keys(convs)))
	}

	count := func(query string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM sessions"); n != 1 {
		t.Errorf("the store holds %d sessions, want the conversation's one", n)
	}
	if n := count("SELECT count(*) FROM gateway_conversations"); n != 1 {
		t.Errorf("the store indexes %d conversations, want one", n)
	}
	archives := count("SELECT count(*) FROM session_files WHERE rel LIKE 'archive/tier%'")
	compresses := count(`SELECT count(*) FROM session_records WHERE position('"tool":"Compress","call_id"' in convert_from(line, 'UTF8')) > 0 AND position('"type":"tool-call"' in convert_from(line, 'UTF8')) > 0`)
	reads := count(`SELECT count(*) FROM session_records WHERE position('"tool":"read_archive","call_id"' in convert_from(line, 'UTF8')) > 0 AND position('"type":"tool-call"' in convert_from(line, 'UTF8')) > 0`)
	t.Logf("%d client requests, %d model requests, %d Compress calls, %d archives, %d read_archive calls", requests, len(up.Requests()), compresses, archives, reads)
	if compresses == 0 || archives == 0 {
		t.Errorf("got %d Compress calls and %d archives, want the conversation compressed", compresses, archives)
	}
	if reads == 0 {
		t.Error("no read_archive call: no question needed an archived fact")
	}
	// Every replica served the conversation; each model request ran under
	// the conversation's lock.
	rr.mu.Lock()
	served := append([]int(nil), rr.served...)
	rr.mu.Unlock()
	for i, n := range served {
		if n < requests/replicas {
			t.Errorf("replica %d served %d of %d requests, want its share", i, n, requests)
		}
	}
	for _, p := range procs {
		if strings.Contains(p.output(), "restored with a repair") {
			t.Errorf("%s repaired a session it fetched from the store:\n%s", p.name, p.output())
		}
	}
	if unlocked > 0 {
		t.Errorf("%d model requests arrived with no conversation lock held", unlocked)
	}

	// `mcproxy sessions` reads the conversation from the store.
	var conv string
	for id := range convs {
		conv = id
	}
	code, out, errOut := runBinary(t, time.Minute, "sessions", "list", "--config", configs[2])
	if code != 0 || !strings.Contains(out, conv) || !strings.Contains(out, "1 session(s)") || !strings.Contains(out, "postgres://") {
		t.Errorf("sessions list: exit %d, stdout %q, stderr %q; want the conversation, in the store", code, out, errOut)
	}
	code, out, errOut = runBinary(t, time.Minute, "sessions", "show", conv, "--config", configs[1])
	if code != 0 || !strings.Contains(out, "kept in") || !regexp.MustCompile(`blocks\s+[1-9]\d* active`).MatchString(out) {
		t.Errorf("sessions show: exit %d, stdout %q, stderr %q; want its active blocks", code, out, errOut)
	}
	code, out, errOut = runBinary(t, time.Minute, "sessions", "archive", conv, "b1", "--config", configs[0])
	if code != 0 || !strings.Contains(out, "/srv/logs/") {
		t.Errorf("sessions archive b1: exit %d, stdout %.200q, stderr %q; want the archived reads", code, out, errOut)
	}
	code, out, errOut = runBinary(t, time.Minute, "sessions", "prune", "--older-than", "1h", "--dry-run", "--config", configs[0])
	if code != 0 || !strings.Contains(out, "would remove 0 session(s)") {
		t.Errorf("sessions prune --dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
