//go:build !unix

package mcptransport

import "io"

// pollable is in: only Unix descriptors are switched to the poller.
func pollable(in io.Reader) io.Reader { return in }
