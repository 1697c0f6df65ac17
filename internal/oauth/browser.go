package oauth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// openWait is how long an opener command gets to exit before it is
// taken to have opened the page and left running.
const openWait = 10 * time.Second

// SystemOpener returns a function that opens a URL in the user's browser
// the way xdg-open does: each command in $BROWSER (colon-separated; %s is
// replaced by the URL, else the URL is appended) until one exits 0, else
// the platform's opener (xdg-open where there is a display, open on
// macOS, rundll32 on Windows). It returns nil when there is none, so the
// caller prints the URL instead.
func SystemOpener() func(ctx context.Context, url string) error {
	var cmds [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, entry := range strings.Split(b, ":") {
			if f := strings.Fields(entry); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	}
	switch runtime.GOOS {
	case "darwin":
		cmds = append(cmds, []string{"open"})
	case "windows":
		cmds = append(cmds, []string{"rundll32", "url.dll,FileProtocolHandler"})
	default:
		if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
			if _, err := exec.LookPath("xdg-open"); err == nil {
				cmds = append(cmds, []string{"xdg-open"})
			}
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	return func(ctx context.Context, u string) error {
		var errs []error
		for _, c := range cmds {
			args := make([]string, 0, len(c))
			replaced := false
			for _, a := range c[1:] {
				if strings.Contains(a, "%s") {
					a, replaced = strings.ReplaceAll(a, "%s", u), true
				}
				args = append(args, a)
			}
			if !replaced {
				args = append(args, u)
			}
			if err := runOpener(ctx, c[0], args); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c[0], err))
				continue
			}
			return nil
		}
		return errors.Join(errs...)
	}
}

// runOpener runs one opener and waits for it up to openWait; one still
// running then (a browser that stays in the foreground) counts as opened
// and is left to run on its own.
func runOpener(ctx context.Context, name string, args []string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	goroutine.Go(nil, "browser opener wait", func() { done <- cmd.Wait() }) // ends when the opener exits
	t := time.NewTimer(openWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
