package index

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// mappingVersion changes whenever analysis changes in a way the mapping's
// JSON does not show (the code of identifierFilter, what goes into a field
// or into the persisted statistics). An on-disk index stamped with another
// version is rebuilt.
const mappingVersion = 6

// Field names. Every text field uses textAnalyzer, so one analysis of the
// query serves all of them.
const (
	fieldServer      = "server"      // keyword: exact server name, for per-server replace and delete
	fieldName        = "name"        // the tool name, identifier-split
	fieldDescription = "description" // the tool description
	fieldParams      = "params"      // parameter names and descriptions (see paramsText)
	fieldAll         = "all"         // server, name, description and params together
	fieldSyn         = "syn"         // synonym group ids of the "all" terms (see lexicon.synText)
	fieldLearned     = "learned"     // words learned from use (Options.Learned), already analyzed
)

// textFields are the analyzed fields, in a fixed order.
var textFields = []string{fieldName, fieldDescription, fieldParams, fieldAll}

// textAnalyzer, with DefaultFeatures: Unicode word segmentation,
// possessives dropped, identifiers split into words, lower case, CJK text as
// character pairs, English stop words removed, Snowball English stemming
// ("files", "filed" → "file").
const textAnalyzer = "mcproxy_text"

// synAnalyzer splits the synonym field at spaces: its tokens are group ids
// the index wrote itself, already final.
const synAnalyzer = "mcproxy_syn"

// analyzerFilters returns textAnalyzer's token filters for f, in order.
func analyzerFilters(f Features) []any {
	filters := []any{en.PossessiveName}
	if f.SplitIdentifiers {
		// Before lowercasing, which would erase camelCase boundaries.
		filters = append(filters, identifierFilterName)
	}
	filters = append(filters, lowercase.Name)
	if f.CJKBigrams {
		filters = append(filters, cjk.WidthName, cjk.BigramName)
	}
	if f.StopWords {
		filters = append(filters, en.StopName)
	}
	switch f.Stemmer {
	case "snowball":
		filters = append(filters, en.SnowballStemmerName)
	case "porter":
		filters = append(filters, porter.Name)
	}
	return filters
}

// newMapping returns the explicit, non-dynamic mapping: only the fields
// above are indexed, nothing is stored (hits need only the document id),
// and scoring is BM25 instead of Bleve's default TF-IDF.
func newMapping(f Features) (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	err := im.AddCustomAnalyzer(textAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": analyzerFilters(f),
	})
	if err != nil {
		return nil, fmt.Errorf("adding analyzer: %w", err)
	}
	{
		// The synonym and learned fields hold terms the index wrote itself.
		err := im.AddCustomAnalyzer(synAnalyzer, map[string]any{
			"type":          custom.Name,
			"tokenizer":     whitespace.Name,
			"token_filters": []any{},
		})
		if err != nil {
			return nil, fmt.Errorf("adding synonym analyzer: %w", err)
		}
	}
	im.DefaultAnalyzer = textAnalyzer
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false

	doc := bleve.NewDocumentStaticMapping()
	keywordField := bleve.NewKeywordFieldMapping()
	keywordField.Analyzer = keyword.Name
	keywordField.Store = false
	keywordField.IncludeInAll = false
	keywordField.DocValues = false
	doc.AddFieldMappingsAt(fieldServer, keywordField)
	for _, name := range textFields {
		doc.AddFieldMappingsAt(name, searchOnly(textAnalyzer))
	}
	if f.Synonyms {
		doc.AddFieldMappingsAt(fieldSyn, searchOnly(synAnalyzer))
	}
	doc.AddFieldMappingsAt(fieldLearned, searchOnly(synAnalyzer))
	im.DefaultMapping = doc
	if err := im.Validate(); err != nil {
		return nil, fmt.Errorf("validating mapping: %w", err)
	}
	return im, nil
}

// searchOnly is a text field analyzed with analyzer, indexed for search and
// nothing else: not stored, no term vectors, no doc values.
func searchOnly(analyzer string) *mapping.FieldMapping {
	f := bleve.NewTextFieldMapping()
	f.Analyzer = analyzer
	f.Store = false
	f.IncludeInAll = false
	f.IncludeTermVectors = false
	f.DocValues = false
	return f
}

// mappingStamp identifies the mapping and analysis code an index was built
// with: mappingVersion plus a hash of the mapping's JSON and of content, what
// goes into the fields that the mapping does not show (whether parameters
// are indexed, which synonym groups).
func mappingStamp(m mapping.IndexMapping, content string) (string, error) {
	data, err := json.Marshal(struct {
		Mapping mapping.IndexMapping
		Content string
	}{m, content})
	if err != nil {
		return "", fmt.Errorf("encoding mapping: %w", err)
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("v%d-%s", mappingVersion, hex.EncodeToString(sum[:8])), nil
}
