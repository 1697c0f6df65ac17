package config

import (
	"reflect"
	"slices"
)

// foreignKeys are the keys of other MCP clients' config files that mcproxy
// accepts in its own (issue 18: a real claude_desktop_config.json or a
// Cline settings file pasted in whole must load). Top-level keys belong to
// the client itself; server keys steer the client's approval and timeout
// behaviour, which mcproxy does not have. Each one found is noted, never
// silently dropped. "disabled" is not here: it means "enabled": false.
var foreignKeys = struct{ TopLevel, Server []string }{
	TopLevel: []string{"$schema", "globalShortcut", "preferences"},
	Server:   []string{"alwaysAllow", "autoApprove", "description", "timeout", "transportType"},
}

var serverConfigType = reflect.TypeOf(ServerConfig{})

// foreign handles the i'th key of obj, decoded into v, when it belongs to
// another client's file, reporting whether it did.
func (d *decoder) foreign(v reflect.Value, obj *node, i int, path string) bool {
	k := obj.keys[i]
	switch v.Type() {
	case reflect.TypeOf(Config{}):
		if slices.Contains(foreignKeys.TopLevel, k) {
			d.notes = append(d.notes, path+": another client's setting, ignored")
			return true
		}
	case serverConfigType:
		if k == "disabled" {
			d.decodeDisabled(obj, obj.vals[i], v, path)
			return true
		}
		if slices.Contains(foreignKeys.Server, k) {
			d.notes = append(d.notes, path+": "+serverKeyNote[k])
			return true
		}
	}
	return false
}

var serverKeyNote = map[string]string{
	"alwaysAllow":   "ignored (mcproxy has no approval list; your client still asks before each call)",
	"autoApprove":   "ignored (mcproxy has no approval list; your client still asks before each call)",
	"description":   "ignored",
	"timeout":       `ignored (set "call_timeout", e.g. "60s", to bound each call)`,
	"transportType": `ignored (mcproxy tells stdio from a URL by itself; "transport": "sse" picks legacy SSE)`,
}

// decodeDisabled maps Cline's and Windsurf's "disabled": true onto
// Enabled = false; given together with "enabled" the two must agree.
func (d *decoder) decodeDisabled(obj, n *node, v reflect.Value, path string) {
	if n.kind == 'z' {
		return
	}
	if n.kind != 'b' {
		d.fail(path, "want true or false, got %s", n.kindName())
		return
	}
	if j := slices.Index(obj.keys, "enabled"); j >= 0 {
		if e := obj.vals[j]; e.kind == 'b' && e.b == n.b {
			d.fail(path, `contradicts "enabled" (keep one of the two)`)
		}
		return // "enabled" is decoded on its own
	}
	enabled := !n.b
	v.FieldByName("Enabled").Set(reflect.ValueOf(&enabled))
}
