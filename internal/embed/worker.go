package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// pendingList returns the queued keys and texts in key order.
func (d *Dense) pendingList() (keys, texts []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys = make([]string, 0, len(d.pending))
	for k := range d.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	texts = make([]string, len(keys))
	for i, k := range keys {
		texts[i] = d.pending[k]
	}
	return keys, texts
}

// embedPending runs one embedding pass over the queue. Passes never
// overlap, so a tool is not sent twice because the worker and Sync raced.
// force skips the rest after a failure.
func (d *Dense) embedPending(ctx context.Context, force bool) error {
	d.fillMu.Lock()
	defer d.fillMu.Unlock()
	keys, texts := d.pendingList()
	if err := d.fill(ctx, keys, texts, force); err != nil {
		return fmt.Errorf("embedding tools for dense search: %w", err)
	}
	return nil
}

// fill finds vectors for keys: the disk cache first, then the provider in
// batches, storing each batch as it arrives.
func (d *Dense) fill(ctx context.Context, keys, texts []string, force bool) error {
	if d.cache != nil && len(keys) > 0 {
		var hitKeys, restKeys, restTexts []string
		var hitVecs [][]float32
		for i, k := range keys {
			if v, ok := d.cache.load(k); ok {
				hitKeys, hitVecs = append(hitKeys, k), append(hitVecs, v)
			} else {
				restKeys, restTexts = append(restKeys, k), append(restTexts, texts[i])
			}
		}
		d.put(hitKeys, hitVecs)
		keys, texts = restKeys, restTexts
	}
	if len(keys) == 0 {
		return nil
	}
	if !force && !d.available() {
		return fmt.Errorf("%d tools wait for the provider (BM25 still finds them): %w", len(keys), ErrUnavailable)
	}
	var rejected []string
	defer func() { d.logRejected(rejected) }()
	for start := 0; start < len(keys); start += d.opts.BatchSize {
		end := min(start+d.opts.BatchSize, len(keys))
		vecs, err := d.embed(ctx, texts[start:end])
		if refusesInput(err) {
			var r []string
			r, err = d.embedEach(ctx, keys[start:end], texts[start:end])
			rejected = append(rejected, r...)
			if err == nil {
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.fail(err)
			return fmt.Errorf("%d tools wait for the provider (BM25 still finds them): %w", len(keys)-start, err)
		}
		d.succeed()
		d.store(keys[start:end], vecs)
	}
	return nil
}

// embed calls the provider and checks the count.
func (d *Dense) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := d.emb.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	return vecs, err
}

// store normalizes vectors and keeps them in memory and on disk.
func (d *Dense) store(keys []string, vecs [][]float32) {
	for i := range vecs {
		vecs[i] = unit(vecs[i])
	}
	d.put(keys, vecs)
	if d.cache != nil {
		for i, v := range vecs {
			if err := d.cache.store(keys[i], v); err != nil {
				d.warnCache(err)
			}
		}
	}
}

// ShortTextBytes is the cut a tool text gets when the provider refuses it
// whole: about 250 tokens, inside the window of the smallest common models
// (512 tokens), and still the tool's name, server and the head of its
// description.
const ShortTextBytes = 1000

// embedEach handles a batch the provider refused as bad input (400, 413,
// 422): some text in it is too long for the model, or otherwise not to its
// liking. If a trivial input is refused too, the fault is the provider's
// setup (say, a model that does not take "dimensions"), an outage. Else each
// text goes alone, once more cut to ShortTextBytes if refused; a text
// refused even then is marked rejected and left to BM25 rather than tried
// again forever. It returns the rejected keys and, on an outage, the error.
func (d *Dense) embedEach(ctx context.Context, keys, texts []string) (rejected []string, err error) {
	if _, err := d.embed(ctx, []string{"test"}); err != nil {
		return nil, err
	}
	for i, text := range texts {
		vecs, err := d.embed(ctx, []string{text})
		if refusesInput(err) && len(text) > ShortTextBytes {
			vecs, err = d.embed(ctx, []string{truncate(text, ShortTextBytes)})
		}
		switch {
		case refusesInput(err):
			d.mu.Lock()
			if d.refs[keys[i]] > 0 {
				d.rejected[keys[i]] = true
				delete(d.pending, keys[i])
			}
			d.mu.Unlock()
			rejected = append(rejected, fmt.Sprintf("%q: %v", truncate(text, 60), err))
		case err != nil:
			return rejected, err
		default:
			d.store(keys[i:i+1], vecs)
		}
	}
	d.succeed()
	return rejected, nil
}

// refusesInput reports whether err is the provider refusing the input
// rather than failing.
func refusesInput(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

func (d *Dense) logRejected(rejected []string) {
	if len(rejected) > 0 {
		d.log.Warn("embedding provider refused some tool texts; BM25 alone finds those tools",
			zap.String("embeddings", d.endpoint), zap.String("model", d.fp),
			zap.Int("tools", len(rejected)), zap.String("first", rejected[0]))
	}
}

// put stores vectors for keys some doc still uses.
func (d *Dense) put(keys []string, vecs [][]float32) {
	if len(keys) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, k := range keys {
		if d.refs[k] > 0 {
			d.vecs[k] = vecs[i]
			delete(d.pending, k)
			d.snap = nil
		}
	}
}

// notify wakes the worker without blocking; a wake-up already pending
// covers this one.
func (d *Dense) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run is the worker: one embedding pass per wake-up, until Close.
func (d *Dense) run() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.wake:
		}
		d.work()
	}
}

func (d *Dense) work() {
	defer func() {
		if d.opts.afterWork != nil {
			d.opts.afterWork()
		}
	}()
	defer goroutine.Recover(d.log, "dense indexing", nil)
	// fill has logged any outage; other errors (a closed Dense, a resting
	// provider) need no word.
	if err := d.embedPending(d.ctx, false); err != nil && d.ctx.Err() == nil {
		d.log.Debug("dense indexing pass stopped", zap.Error(err))
	}
}
