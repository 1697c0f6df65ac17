package importer

import (
	"bytes"
	"fmt"
	"slices"
)

// Restored is what Restore made of a client's file.
type Restored struct {
	// Data is the file to write; nil means remove it (the client had no
	// file before setup and has added nothing since).
	Data []byte
	// Verbatim: nothing but setup's change happened since, so Data is the
	// file from before setup byte for byte (comments included).
	Verbatim bool
	// Servers are the client's own servers put back, in file order.
	Servers []string
	// Kept are the top-level keys the client changed, added or removed
	// since setup, whose new state Data keeps, sorted; Added are servers
	// the client gained since, kept too.
	Kept, Added []string
	// Comments: the file as it is now has comments or trailing commas,
	// which Data does not keep.
	Comments bool
}

// Restore undoes PointAt (issue 30): before is the client's file as setup
// found it (empty = there was none), now is the file as the client left it
// since, having rewritten it at will (Claude Code keeps numStartups and
// project trust in it). The result is now with mcproxy's entry taken out
// and before's servers put back: whatever else changed since is kept, and
// a server the client gained since stays. When nothing else changed, the
// result is before byte for byte.
func Restore(before, now []byte) (*Restored, error) {
	old := stripJSONC(before)
	if len(bytes.TrimSpace(old)) == 0 {
		old = nil
	}
	cur := stripJSONC(now)
	r := &Restored{Comments: !bytes.Equal(cur, now)}
	if len(bytes.TrimSpace(cur)) == 0 {
		cur = []byte("{}") // the client removed its file: only before is left
	}
	curTop, err := members(cur)
	if err != nil {
		return nil, fmt.Errorf("reading the file as it is now: %w", err)
	}
	var oldTop []member
	if old != nil {
		if oldTop, err = members(old); err != nil {
			return nil, fmt.Errorf("reading the backup: %w", err)
		}
	}
	key := ServersKey(cur)
	if old != nil {
		key = ServersKey(old)
	}
	servers, err := serversOf(oldTop, key)
	if err != nil {
		return nil, fmt.Errorf("the backup's %s: %w", key, err)
	}
	for _, s := range servers {
		r.Servers = append(r.Servers, s.key)
	}
	since, err := serversOf(curTop, key)
	if err != nil {
		return nil, fmt.Errorf("%s as it is now: %w", key, err)
	}
	for _, s := range since {
		switch i := indexOf(servers, s.key); {
		case s.key == "mcproxy": // setup's entry; before's own "mcproxy", if any, is back already
		case i >= 0:
			servers[i] = s // the client's newer version of its own server
		default:
			servers = append(servers, s)
			r.Added = append(r.Added, s.key)
		}
	}

	// Now's keys in now's order, servers put back where they are now.
	out := slices.Clone(curTop)
	var raw []byte
	if len(servers) > 0 || indexOf(oldTop, key) >= 0 {
		if raw, err = encodeMembers(servers); err != nil {
			return nil, err
		}
	}
	switch i := indexOf(out, key); {
	case raw == nil && i >= 0:
		out = slices.Delete(out, i, i+1)
	case raw == nil:
	case i >= 0:
		out[i].raw = raw
	default:
		out = append(out, member{key: key, raw: raw})
	}
	for _, m := range curTop {
		if m.key == key {
			continue
		}
		if i := indexOf(oldTop, m.key); i < 0 || !sameJSON(oldTop[i].raw, m.raw) {
			r.Kept = append(r.Kept, m.key)
		}
	}
	for _, m := range oldTop {
		if m.key != key && indexOf(curTop, m.key) < 0 {
			r.Kept = append(r.Kept, m.key)
		}
	}
	slices.Sort(r.Kept)

	if old == nil && len(out) == 0 {
		return r, nil // no file before, nothing of the client's since
	}
	if r.Data, err = encodeMembers(out); err != nil {
		return nil, err
	}
	if old != nil && sameJSON(r.Data, old) {
		r.Data, r.Verbatim, r.Comments = bytes.Clone(before), true, false
	}
	return r, nil
}

// serversOf is the members of top's servers object under key (none when
// top has no such key).
func serversOf(top []member, key string) ([]member, error) {
	i := indexOf(top, key)
	if i < 0 {
		return nil, nil
	}
	return members(top[i].raw)
}
