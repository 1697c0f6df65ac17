package embed

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
)

// diskCache stores one unit vector per file under dir, named by its cache
// key (a hex SHA-256) and sharded by the key's first two characters:
// dir/ab/abcdef....vec. A file is
//
//	"MCPXVEC1" | dims uint32 | dims × float32 | CRC-32 (IEEE) of all before
//
// little-endian. Writes go to a temporary file renamed into place, so a
// reader never sees half a file; they are not fsynced, because a file
// damaged by a crash fails its length or checksum check, is treated as
// missing, and is embedded and written again.
type diskCache struct {
	dir string
}

var cacheMagic = []byte("MCPXVEC1")

// maxCacheDims rejects absurd headers before allocating.
const maxCacheDims = 1 << 16

func (c *diskCache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".vec")
}

// load returns the vector stored under key. ok is false when there is none
// or the file is damaged (a damaged file is left for store to replace).
func (c *diskCache) load(key string) (vec []float32, ok bool) {
	data, err := os.ReadFile(c.path(key))
	if err != nil || len(data) < len(cacheMagic)+8 || string(data[:len(cacheMagic)]) != string(cacheMagic) {
		return nil, false
	}
	dims := binary.LittleEndian.Uint32(data[len(cacheMagic):])
	if dims == 0 || dims > maxCacheDims || len(data) != len(cacheMagic)+4+int(dims)*4+4 {
		return nil, false
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, false
	}
	vec = make([]float32, dims)
	off := len(cacheMagic) + 4
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
		if f := float64(vec[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
	}
	return vec, true
}

// store writes vec under key atomically.
func (c *diskCache) store(key string, vec []float32) error {
	if len(vec) == 0 || len(vec) > maxCacheDims {
		return fmt.Errorf("caching a vector of %d dimensions: want 1 to %d", len(vec), maxCacheDims)
	}
	data := make([]byte, 0, len(cacheMagic)+4+4*len(vec)+4)
	data = append(data, cacheMagic...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(vec)))
	for _, x := range vec {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
	}
	data = binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(data))

	// A cache: a vector lost in a crash is computed again, so no fsync.
	if err := atomicfile.WriteFile(c.path(key), data, atomicfile.Options{NoSync: true}); err != nil {
		return fmt.Errorf("caching vector: %w", err)
	}
	return nil
}
