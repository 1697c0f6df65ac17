package gateway

// runStream serves a streaming request (replaced below).
func (x *exchange) runStream() { x.fallback(errStreamPending) }

var errStreamPending = errorString("streaming projection not built yet")

type errorString string

func (e errorString) Error() string { return string(e) }
