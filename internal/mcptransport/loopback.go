package mcptransport

import "net/netip"

// IsLoopback reports whether host (a name or IP without port; IPv6 may keep
// its brackets) is this machine's loopback: "localhost" in any case,
// 127.0.0.0/8, ::1, or an IPv4 loopback mapped into IPv6
// (::ffff:127.0.0.1). The listen check in cmd/mcproxy and the Host/Origin
// guard both ask it, so an address one calls local the other does too.
func IsLoopback(host string) bool {
	host = normalizeHost(host)
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
