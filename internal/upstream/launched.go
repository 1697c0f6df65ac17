package upstream

// Launched is closed once Start has launched the connections: from then on
// Call waits for a server that is still connecting (up to its init
// timeout) instead of failing because the manager has not started. The
// front holds call_tool on it during a warm start.
func (m *Manager) Launched() <-chan struct{} { return m.started }
