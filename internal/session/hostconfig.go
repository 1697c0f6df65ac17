package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// HostConfigFile holds the noa configuration a session was opened with when
// its host was given one (HostOptions.Noa: a gateway conversation paced
// against its model's window). The transcript's Compress calls were checked
// under that configuration (the recent zone, the smallest range), so every
// later replay uses it too: a reopen, `mcproxy sessions show` and rebuild.
// Sessions opened with the shared Options have no such file.
const HostConfigFile = "noa.json"

// readHostConfig returns the configuration saved in dir, or nil when there
// is none.
func readHostConfig(dir string) (*noa.Config, error) {
	data, err := os.ReadFile(filepath.Join(dir, HostConfigFile))
	if notExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", HostConfigFile, err)
	}
	var cfg noa.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("reading %s: %w (delete it to replay with the current configuration)", HostConfigFile, err)
	}
	if cfg.ModelContextLimit <= 0 {
		return nil, fmt.Errorf("reading %s: no ModelContextLimit (delete it to replay with the current configuration)", HostConfigFile)
	}
	return &cfg, nil
}

// hostConfig settles the configuration of the host being opened in dir:
// the saved one when there is one (what its transcript was made under),
// else asked (saved first, so the session never exists without it), else
// nil for the shared Options. changed reports an asked configuration that
// differs from the saved one and was set aside.
func hostConfig(fsys FS, dir string, asked *noa.Config) (cfg *noa.Config, changed bool, err error) {
	saved, err := readHostConfig(dir)
	if err != nil {
		return nil, false, err
	}
	if saved != nil {
		if asked != nil {
			// The host's own rule cannot be saved; it stays the caller's.
			saved.IsToolProtected = asked.IsToolProtected
			a := *asked
			changed = !reflect.DeepEqual(withoutFunc(a), withoutFunc(*saved))
		}
		return saved, changed, nil
	}
	if asked == nil {
		return nil, false, nil
	}
	data, err := json.MarshalIndent(asked, "", "  ")
	if err != nil {
		return nil, false, fmt.Errorf("saving %s: %w", HostConfigFile, err)
	}
	if _, err := writeAtomic(fsys, filepath.Join(dir, HostConfigFile), append(data, '\n')); err != nil {
		return nil, false, fmt.Errorf("saving %s: %w", HostConfigFile, err)
	}
	return asked, false, nil
}

// withoutFunc is cfg without its function field, which DeepEqual cannot
// compare.
func withoutFunc(cfg noa.Config) noa.Config {
	cfg.IsToolProtected = nil
	return cfg
}
