package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/learn"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }

// open opens a store on dsn, closed when the test ends.
func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestMigrateOnce: replicas starting at once on an empty database all
// open it, and each migration is applied by exactly one of them.
func TestMigrateOnce(t *testing.T) {
	dsn := testenv.Postgres(t)
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 4
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(context.Background(), dsn, Options{})
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("replica %d: Open: %v", i, errs[i])
		}
		t.Cleanup(s.Close)
		for _, v := range s.Applied() {
			count[v]++
		}
	}
	for _, m := range all {
		if count[m.version] != 1 {
			t.Errorf("migration %s applied %d times, want once", m.name, count[m.version])
		}
	}
	var rows int
	if err := stores[0].pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(all) {
		t.Errorf("got %d rows in schema_migrations, want %d", rows, len(all))
	}
	// A later start applies nothing.
	if got := open(t, dsn).Applied(); len(got) != 0 {
		t.Errorf("a restart applied %v, want nothing", got)
	}
}

// TestMigrateRefusesNewerSchema: a replica older than the schema says to
// upgrade instead of running on a schema it does not know.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	dsn := testenv.Postgres(t)
	s := open(t, dsn)
	if _, err := s.pool.Exec(context.Background(), "INSERT INTO schema_migrations (version, name) VALUES (9999, 'future.sql')"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dsn, Options{})
	if err == nil || !strings.Contains(err.Error(), "upgrade mcproxy") {
		t.Fatalf("got %v, want an error saying to upgrade mcproxy", err)
	}
}

// TestSecretsStayOut: the DSN's password appears in no error.
func TestSecretsStayOut(t *testing.T) {
	for _, dsn := range []string{
		"postgres://mcproxy:s3kr1t-pw@127.0.0.1:1/mcproxy?connect_timeout=2",
		"postgres://mcproxy:s3kr1t-pw@127.0.0.1:1/mcproxy?connect_timeout=x",
		"host=127.0.0.1 port=1 password=s3kr1t-pw connect_timeout=2",
		"postgres://mcproxy:s3kr1t-pw@[::1",
	} {
		_, err := Open(context.Background(), dsn, Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded, want an error", dsn)
		}
		if strings.Contains(err.Error(), "s3kr1t") {
			t.Errorf("Open's error shows the password: %v", err)
		}
	}
	if got, want := Redact("postgres://u:pw@db.example:5432/mc?sslmode=require"), "postgres://db.example:5432/mc"; got != want {
		t.Errorf("Redact: got %q, want %q", got, want)
	}
}

