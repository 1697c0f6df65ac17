package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// reloadDelay gathers the several events one save makes (an editor's
// write, rename and chmod) into one reload.
const reloadDelay = 300 * time.Millisecond

// reloader applies config file changes to a running proxy (issue 18): on a
// change to the file, or SIGHUP, it loads the file again and, when it is
// valid, hands its servers to the upstream manager, which starts, stops
// and restarts only what changed. A server whose entry has problems stops
// and shows as misconfigured while the others are applied (issue 30); a
// file with problems in mcproxy's own keys is refused with the error
// logged and kept for /status and the dashboard until a reload succeeds,
// and the running configuration stays. Settings other than
// the servers and their timeouts need a restart; a change to one is logged.
type reloader struct {
	path     string // absolute
	override func(*config.Config)
	mgr      interface {
		Reconfigure(*config.Config) upstream.Changes
	}
	log *zap.Logger
	// profiles, when set, applies each accepted config's profiles to the
	// HTTP profiles served (profileFronts.reconfigure); nil applies none.
	profiles func(*config.Config)

	running *config.Config
	// refused is set to the last refused reload, with its error masked
	// (it reaches /status, the dashboard and the meta tools' answers), and
	// to nil by one that succeeds.
	refused *atomic.Pointer[dashboard.RefusedReload]
}

// maxNoticeError caps the error a refused reload's notice quotes: it is
// added to every retrieve_tools answer.
const maxNoticeError = 300

// refusedNotice is the line the meta tools' answers carry while r (a
// refused reload, nil for none) holds: the model reads it and can tell a
// user who sees no dashboard or log (a stdio client) what happened and what
// to do. "" when r is nil.
func refusedNotice(r *dashboard.RefusedReload) string {
	if r == nil {
		return ""
	}
	reason := strings.TrimSuffix(strings.Join(strings.Fields(r.Error), " "), ".")
	if !strings.Contains(reason, r.Config) {
		reason = r.Config + ": " + reason
	}
	if runes := []rune(reason); len(runes) > maxNoticeError {
		reason = string(runes[:maxNoticeError-1]) + "…"
	}
	return "Tell the user: mcproxy refused the last change to its config file (" + reason + ") and still runs the previous config. " +
		"`mcproxy status` shows this; once the file is fixed and saved, mcproxy reloads it."
}

// run watches until ctx ends, reloading on each signal from hup too. It
// owns no goroutine besides fsnotify's.
func (r *reloader) run(ctx context.Context, hup <-chan os.Signal) {
	var events chan fsnotify.Event
	var errs chan error
	w, err := fsnotify.NewWatcher()
	if err == nil {
		// The folder, not the file: editors save by writing a new file and
		// renaming it over the old one, which a watch on the file loses.
		err = w.Add(filepath.Dir(r.path))
	}
	if err != nil {
		r.log.Warn("cannot watch the config file; reload it with SIGHUP", zap.String("config", r.path), zap.Error(err))
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading the config", zap.String("config", r.path))
			r.safeReload()
		case ev := <-events:
			if filepath.Clean(ev.Name) == r.path && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				timer.Reset(reloadDelay)
			}
		case err := <-errs:
			r.log.Warn("config watcher", zap.Error(err))
		case <-timer.C:
			r.safeReload()
		}
	}
}

// safeReload is reload with a panic logged (goroutine.Recover) rather than
// raised: the watcher goes on, so a later save is still picked up.
func (r *reloader) safeReload() {
	defer goroutine.Recover(r.log, "config reload", nil)
	r.reload()
}

// reload loads the file and applies it, or logs why not.
func (r *reloader) reload() {
	cfg, notes, err := loadConfigNotes(r.path, r.override)
	if errors.Is(err, fs.ErrNotExist) || (err != nil && !fileExists(r.path)) {
		r.log.Warn("the config file is gone; the running configuration stays", zap.String("config", r.path))
		return
	}
	if err != nil {
		r.log.Error("config change refused; the running configuration stays (fix the file and save it again)", zap.String("config", r.path), zap.Error(err))
		// Masked as the log is: the new file's values may be secrets.
		r.refused.Store(&dashboard.RefusedReload{Time: time.Now(), Config: r.path, Error: redactor(r.running, true).String(err.Error())})
		return
	}
	if r.refused.Swap(nil) != nil {
		r.log.Info("config fixed: the refused change is cleared", zap.String("config", r.path))
	}
	for _, n := range notes {
		r.log.Info("config note", zap.String("note", n))
	}
	logBroken(r.log, cfg)
	if later := restartOnly(r.running, cfg); len(later) > 0 {
		r.log.Warn("these settings take effect at the next restart; the servers were reloaded", zap.Strings("settings", later))
	}
	ch := r.mgr.Reconfigure(cfg)
	if r.profiles != nil {
		r.profiles(cfg)
	}
	if ch.Empty() {
		r.log.Info("config reloaded: the servers are unchanged", zap.String("config", r.path))
	}
	r.running = cfg
}

// restartOnly names the top-level settings that differ between a and b,
// other than the ones a reload applies (the servers and their timeouts).
func restartOnly(a, b *config.Config) []string {
	if a == nil {
		return nil
	}
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	var out []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "mcpServers", "init_timeout", "call_timeout", "profiles", "-", "":
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// watchConfig starts the reloader of a serving stack, which sets refused,
// and returns the function that stops it and waits for it.
func watchConfig(ctx context.Context, path string, override func(*config.Config), running *config.Config, st *stack, refused *atomic.Pointer[dashboard.RefusedReload], log *zap.Logger) (stop func()) {
	abs, err := filepath.Abs(config.ExpandHome(path))
	if err != nil {
		abs = config.ExpandHome(path)
	}
	r := &reloader{path: abs, override: override, mgr: st.mgr, log: log.Named("reload"), running: running, refused: refused,
		profiles: func(c *config.Config) {
			if pf := st.profiles.Load(); pf != nil {
				pf.reconfigure(c)
			}
		}}
	// Registered before serving starts, so a SIGHUP from then on reloads
	// rather than ending the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := goroutine.Go(r.log, "config reload", func() { r.run(ctx, hup) })
	return func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}
