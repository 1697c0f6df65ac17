package gateway

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteReport writes report.json, report.md and report.svg into dir, and
// charts/<run>.<window>.svg, one cost-per-turn chart per case.
func WriteReport(dir string, rep *Report) error {
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return fmt.Errorf("creating the report directory: %w", err)
	}
	files := map[string][]byte{"report.json": js, "report.md": []byte(rep.Markdown()), "report.svg": []byte(rep.SVG())}
	for _, c := range rep.Cases {
		files[filepath.Join("charts", fmt.Sprintf("%s.%d.svg", c.Trajectory, c.Window))] = []byte(Chart(c))
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	return nil
}
