package dashboard

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The handler starts no goroutine of its own; the check keeps it so, and
// catches a request of the tests' that never ends.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
