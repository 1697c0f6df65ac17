package embed

import "go.uber.org/zap"

// available reports whether the provider may be called now. After a
// failure it rests for RetryInterval; then one caller gets to probe it and
// the rest wait another interval (or for that probe to succeed).
func (d *Dense) available() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.down {
		return true
	}
	now := d.opts.Now()
	if now.Before(d.retryAt) {
		return false
	}
	d.retryAt = now.Add(d.opts.RetryInterval)
	return true
}

// fail starts or extends an outage, logging only its start.
func (d *Dense) fail(err error) {
	d.mu.Lock()
	was := d.down
	d.down = true
	d.retryAt = d.opts.Now().Add(d.opts.RetryInterval)
	d.mu.Unlock()
	fields := []zap.Field{zap.String("embeddings", d.endpoint), zap.String("model", d.fp), zap.Error(err)}
	if !was {
		d.log.Warn("embedding provider failed; tool search uses BM25 alone until it answers again",
			append(fields, zap.Duration("retry_in", d.opts.RetryInterval))...)
		return
	}
	d.log.Debug("embedding provider still failing", fields...)
}

// succeed ends an outage, logging its end.
func (d *Dense) succeed() {
	d.mu.Lock()
	was := d.down
	d.down = false
	d.mu.Unlock()
	if was {
		d.log.Info("embedding provider answers again; dense search resumed",
			zap.String("embeddings", d.endpoint), zap.String("model", d.fp))
	}
}

func (d *Dense) warnCache(err error) {
	d.mu.Lock()
	warned := d.warned
	d.warned = true
	d.mu.Unlock()
	if !warned {
		d.log.Warn("cannot write the embeddings cache; vectors will be fetched again after a restart", zap.Error(err))
	}
}
