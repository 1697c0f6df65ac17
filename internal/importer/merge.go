package importer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Merged is what Merge did.
type Merged struct {
	// Data is the new config file.
	Data []byte
	// Added are the servers added; Same were there already, identical;
	// Clashes are names mcproxy's config already uses for a different
	// server (the config's own entry is kept).
	Added, Same, Clashes []string
}

// Merge adds servers to mcproxy's config file data (nil or empty = a new
// file). Every other key and every existing server is kept as it is.
func Merge(data []byte, servers []Server) (*Merged, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	top, err := members(data)
	if err != nil {
		return nil, fmt.Errorf("reading mcproxy's config: %w", err)
	}
	var list []member
	if i := indexOf(top, "mcpServers"); i >= 0 {
		if list, err = members(top[i].raw); err != nil {
			return nil, fmt.Errorf("mcpServers: %w", err)
		}
	}
	m := &Merged{}
	for _, s := range servers {
		raw, err := json.Marshal(s.Config)
		if err != nil {
			return nil, fmt.Errorf("encoding server %q: %w", s.Name, err)
		}
		if i := indexOf(list, s.Name); i >= 0 {
			if sameJSON(list[i].raw, raw) {
				m.Same = append(m.Same, s.Name)
			} else {
				m.Clashes = append(m.Clashes, s.Name)
			}
			continue
		}
		list = append(list, member{key: s.Name, raw: raw})
		m.Added = append(m.Added, s.Name)
	}
	if m.Data, err = setServers(data, "mcpServers", list); err != nil {
		return nil, err
	}
	return m, nil
}

// Remove drops server name from mcproxy's config file data.
func Remove(data []byte, name string) ([]byte, error) {
	top, err := members(data)
	if err != nil {
		return nil, fmt.Errorf("reading mcproxy's config: %w", err)
	}
	i := indexOf(top, "mcpServers")
	if i < 0 {
		return nil, fmt.Errorf("no server %q: the config has no mcpServers", name)
	}
	list, err := members(top[i].raw)
	if err != nil {
		return nil, fmt.Errorf("mcpServers: %w", err)
	}
	j := indexOf(list, name)
	if j < 0 {
		names := make([]string, len(list))
		for k, s := range list {
			names[k] = s.key
		}
		return nil, fmt.Errorf("no server %q in the config (it has %v)", name, names)
	}
	return setServers(data, "mcpServers", append(list[:j], list[j+1:]...))
}

// PointAt rewrites a client's file so its only server is entry, named
// "mcproxy"; every other key of the file is kept. For VS Code's dialect
// the entry gets "type": "stdio".
func PointAt(client []byte, entry config.ServerConfig) ([]byte, error) {
	plain := stripJSONC(client)
	if len(bytes.TrimSpace(plain)) == 0 {
		plain = []byte("{}")
	}
	key := ServersKey(plain)
	if key == "servers" {
		entry.Type = "stdio"
	}
	raw, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	return setServers(plain, key, []member{{key: "mcproxy", raw: raw}})
}

func setServers(data []byte, key string, list []member) ([]byte, error) {
	obj, err := encodeMembers(list)
	if err != nil {
		return nil, err
	}
	return setMember(data, key, obj)
}

func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x.Bytes(), &u) != nil || json.Unmarshal(y.Bytes(), &v) != nil {
		return false
	}
	ub, _ := json.Marshal(u)
	vb, _ := json.Marshal(v)
	return bytes.Equal(ub, vb)
}
