package main

import (
	"os"
	"reflect"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// unsetMarker stands in for a ${VAR} that is not set when the sessions CLI
// loads the config: it reads only data_dir, tokenizer and noa, so a
// server's token missing from this shell is no reason to refuse.
const unsetMarker = "MCPROXY-UNSET-VARIABLE-"

// loadSessionsConfig loads the config for `mcproxy sessions`: as serve
// does, except that ${VAR} references left unset are tolerated outside the
// keys the CLI reads (data_dir, tokenizer, noa). One of those unset, or any
// other problem, gets the usual error.
func loadSessionsConfig(path string) (*config.Config, error) {
	cfg, strictErr := loadConfig(path, func(*config.Config) {})
	if strictErr == nil {
		return cfg, nil
	}
	data, err := os.ReadFile(config.ExpandHome(path))
	if err != nil {
		return nil, strictErr
	}
	cfg, err = config.Parse(data, func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		return unsetMarker + name, true
	})
	if err != nil || strings.Contains(cfg.DataDir, unsetMarker) || strings.Contains(cfg.Tokenizer, unsetMarker) ||
		holdsString(reflect.ValueOf(cfg.Noa), unsetMarker) {
		return nil, strictErr
	}
	return cfg, nil
}

// holdsString reports whether any string within v contains s.
func holdsString(v reflect.Value, s string) bool {
	switch v.Kind() {
	case reflect.String:
		return strings.Contains(v.String(), s)
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && holdsString(v.Elem(), s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && holdsString(v.Field(i), s) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsString(v.Index(i), s) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsString(it.Key(), s) || holdsString(it.Value(), s) {
				return true
			}
		}
	}
	return false
}
