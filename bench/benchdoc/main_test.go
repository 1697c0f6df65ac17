package main

import "testing"

// Every unit the benchmarks report is shown as what it is: a time, a
// ratio, a size, a rate or a plain count.
func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{148000, "ns/op", "148 µs"},
		{11069, "state-ns/turn", "11.1 µs"},
		{807253, "always-ns/call", "807 µs"},
		{3520000, "retrieve_tools-ns/op", "3.52 ms"},
		{1.448, "always/off", "1.45×"},
		{0.72, "reserve/append", "0.72×"},
		{1583.92, "MB/s", "1584"},
		{215040, "B/op", "210 KiB"},
		{2628, "allocs/op", "2628"},
		{369, "resync-ms", "369"},
		{54.57, "on-rss-MB", "54.6"},
	} {
		if got := format(tc.v, tc.unit); got != tc.want {
			t.Errorf("format(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
