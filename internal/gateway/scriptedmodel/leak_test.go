package scriptedmodel_test

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: Close
// ends every request's handler, connection and the accept loop.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
