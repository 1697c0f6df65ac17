package toon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// normalize maps a Go value onto the JSON data model as documented on
// Encode, building new values and leaving v untouched. The result holds only
// nil, bool, string, number, []any and Object.
func normalize(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return strings.ToValidUTF8(x, "\uFFFD"), nil
		}
		return x, nil
	case json.Number:
		s, err := canonicalNumber(string(x))
		if err != nil {
			return nil, err
		}
		return number(s), nil
	case number:
		return x, nil
	case int:
		return number(strconv.FormatInt(int64(x), 10)), nil
	case int8:
		return number(strconv.FormatInt(int64(x), 10)), nil
	case int16:
		return number(strconv.FormatInt(int64(x), 10)), nil
	case int32:
		return number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return number(strconv.FormatInt(x, 10)), nil
	case uint:
		return number(strconv.FormatUint(uint64(x), 10)), nil
	case uint8:
		return number(strconv.FormatUint(uint64(x), 10)), nil
	case uint16:
		return number(strconv.FormatUint(uint64(x), 10)), nil
	case uint32:
		return number(strconv.FormatUint(uint64(x), 10)), nil
	case uint64:
		return number(strconv.FormatUint(x, 10)), nil
	case float32:
		return floatNumber(float64(x), 32), nil
	case float64:
		return floatNumber(x, 64), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case Object:
		out := make(Object, len(x))
		seen := make(map[string]struct{}, len(x))
		for i, f := range x {
			if _, dup := seen[f.Key]; dup {
				return nil, fmt.Errorf("toon: object has duplicate key %q", f.Key)
			}
			seen[f.Key] = struct{}{}
			n, err := normalize(f.Value, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%w (under key %q)", err, f.Key)
			}
			out[i] = Field{Key: f.Key, Value: n}
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(Object, len(keys))
		for i, k := range keys {
			n, err := normalize(x[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%w (under key %q)", err, k)
			}
			out[i] = Field{Key: k, Value: n}
		}
		return out, nil
	case json.RawMessage:
		return parseJSON(x)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("toon: normalizing %T: %w", v, err)
		}
		return parseJSON(raw)
	}
}

// parseJSON reads exactly one JSON value, keeping object member order and
// number literals (made canonical). A key repeated within one object keeps
// its first position and its last value, as JSON.parse does.
func parseJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("toon: reading JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("more than one top-level value")
		}
		return nil, fmt.Errorf("toon: reading JSON: %w", err)
	}
	return v, nil
}

func readJSON(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		case '{':
			obj := Object{}
			var index map[string]int
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, not a string", kt)
				}
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if index == nil {
					index = make(map[string]int)
				}
				if i, dup := index[key]; dup {
					obj[i].Value = v
					continue
				}
				index[key] = len(obj)
				obj = append(obj, Field{Key: key, Value: v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return nil, err
		}
		return number(s), nil
	default: // nil, bool, string
		return t, nil
	}
}
