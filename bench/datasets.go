package bench

import (
	"embed"
	"fmt"
	"io/fs"
	"os"

	"github.com/mcproxy/mcproxy/internal/arms"
)

// The frozen datasets live in the repository under bench/datasets (the
// LiveMCPTool snapshot with its ATTRIBUTION.md, Apache-2.0) and are compiled
// into the binary, so `mcproxy bench` measures them from any directory, with
// nothing beside the clone. A directory given by --datasets or
// $MCPROXY_DATASETS replaces them.
//
//go:embed datasets
var embedded embed.FS

// DatasetsEnv names the environment variable that points the profiler at
// another frozen-dataset directory.
const DatasetsEnv = "MCPROXY_DATASETS"

// Frozen corpus and fixture paths inside the datasets directory.
const (
	CorpusV2File       = "corpus_v2.tools.json"
	LiveMCPToolFile    = "livemcptool_snapshot/tools.json"
	ResultFixturesFile = "result_fixtures_v1.json"
)

// Datasets is where the frozen corpora and result fixtures are read from.
type Datasets struct {
	fsys fs.FS
	// Where names the source for messages: a directory, or "built in".
	Where string
}

// OpenDatasets resolves the frozen datasets: the directory flagValue when
// set, else $MCPROXY_DATASETS, else the copy built into the binary.
func OpenDatasets(flagValue string, getenv func(string) string) Datasets {
	dir := flagValue
	if dir == "" {
		dir = getenv(DatasetsEnv)
	}
	if dir != "" {
		return Datasets{fsys: os.DirFS(dir), Where: dir}
	}
	sub, err := fs.Sub(embedded, "datasets")
	if err != nil {
		panic(err) // "datasets" is a valid path: fs.Sub cannot fail on it
	}
	return Datasets{fsys: sub, Where: "built in"}
}

// Corpus loads the frozen corpus file (CorpusV2File, LiveMCPToolFile) under
// the report name name.
func (d Datasets) Corpus(file, name string) (*Corpus, error) {
	data, err := fs.ReadFile(d.fsys, file)
	if err != nil {
		return nil, fmt.Errorf("reading corpus %s from the datasets (%s): %w", file, d.Where, err)
	}
	c, err := ParseCorpus(name, data)
	if err != nil {
		return nil, fmt.Errorf("corpus %s (%s): %w", file, d.Where, err)
	}
	return c, nil
}

// ResultFixtures loads the result fixtures behind the toon_results rows.
func (d Datasets) ResultFixtures() (*arms.ResultFixtureSet, error) {
	data, err := fs.ReadFile(d.fsys, ResultFixturesFile)
	if err != nil {
		return nil, fmt.Errorf("reading result fixtures from the datasets (%s): %w", d.Where, err)
	}
	set, err := arms.ParseResultFixtures(data)
	if err != nil {
		return nil, fmt.Errorf("result fixtures %s (%s): %w", ResultFixturesFile, d.Where, err)
	}
	return set, nil
}
