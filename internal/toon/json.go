package toon

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MarshalJSON renders the object as a JSON object with its fields in order,
// so an Object nested in other Go values keeps its shape through encoding/json.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("marshaling field %q: %w", f.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object keeping member order; nested objects
// become Object and numbers json.Number in canonical form.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := parseJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(Object)
	if !ok {
		return fmt.Errorf("toon: JSON value is not an object")
	}
	*o = toPublic(obj).(Object)
	return nil
}

// toPublic converts a normalized value into the public representation used
// by Decode: the internal number type becomes json.Number.
func toPublic(v any) any {
	switch x := v.(type) {
	case number:
		return json.Number(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toPublic(e)
		}
		return out
	case Object:
		out := make(Object, len(x))
		for i, f := range x {
			out[i] = Field{Key: f.Key, Value: toPublic(f.Value)}
		}
		return out
	default:
		return v
	}
}
