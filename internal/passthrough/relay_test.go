package passthrough

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestRelayUnknownRequestState: a retry naming no parked call is refused
// with an error that says what to do (mcp-go's client cannot send one, so
// the relay is driven directly). A requestState not of the relay's form
// is an upstream's, and goes upstream (forwarding).
func TestRelayUnknownRequestState(t *testing.T) {
	r := newRelay(nil, zap.NewNop())
	var req mcp.CallToolRequest
	req.Params.RequestState = statePrefix + "nope"
	_, err := r.roundTrip(context.Background(), req, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t.Error("the handler ran for an unknown requestState")
		return nil, nil
	})
	if err == nil || !strings.Contains(err.Error(), "names no call waiting for input") || !strings.Contains(err.Error(), "send the call again without requestState") {
		t.Errorf("got %v", err)
	}
}

// TestRelayParkedExpires: a parked call whose client never retries is
// cancelled after the relay's TTL and forgotten; a late retry is told to
// start over.
func TestRelayParkedExpires(t *testing.T) {
	r := newRelay(nil, zap.NewNop())
	r.ttl = 100 * time.Millisecond
	ended := make(chan error, 1)
	next := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := ctx.Value(parkKey{}).(*parked)
		_, err := p.answer(ctx, mcp.NewRootsInputRequest(), mcp.MethodListRoots)
		ended <- ctx.Err()
		return nil, err
	}
	res, err := r.roundTrip(context.Background(), mcp.CallToolRequest{}, next)
	if err != nil || res.ResultType != mcp.ResultTypeInputRequired || res.RequestState == "" {
		t.Fatalf("first round: got %+v, %v; want an input_required result with a requestState", res, err)
	}
	if _, ok := res.InputRequests[inputKey]; !ok {
		t.Fatalf("first round asks %v, want the roots request under %q", res.InputRequests, inputKey)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the parked call ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked call was not cancelled after the TTL")
	}
	testenv.WaitFor(t, "the parked call to be forgotten", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.pending) == 0
	})
	var retry mcp.CallToolRequest
	retry.Params.RequestState = res.RequestState
	retry.Params.InputResponses = mcp.InputResponses{inputKey: mcp.NewRootsInputResponse(mcp.ListRootsResult{})}
	if _, err := r.roundTrip(context.Background(), retry, next); err == nil || !strings.Contains(err.Error(), "names no call waiting for input") {
		t.Errorf("late retry: got %v", err)
	}
}
