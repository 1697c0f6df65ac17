package passthrough

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: the relay
// starts one per parked call, which its forget ends.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
