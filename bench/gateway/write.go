package gateway

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteReport writes report.json, report.md and report.svg into dir.
func WriteReport(dir string, rep *Report) error {
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the report directory: %w", err)
	}
	for name, body := range map[string][]byte{"report.json": js, "report.md": []byte(rep.Markdown()), "report.svg": []byte(rep.SVG())} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	return nil
}
