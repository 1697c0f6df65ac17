package gateway

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: a run
// closes the scripted model, the front, the gateway and the session
// manager it started before it returns.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