// heldReviewer reviews server's one tool with quarantine on, so it is
// held, through store; it does not poll (an hour), so only a notification
// can tell it of a change.
func heldReviewer(t *testing.T, st *integrity.Store) *integrity.Reviewer {
	t.Helper()
	r := integrity.NewReviewer(st, integrity.Options{Quarantine: func(string) bool { return true }, Poll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

var tool = mcp.Tool{Name: "echo", Description: "echoes", InputSchema: mcp.ToolInputSchema{Type: "object"}}

// TestApprovalReachesOtherReplicas: a tool held on one replica and
// approved through another is news to the first within a second, by
// notification (its poll is an hour away), and the approval is what it
// reads then.
func TestApprovalReachesOtherReplicas(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, b := open(t, dsn), open(t, dsn)
	stA := integrity.NewStoreWith(a.Approvals())
	ra := heldReviewer(t, stA)
	if held := ra.Review("srv", []mcp.Tool{tool}, nil); len(held["echo"]) == 0 {
		t.Fatalf("got held %v, want echo held (quarantine)", held)
	}
	stB := integrity.NewStoreWith(b.Approvals())
	start := time.Now()
	if _, err := stB.Update(func(ap *integrity.Approvals) (bool, error) {
		_, err := ap.Approve("srv", "", time.Now())
		return err == nil, err
	}); err != nil {
		t.Fatalf("approving through replica b: %v", err)
	}
	select {
	case <-ra.Changed():
		t.Logf("replica a heard of the approval after %v", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("replica a did not hear of the approval within a second")
	}
	if held := ra.Review("srv", []mcp.Tool{tool}, nil); len(held) != 0 {
		t.Errorf("after the approval replica a holds %v, want nothing", held)
	}
}

// TestApprovalsNoLostUpdate: replicas writing the approvals at once lose
// none of each other's writes (the row lock serialises them).
func TestApprovalsNoLostUpdate(t *testing.T) {
	dsn := testenv.Postgres(t)
	stores := []*integrity.Store{integrity.NewStoreWith(open(t, dsn).Approvals()), integrity.NewStoreWith(open(t, dsn).Approvals())}
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := stores[i%2].Update(func(ap *integrity.Approvals) (bool, error) {
				ap.Servers[fmt.Sprintf("srv%d", i)] = map[string]*integrity.Entry{}
				return true, nil
			})
			if err != nil {
				t.Errorf("update %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	ap, err := stores[0].Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(ap.Servers) != n {
		t.Errorf("got %d servers after %d concurrent updates, want %d", len(ap.Servers), n, n)
	}
}

// TestApprovalsUnchangedWritesNothing: an update that changes nothing
// leaves the stamp alone (no review storm on the other replicas), and fn's
// error comes back as it was.
func TestApprovalsUnchangedWritesNothing(t *testing.T) {
	st := integrity.NewStoreWith(open(t, testenv.Postgres(t)).Approvals())
	before := st.Path() // "" for the shared store
	if before != "" {
		t.Errorf("Path: got %q, want \"\" (no file)", before)
	}
	boom := errors.New("boom")
	if _, err := st.Update(func(*integrity.Approvals) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("got %v, want fn's error", err)
	}
	ap, err := st.Update(func(*integrity.Approvals) (bool, error) { return false, nil })
	if err != nil || ap == nil {
		t.Fatalf("got %v, %v; want the approvals", ap, err)
	}
}

// TestLock: a lock held on one replica makes another wait until it is
// released; another key does not wait.
func TestLock(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx := context.Background()
	unlock, err := a.Lock(ctx, "conversation:1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.Lock(ctx, "conversation:2")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "conversation:1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v while replica a holds the lock, want the wait to time out", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(ctx, "conversation:1")
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("replica b took the lock while a held it (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	unlock() // twice is harmless
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("replica b did not get the lock within 5s of its release")
	}
}

// TestLockDiesWithReplica: a replica that dies (its connection gone)
// loses its locks.
func TestLockDiesWithReplica(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx := context.Background()
	unlockA, err := a.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// Its connection is dead: unlocking closes it (Close waits for it).
	defer unlockA()
	// Kill a's sessions from outside, as a crash of its process would.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted"); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	unlock, err := b.Lock(wait, "k")
	if err != nil {
		t.Fatalf("got %v, want the dead replica's lock free", err)
	}
	unlock()
}

// TestLearnedShared: words taught on one replica reach another's Refresh.
func TestLearnedShared(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, err := learn.Open(learn.Options{Backend: open(t, dsn).Learned()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := learn.Open(learn.Options{Backend: open(t, dsn).Learned()})
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := a.Teach("srv:echo", []learn.Word{{Term: "parrot"}}); err != nil || !changed {
		t.Fatalf("Teach: changed %v, err %v; want changed", changed, err)
	}
	changed, err := b.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0] != "srv:echo" {
		t.Errorf("replica b's Refresh: got %v, want [srv:echo]", changed)
	}
	if got := b.Terms("srv:echo"); len(got) != 1 || got[0] != "parrot" {
		t.Errorf("replica b's Terms: got %v, want [parrot]", got)
	}
	if changed, _ := b.Refresh(); len(changed) != 0 {
		t.Errorf("a second Refresh: got %v, want nothing new", changed)
	}
}

// TestRevisions: the revisions document round-trips; none saved is nil.
func TestRevisions(t *testing.T) {
	s := open(t, testenv.Postgres(t)).Revisions()
	if got, err := s.LoadRevisions(); err != nil || got != nil {
		t.Fatalf("got %q, %v; want nil, nil", got, err)
	}
	for _, doc := range []string{`{"version":1,"servers":{}}`, `{"version":1,"servers":{"a":{"config":"k","protocol":"2025-06-18"}}}`} {
		if err := s.SaveRevisions([]byte(doc)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.LoadRevisions(); err != nil || string(got) != doc {
			t.Fatalf("got %q, %v; want %q", got, err, doc)
		}
	}
}

// TestLearnedNoLostUpdate: two replicas that both loaded the learned words
// and then teach keep each other's episodes (the document is updated under
// its row lock, not replaced with a replica's older copy).
func TestLearnedNoLostUpdate(t *testing.T) {
	dsn := testenv.Postgres(t)
	replicas := make([]*learn.Store, 2)
	for i := range replicas {
		st, err := learn.Open(learn.Options{Backend: open(t, dsn).Learned()})
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = st
	}
	var wg sync.WaitGroup
	for i, st := range replicas {
		wg.Go(func() {
			for j := range 10 {
				if _, err := st.Teach(fmt.Sprintf("srv:tool%d", j), []learn.Word{{Term: fmt.Sprintf("word%d", i)}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st, err := learn.Open(learn.Options{Backend: open(t, dsn).Learned()})
	if err != nil {
		t.Fatal(err)
	}
	got := st.List()
	for j := range 10 {
		if ev := got[fmt.Sprintf("srv:tool%d", j)]; len(ev) != 2 {
			t.Errorf("srv:tool%d: got %+v, want word0 and word1 (one from each replica)", j, ev)
		}
	}
}

// TestLocksLeaveStatementsAConnection: more locks than the pool allows
// (gateway turns in progress on one replica) do not starve statements: the
// lock past the budget fails with an error naming store.max_connections,
// a statement still runs, and a released lock makes room for the next.
func TestLocksLeaveStatementsAConnection(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	const maxConns = 8
	s, err := Open(context.Background(), dsn, Options{MaxConns: maxConns, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var unlocks []func()
	defer func() {
		for _, u := range unlocks {
			u()
		}
	}()
	var lerr error
	for i := range maxConns {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		unlock, err := s.Lock(ctx, fmt.Sprintf("conversation:%d", i))
		cancel()
		if err != nil {
			lerr = err
			break
		}
		unlocks = append(unlocks, unlock)
	}
	if want := maxConns - LockReserve(maxConns); int32(len(unlocks)) != want {
		t.Errorf("took %d locks before one failed, want %d (of %d connections)", len(unlocks), want, maxConns)
	}
	var le *LocksExhaustedError
	if !errors.As(lerr, &le) || !strings.Contains(lerr.Error(), "store.max_connections is 8") || !strings.Contains(lerr.Error(), "raise store.max_connections") {
		t.Errorf("the lock past the budget: got %v, want a *LocksExhaustedError naming store.max_connections and how to raise it", lerr)
	}
	if _, err := s.Approvals().Load(); err != nil {
		t.Errorf("a statement while the locks are all held: %v", err)
	}
	unlocks[0]()
	unlocks = unlocks[1:]
	unlock, err := s.Lock(context.Background(), "conversation:next")
	if err != nil {
		t.Fatalf("a lock after one was released: %v", err)
	}
	unlock()
}
