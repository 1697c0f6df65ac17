package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// progress says on w, every interval, which servers a one-shot command is
// still waiting for (issue 18: `mcproxy search` was silent while a slow
// server connected). It returns the function that stops it and waits.
func progress(w io.Writer, status func() []upstream.Status, interval time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(w, "mcproxy: progress report failed: %v\n", p)
			}
		}()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if line := waitingFor(status()); line != "" {
					fmt.Fprintf(w, "mcproxy: %s waited, still connecting: %s\n", time.Since(start).Round(time.Second), line)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// waitingFor names the servers still connecting, "" when none is.
func waitingFor(statuses []upstream.Status) string {
	var names []string
	for _, s := range statuses {
		if s.State == upstream.StateConnecting {
			names = append(names, s.Server)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
