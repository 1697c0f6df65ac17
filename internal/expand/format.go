package expand

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sort"
)

// The converted file, all integers little-endian:
//
//	magic     [8]byte  "MCPXEMB1"
//	dims      uint32   vector dimensions (100)
//	count     uint32   number of terms
//	analysis  uint32 length + bytes: the Analysis the keys were made with
//	source    uint32 length + bytes: where the vectors came from
//	offsets   (count+1) × uint32: term i is terms[offsets[i]:offsets[i+1]]
//	terms     the terms, concatenated, strictly ascending byte order
//	ranks     count × uint32: the frequency rank of the term's most common word (0 = "the")
//	scales    count × float32: row i's component j is vectors[i*dims+j] × scales[i]
//	vectors   count × dims × int8: unit vectors quantized per row
//	crc       uint32   CRC-32C (Castagnoli) of every byte before it
//
// Rows are unit vectors quantized with a per-row scale (largest magnitude
// ↦ 127), which keeps cosine similarities within about 0.01 of the float
// originals at a quarter of the size. Sorted terms let lookups binary
// search the file's own bytes: loading is one read and a checksum, with no
// map to build.
const magic = "MCPXEMB1"

// maxDims bounds the header's dimension count, so a damaged header cannot
// make a reader allocate without limit.
const maxDims = 4096

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Vectors is a read-only table of unit vectors keyed by analyzed term. It is
// safe for concurrent use.
type Vectors struct {
	dims     int
	analysis string
	source   string
	offsets  []uint32
	terms    []byte
	ranks    []uint32
	scales   []float32
	vectors  []byte // int8 components, reinterpreted on read
}

// Len returns the number of terms.
func (v *Vectors) Len() int { return len(v.scales) }

// Dims returns the vector dimensions.
func (v *Vectors) Dims() int { return v.dims }

// Source returns the provenance recorded by Convert.
func (v *Vectors) Source() string { return v.source }

// term returns the i-th term without copying.
func (v *Vectors) term(i int) []byte { return v.terms[v.offsets[i]:v.offsets[i+1]] }

// Term returns the i-th term in ascending order.
func (v *Vectors) Term(i int) string { return string(v.term(i)) }

// index returns the row of term, or -1.
func (v *Vectors) index(term string) int {
	n := v.Len()
	i := sort.Search(n, func(i int) bool { return string(v.term(i)) >= term })
	if i < n && string(v.term(i)) == term {
		return i
	}
	return -1
}

// Rank returns the frequency rank of term's most common word in the
// source (0 is the most frequent word of English), or -1 for an unknown
// term. Very frequent words ("even", "like", "come") sit close to
// everything in embedding space, so expansion treats them with suspicion.
func (v *Vectors) Rank(term string) int {
	i := v.index(term)
	if i < 0 {
		return -1
	}
	return int(v.ranks[i])
}

// Vector writes term's unit vector into dst (len Dims) and reports whether
// the term is known.
func (v *Vectors) Vector(term string, dst []float32) bool {
	i := v.index(term)
	if i < 0 {
		return false
	}
	v.row(i, dst)
	return true
}

// row dequantizes row i into dst and renormalizes it to unit length.
func (v *Vectors) row(i int, dst []float32) {
	s := v.scales[i]
	q := v.vectors[i*v.dims : (i+1)*v.dims]
	var norm float64
	for j, x := range q {
		f := float32(int8(x)) * s
		dst[j] = f
		norm += float64(f) * float64(f)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for j := range dst {
			dst[j] *= inv
		}
	}
}

// entry is one row before encoding.
type entry struct {
	term string
	rank uint32
	vec  []float32 // unit length
}

