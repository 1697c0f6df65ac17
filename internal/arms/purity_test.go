package arms

import (
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestPurity keeps the package pure: its non-test files import only the
// standard library, internal/toon and internal/config, and nothing from the
// standard library that reaches the file system, the network, processes, the
// clock, randomness or logging.
func TestPurity(t *testing.T) {
	const module = "github.com/mcproxy/mcproxy/"
	allowedInternal := map[string]bool{module + "internal/toon": true, module + "internal/config": true}
	forbidden := []string{
		"os", "os/exec", "os/signal", "os/user", "io/fs", "io/ioutil", "path/filepath", "embed", "plugin",
		"net", "syscall", "time", "log", "log/slog", "math/rand", "math/rand/v2", "crypto/rand",
		"runtime", "runtime/debug", "unsafe", "internal/syscall", "go.uber.org/zap",
	}
	files := testenv.Imports(t, ".")
	for name, imports := range files {
		for _, path := range imports {
			first, _, _ := strings.Cut(path, "/")
			switch {
			case allowedInternal[path]:
			case strings.Contains(first, "."):
				t.Errorf("%s imports %s: arms may import only the standard library, internal/toon and internal/config", name, path)
			default:
				for _, bad := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s, which breaks the package's purity", name, path)
					}
				}
			}
		}
	}
	if len(files) < 5 {
		t.Fatalf("checked %d files, want the package's source files", len(files))
	}
}
