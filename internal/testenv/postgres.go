package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresDSNEnv names a PostgreSQL server for the tests to use instead of
// starting one: a DSN whose user may create databases (each test gets a
// database of its own, dropped when it ends).
const PostgresDSNEnv = "MCPROXY_POSTGRES_DSN"

// RequirePostgresEnv, when set, makes a test that finds no PostgreSQL
// server fail rather than skip (scripts/test sets it after installing one).
const RequirePostgresEnv = "MCPROXY_REQUIRE_POSTGRES"

// pgServer is the one server a test process starts, on first use.
var pgServer struct {
	once    sync.Once
	mu      sync.Mutex
	dsn     string // admin DSN (database postgres)
	err     error  // why none could be started
	dir     string // temp dir of a started server; "" when external
	cmd     *exec.Cmd
	stopped bool
}

var pgSeq atomic.Int64

// Postgres is the DSN of a fresh, empty database on a real PostgreSQL
// server, dropped when the test ends. The server is PostgresDSNEnv's when
// set; otherwise one server per test process, started on first use from the
// distribution's binaries (initdb, postgres; Debian's postgresql package) in a
// temporary directory, listening on a free loopback port, and stopped by
// StopPostgres (VerifyNoLeaks calls it) or, failing that, when the test
// process exits. With no server to be had, the test skips saying how to get
// one, unless RequirePostgresEnv is set: then it fails.
func Postgres(t testing.TB) string {
	t.Helper()
	pgServer.once.Do(startPostgres)
	if pgServer.err != nil {
		msg := fmt.Sprintf("no PostgreSQL server: %v; install one (Debian: apt-get install -y postgresql) or set %s to a DSN whose user may create databases", pgServer.err, PostgresDSNEnv)
		if os.Getenv(RequirePostgresEnv) != "" {
			t.Fatalf("testenv: %s", msg)
		}
		t.Skipf("testenv: %s (skipped; %s=1 makes it fail)", msg, RequirePostgresEnv)
	}
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), pgSeq.Add(1), dbNamePart(t.Name()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pgAdmin(ctx, pgServer.dsn, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("testenv: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgAdmin(ctx, pgServer.dsn, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: dropping database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(pgServer.dsn, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dsn
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// dbNamePart is a test name made fit for a database name (at most 63
// bytes in all).
func dbNamePart(s string) string {
	s = nonIdent.ReplaceAllString(strings.ToLower(s), "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// withDatabase is dsn naming database db instead.
func withDatabase(dsn, db string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", PostgresDSNEnv)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// pgAdmin runs one statement on a connection of its own.
func pgAdmin(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func startPostgres() {
	if dsn := os.Getenv(PostgresDSNEnv); dsn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pgAdmin(ctx, dsn, "SELECT 1"); err != nil {
			pgServer.err = fmt.Errorf("%s is set but its server does not answer: %v", PostgresDSNEnv, err)
			return
		}
		pgServer.dsn = dsn
		return
	}
	pgServer.dsn, pgServer.err = startLocalPostgres()
}

// pgBinDir finds the directory holding initdb and postgres: PATH first,
// then Debian's /usr/lib/postgresql/<version>/bin, newest version first.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb is neither on PATH nor in /usr/lib/postgresql/*/bin")
}

func startLocalPostgres() (string, error) {
	bin, err := pgBinDir()
	if err != nil {
		return "", err
	}
	// PostgreSQL refuses to run as root: as root, run it as the postgres
	// user (the package creates it).
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("running as root and there is no postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "mcproxy-pg-")
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	// fsync off: a test database need not survive a crash of the machine.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-h", "127.0.0.1",
		"-p", strconv.Itoa(port), "-c", "fsync=off", "-c", "max_connections=200")
	cmd.SysProcAttr = pgSysProcAttr(cred)
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err == nil {
		cmd.Stdout, cmd.Stderr = logf, logf
		defer logf.Close()
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("starting postgres: %v", err)
	}
	pgServer.dir, pgServer.cmd = dir, cmd
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := pgAdmin(ctx, dsn, "SELECT 1")
		cancel()
		if err == nil {
			return dsn, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			StopPostgres()
			return "", fmt.Errorf("postgres did not answer within 30s: %v; its log: %s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StopPostgres stops the server Postgres started, if any, and removes its
// directory. VerifyNoLeaks calls it; a TestMain that does not use
// VerifyNoLeaks calls it after m.Run. Safe to call more than once.
func StopPostgres() {
	pgServer.mu.Lock()
	defer pgServer.mu.Unlock()
	if pgServer.cmd == nil || pgServer.stopped {
		return
	}
	pgServer.stopped = true
	// SIGINT is PostgreSQL's fast shutdown: it ends the sessions and exits.
	_ = pgServer.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = pgServer.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = pgServer.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(pgServer.dir)
}