// encode writes entries (sorted by term, unique) in the file format.
func encode(w io.Writer, dims int, source string, entries []entry) error {
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.WriteString(magic)
	buf.Write(le.AppendUint32(nil, uint32(dims)))
	buf.Write(le.AppendUint32(nil, uint32(len(entries))))
	for _, s := range []string{Analysis, source} {
		buf.Write(le.AppendUint32(nil, uint32(len(s))))
		buf.WriteString(s)
	}
	off := uint32(0)
	buf.Write(le.AppendUint32(nil, off))
	for i, e := range entries {
		if i > 0 && entries[i-1].term >= e.term {
			return fmt.Errorf("terms out of order: %q before %q", entries[i-1].term, e.term)
		}
		off += uint32(len(e.term))
		buf.Write(le.AppendUint32(nil, off))
	}
	for _, e := range entries {
		buf.WriteString(e.term)
	}
	for _, e := range entries {
		buf.Write(le.AppendUint32(nil, e.rank))
	}
	quant := make([]byte, 0, len(entries)*dims)
	for _, e := range entries {
		if len(e.vec) != dims {
			return fmt.Errorf("term %q has %d dimensions, want %d", e.term, len(e.vec), dims)
		}
		var maxAbs float32
		for _, x := range e.vec {
			maxAbs = max(maxAbs, float32(math.Abs(float64(x))))
		}
		scale := maxAbs / 127
		buf.Write(le.AppendUint32(nil, math.Float32bits(scale)))
		for _, x := range e.vec {
			q := 0.0
			if scale > 0 {
				q = math.Round(float64(x / scale))
			}
			quant = append(quant, byte(int8(max(-127, min(127, q)))))
		}
	}
	buf.Write(quant)
	buf.Write(le.AppendUint32(nil, crc32.Checksum(buf.Bytes(), castagnoli)))
	_, err := w.Write(buf.Bytes())
	return err
}

// errFormat prefixes every complaint about a damaged or foreign file.
var errFormat = errors.New("not an mcproxy embeddings file or damaged")

// Parse decodes a converted file held in data, which the result keeps
// referencing (no copy). It checks the checksum, the layout and the term
// order, and refuses a file keyed by another analysis.
func Parse(data []byte) (*Vectors, error) {
	le := binary.LittleEndian
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic", errFormat)
	}
	body, sum := data[:len(data)-4], le.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", errFormat)
	}
	r := reader{b: body[len(magic):]}
	dims, count := int(r.u32()), int(r.u32())
	analysisName, source := r.str(), r.str()
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, r.err)
	}
	if dims < 1 || dims > maxDims {
		return nil, fmt.Errorf("%w: %d dimensions", errFormat, dims)
	}
	if analysisName != Analysis {
		return nil, fmt.Errorf("embeddings file keyed by analysis %q, want %q: rebuild it with `mcproxy embeddings build`", analysisName, Analysis)
	}
	// Each term takes at least 4 (offset) + 4 (rank) + 4 (scale) + dims
	// bytes, so a count the body cannot hold is rejected before allocating.
	if count < 0 || count > len(r.b)/(12+dims) {
		return nil, fmt.Errorf("%w: %d terms do not fit in %d bytes", errFormat, count, len(r.b))
	}
	raw := r.take((count + 1) * 4)
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, r.err)
	}
	offsets := make([]uint32, count+1)
	for i := range offsets {
		offsets[i] = le.Uint32(raw[i*4:])
		if i > 0 && offsets[i] <= offsets[i-1] || i == 0 && offsets[0] != 0 {
			return nil, fmt.Errorf("%w: term offset %d out of order", errFormat, i)
		}
	}
	v := &Vectors{dims: dims, analysis: analysisName, source: source, offsets: offsets}
	v.terms = r.take(int(offsets[count]))
	rawRanks := r.take(count * 4)
	rawScales := r.take(count * 4)
	rawVecs := r.take(count * dims)
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, r.err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errFormat, len(r.b))
	}
	v.ranks = make([]uint32, count)
	for i := range v.ranks {
		v.ranks[i] = le.Uint32(rawRanks[i*4:])
	}
	v.scales = make([]float32, count)
	for i := range v.scales {
		v.scales[i] = math.Float32frombits(le.Uint32(rawScales[i*4:]))
		if f := float64(v.scales[i]); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return nil, fmt.Errorf("%w: bad scale for term %d", errFormat, i)
		}
	}
	v.vectors = rawVecs
	for i := 1; i < count; i++ {
		if bytes.Compare(v.term(i-1), v.term(i)) >= 0 {
			return nil, fmt.Errorf("%w: terms %d and %d out of order", errFormat, i-1, i)
		}
	}
	return v, nil
}

// reader consumes a byte slice, remembering the first shortfall.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("truncated: want %d bytes, have %d", n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) str() string {
	n := r.u32()
	if r.err == nil && n > 1<<16 {
		r.err = fmt.Errorf("header string of %d bytes", n)
		return ""
	}
	return string(r.take(int(n)))
}
