package embedtest

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: Close
// stops the server and the requests it was serving.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
