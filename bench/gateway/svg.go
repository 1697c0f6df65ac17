package gateway

import (
	"fmt"
	"math"
	"strings"
)

// policyColors are the lines' colours, in Policies order.
var policyColors = []string{"#718096", "#38a169", "#dd6b20", "#d53f8c", "#3182ce"}

// SVG draws the report's headline case (the long session, else the first
// case): cost per client turn, each policy a line (report.svg).
func (r *Report) SVG() string {
	if len(r.Cases) == 0 {
		return Chart(Case{})
	}
	c := r.Cases[0]
	for _, x := range r.Cases {
		if x.Session {
			c = x
		}
	}
	return Chart(c)
}

// Chart draws one case's cost per client turn, each policy a line, a
// turn's hidden rounds and summary requests included. Plain SVG, nothing
// to fetch.
func Chart(c Case) string {
	const (
		width, height = 960, 480
		left, right   = 90, 24
		top, bottom   = 70, 60
	)
	plotW, plotH := width-left-right, height-top-bottom
	maxY := 0.0
	n := 2
	for _, p := range c.Policies {
		n = max(n, len(p.TurnCostUSD))
		for _, v := range p.TurnCostUSD {
			maxY = math.Max(maxY, v)
		}
	}
	maxY = niceCeilUSD(maxY)
	x := func(i int) float64 { return float64(left) + float64(plotW)*float64(i)/float64(n-1) }
	y := func(v float64) float64 { return float64(top) + float64(plotH)*(1-v/maxY) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="16" y="28" font-size="18" font-weight="bold">mcproxy bench gateway: cost per turn, %s at a %s window</text>`+"\n", xmlEscape(c.Trajectory), short(c.Window))
	var totals []string
	for _, p := range c.Policies {
		totals = append(totals, fmt.Sprintf("%s %.4f USD", p.Name, p.CostUSD))
	}
	fmt.Fprintf(&b, `<text x="16" y="48" fill="#555">%s</text>`+"\n", xmlEscape(strings.Join(totals, " · ")))

	for i := 0; i <= 5; i++ {
		v := maxY * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e2e8f0"/>`+"\n", left, y(v), width-right, y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">$%.4g</text>`+"\n", left-8, y(v)+4, v)
	}
	for i := 0; i <= 10; i++ {
		turn := 1 + (n-1)*i/10
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%d</text>`+"\n", x(turn-1), height-bottom+18, turn)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">client turn</text>`+"\n", left+plotW/2, height-bottom+38)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a5568"/>`+"\n", left, top, left, height-bottom)

	for i, p := range c.Policies {
		var pts []string
		for k, v := range p.TurnCostUSD {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(k), y(v)))
		}
		color := policyColors[i%len(policyColors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		label := p.Name
		if p.OverWindow > 0 {
			label += fmt.Sprintf(" (%d requests over the window)", p.OverWindow)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			left+16, top+8+18*i, color, left+36, top+13+18*i, xmlEscape(label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// niceCeilUSD rounds v up to 1, 2 or 5 times a power of ten (a small
// positive floor when v is 0).
func niceCeilUSD(v float64) float64 {
	if v <= 0 {
		return 0.001
	}
	step := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step*m >= v {
			return step * m
		}
	}
	return step * 10
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
