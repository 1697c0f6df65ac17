package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Duration
		wantErr string
	}{
		{in: `"30s"`, want: Duration(30 * time.Second)},
		{in: `"1m30s"`, want: Duration(90 * time.Second)},
		{in: `"250ms"`, want: Duration(250 * time.Millisecond)},
		{in: `null`, want: 0},
		{in: `30`, wantErr: `want a duration string such as "30s" or "2m", got 30`},
		{in: `"30"`, wantErr: `invalid duration "30"`},
		{in: `"soon"`, wantErr: `invalid duration "soon"`},
		{in: `true`, wantErr: `want a duration string`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var got Duration
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDurationMarshalRoundTrip(t *testing.T) {
	for _, d := range []Duration{Duration(30 * time.Second), Duration(2 * time.Minute), Duration(1500 * time.Millisecond)} {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + d.Std().String() + `"`; string(b) != want {
			t.Errorf("Marshal(%v) = %s, want %s", d, b, want)
		}
		var back Duration
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != d {
			t.Errorf("round trip of %v gave %v", d, back)
		}
	}
}
