package toon

import "strings"

// Path expansion (spec §13.4, "safe" mode) runs after parsing, over the
// decoded tree: an unquoted key such as "a.b.c" whose segments are all
// identifiers becomes nested objects, merged deeply with whatever the same
// object already holds. Where an object and a non-object meet, strict mode
// fails and lenient mode lets the later line win.

func (d *decoder) expandValue(v any) (any, error) {
	switch x := v.(type) {
	case *objBuilder:
		return d.expandObject(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := d.expandValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return v, nil
}

func (d *decoder) expandObject(src *objBuilder) (*objBuilder, error) {
	out := newObject()
	for i, f := range src.fields {
		v, err := d.expandValue(f.Value)
		if err != nil {
			return nil, err
		}
		if segs := expandable(f.Key, src.quoted[i]); segs != nil {
			err = d.insertPath(out, segs, v)
		} else {
			err = d.put(out, f.Key, v, f.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expandable returns the segments of a key eligible for expansion, or nil.
func expandable(key string, quoted bool) []string {
	if quoted || !strings.Contains(key, ".") {
		return nil
	}
	segs := strings.Split(key, ".")
	for _, s := range segs {
		if !isIdentifierSegment(s) {
			return nil
		}
	}
	return segs
}

// insertPath stores v under the nested path segs of target.
func (d *decoder) insertPath(target *objBuilder, segs []string, v any) error {
	cur := target
	for i, s := range segs[:len(segs)-1] {
		if j, ok := cur.index[s]; ok {
			if next, isObj := cur.fields[j].Value.(*objBuilder); isObj {
				cur = next
				continue
			}
			if d.cfg.strict {
				return &SyntaxError{Msg: "path expansion conflict at " + strings.Join(segs[:i+1], ".") + ": an object is needed where a value already is"}
			}
			next := newObject()
			cur.fields[j].Value = next
			cur = next
			continue
		}
		next := newObject()
		cur.index[s] = len(cur.fields)
		cur.fields = append(cur.fields, Field{Key: s, Value: next})
		cur.quoted = append(cur.quoted, false)
		cur = next
	}
	return d.put(cur, segs[len(segs)-1], v, strings.Join(segs, "."))
}

// put stores key: v in target, merging two objects deeply and resolving any
// other clash per strictness. path names the key in error messages.
func (d *decoder) put(target *objBuilder, key string, v any, path string) error {
	j, ok := target.index[key]
	if !ok {
		target.index[key] = len(target.fields)
		target.fields = append(target.fields, Field{Key: key, Value: v})
		target.quoted = append(target.quoted, false)
		return nil
	}
	old, oldObj := target.fields[j].Value.(*objBuilder)
	src, newObj := v.(*objBuilder)
	if oldObj && newObj {
		for _, f := range src.fields {
			if err := d.put(old, f.Key, f.Value, path+"."+f.Key); err != nil {
				return err
			}
		}
		return nil
	}
	if d.cfg.strict {
		return &SyntaxError{Msg: "path expansion conflict at " + path + ": " + kind(target.fields[j].Value) + " and " + kind(v) + " cannot be merged"}
	}
	target.fields[j].Value = v
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case *objBuilder:
		return "an object"
	case []any:
		return "an array"
	}
	return "a primitive"
}
