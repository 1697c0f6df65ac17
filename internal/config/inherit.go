package config

import "encoding/json"

// InheritEnv says which of mcproxy's own environment variables a stdio
// server inherits besides the minimal set every child gets (the search
// path, the user's home and name, locale, temporary directory, terminal and
// shell: see upstream's minimal list). In the config file it is `true`
// (inherit everything, as before this option existed) or a list of names
// (`["AWS_PROFILE", "HTTPS_PROXY"]`); absent or `false` inherits only the
// minimal set, so a secret given to one server, or held by mcproxy's own
// environment, never reaches another server. The server's own `env` is
// always added on top.
type InheritEnv struct {
	// All inherits mcproxy's whole environment.
	All bool
	// Names are extra variables to inherit when set in mcproxy's
	// environment.
	Names []string
}

// MarshalJSON writes the form the config file takes.
func (e InheritEnv) MarshalJSON() ([]byte, error) {
	if len(e.Names) > 0 {
		return json.Marshal(e.Names)
	}
	return json.Marshal(e.All)
}
