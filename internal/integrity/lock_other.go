//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package integrity

// lockFile does nothing where there is no flock: run one mcproxy and one
// `mcproxy tools approve` at a time there.
func lockFile(string) (func(), error) { return func() {}, nil }
