package upstream

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A masked error keeps its chain (isConnErr and callers' errors.As still
// work) while its text loses the URL's token and the config's header value.
func TestMaskKeepsChain(t *testing.T) {
	m := New(&config.Config{MCPServers: map[string]config.ServerConfig{
		"r": {URL: "http://127.0.0.1:1/mcp?api_key=QTOKEN-123", Headers: map[string]string{"X-Api-Key": "HDR-SECRET-9"}},
	}}, Options{})
	defer m.Close()
	raw := transport.NewError(&url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp?api_key=QTOKEN-123", Err: errors.New("refused; key HDR-SECRET-9")})
	err := m.mask(raw)
	if !isConnErr(err) {
		t.Error("the masked error is no longer a transport error")
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Error("the masked error lost its *url.Error")
	}
	for _, s := range []string{"QTOKEN-123", "HDR-SECRET-9"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("masked text %q holds %q", err.Error(), s)
		}
	}
	if !strings.Contains(err.Error(), "api_key=[REDACTED]") {
		t.Errorf("masked text %q, want the query value masked", err.Error())
	}
	if plain := errors.New("no secret here"); m.mask(plain) != plain {
		t.Error("an error without secrets was wrapped")
	}
}
