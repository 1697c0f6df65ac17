package mcptransport

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: every
// goroutine the package starts has an owner whose Close ends it.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
