package gateway

import (
	"fmt"
	"strings"
)

// SVG draws input tokens per client request, without the gateway and
// through it, with the model's window as a line (report.svg). Plain SVG,
// nothing to fetch.
func (r *Report) SVG() string {
	const (
		width, height = 960, 480
		left, right   = 90, 24
		top, bottom   = 70, 60
	)
	plotW, plotH := width-left-right, height-top-bottom
	maxY := r.Window
	for _, t := range r.Turns {
		maxY = max(maxY, t.Unmanaged, t.Forwarded)
	}
	maxY = niceCeil(maxY)
	n := max(len(r.Turns), 2)
	x := func(i int) float64 { return float64(left) + float64(plotW)*float64(i)/float64(n-1) }
	y := func(v int) float64 { return float64(top) + float64(plotH)*(1-float64(v)/float64(maxY)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	b.WriteString(`<text x="16" y="28" font-size="18" font-weight="bold">mcproxy bench gateway: input tokens per request</text>` + "\n")
	t := r.Totals
	fmt.Fprintf(&b, `<text x="16" y="48" fill="#555">%d requests · %.1f%% fewer tokens through the gateway · peak %d vs %d · prefix stable %.1f%% · %d of %d questions answered</text>`+"\n",
		t.Requests, t.SavingsPct, t.PeakForwarded, t.PeakUnmanaged, t.PrefixStablePct, t.Answered, t.Questions)

	// Grid and axes.
	for i := 0; i <= 5; i++ {
		v := maxY * i / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e2e8f0"/>`+"\n", left, y(v), width-right, y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-8, y(v)+4, short(v))
	}
	for i := 0; i <= 10; i++ {
		req := 1 + (n-1)*i/10
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%d</text>`+"\n", x(req-1), height-bottom+18, req)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">client request</text>`+"\n", left+plotW/2, height-bottom+38)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, top, left, height-bottom)

	// The window.
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e53e3e" stroke-dasharray="6 4"/>`+"\n", left, y(r.Window), width-right, y(r.Window))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#e53e3e">window %s (each model request)</text>`+"\n", width-right-4, y(r.Window)-6, short(r.Window))

	line := func(color string, v func(Turn) int) {
		var pts []string
		for i, turn := range r.Turns {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v(turn))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
	}
	line("#718096", func(t Turn) int { return t.Unmanaged })
	line("#38a169", func(t Turn) int { return t.Forwarded })

	// Legend.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="#718096"/><text x="%d" y="%d">without the gateway (what the client sends)</text>`+"\n", left+16, top+8, left+36, top+13)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="#38a169"/><text x="%d" y="%d">through the gateway (what the model reads; a request's hidden rounds summed)</text>`+"\n", left+16, top+26, left+36, top+31)
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, times 5 (five
// grid steps).
func niceCeil(v int) int {
	step := 1
	for step*5*10 <= v {
		step *= 10
	}
	for _, m := range []int{1, 2, 5, 10} {
		if step*m*5 >= v {
			return step * m * 5
		}
	}
	return step * 50
}

// short writes a token count as 950, 12K or 1.2M.
func short(v int) string {
	switch {
	case v >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(v)/1e6), ".0") + "M"
	case v >= 1000:
		return fmt.Sprintf("%dK", (v+500)/1000)
	}
	return fmt.Sprint(v)
}
