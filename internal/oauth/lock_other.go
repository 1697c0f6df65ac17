//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package oauth

import "context"

// lockFile is a no-op where flock is missing: two processes refreshing
// the same token at once may then make one of them sign in again.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return func() {}, ctx.Err()
}
