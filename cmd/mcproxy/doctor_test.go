package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestDoctorNeverPrintsAURLsPassword: an embeddings or gateway URL with a
// password in it is reported masked, reachable or not.
func TestDoctorNeverPrintsAURLsPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := closed.Addr().String()
	closed.Close()
	for _, addr := range []string{ln.Addr().String(), gone} {
		on := true
		cfg := &config.Config{Embeddings: config.EmbeddingsConfig{Enabled: &on, URL: "http://user:s3cret-pw@" + addr + "/v1"}}
		var out []check
		checkEmbeddings(context.Background(), cfg, func(c check) { out = append(out, c) })
		if len(out) != 1 {
			t.Fatalf("%s: got %d checks, want 1", addr, len(out))
		}
		if s := out[0].Detail; strings.Contains(s, "s3cret-pw") {
			t.Errorf("%s: the check prints the password: %q", addr, s)
		}
	}
}
