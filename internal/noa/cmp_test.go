package noa

import "github.com/google/go-cmp/cmp"

func cmpDiff(a, b any) string {
	return cmp.Diff(a, b, cmp.AllowUnexported(ProtectedRange{}))
}
