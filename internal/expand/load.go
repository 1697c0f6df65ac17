package expand

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the converted file's name under <data_dir>/embeddings.
const FileName = "wink-sg-100d.bin"

// DefaultPath is where `mcproxy embeddings build` writes the converted file
// and where mcproxy looks for it: <dataDir>/embeddings/wink-sg-100d.bin.
func DefaultPath(dataDir string) string {
	return filepath.Join(dataDir, "embeddings", FileName)
}

// ErrNotBuilt is returned by Load when the file does not exist: expansion
// is optional, so a caller typically logs a hint and searches without it.
var ErrNotBuilt = errors.New("embeddings file not built (run `mcproxy embeddings build`)")

// Load reads and checks a file written by Convert. A missing file wraps
// ErrNotBuilt; a damaged or foreign one is an error saying so.
func Load(path string) (*Vectors, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("loading embeddings %s: %w", path, ErrNotBuilt)
	}
	if err != nil {
		return nil, fmt.Errorf("loading embeddings: %w", err)
	}
	v, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("loading embeddings %s: %w", path, err)
	}
	return v, nil
}
