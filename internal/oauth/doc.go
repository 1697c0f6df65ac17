// Package oauth owns mcproxy's side of the MCP authorization spec
// (revision 2025-11-25, with the 2025-03-26 fallbacks) as a client of
// remote MCP servers: it reads 401 and 403 challenges, discovers the
// protected resource and authorization server metadata, registers the
// client (pre-registered credentials, a client ID metadata document, or
// dynamic registration), signs in with the authorization code grant, PKCE
// (S256) and the resource parameter through the user's browser and a
// loopback redirect, steps up scopes on insufficient_scope, refreshes
// tokens, and runs the client credentials grant for machine-to-machine
// servers. Tokens live in a Store: one file per server under a directory
// it is given, mode 0600 (Files), or internal/pgstore's, which replicas
// share; a refresh holds the store's lock, so that processes sharing it
// refresh once. Tokens never reach logs or errors. The token requests,
// PKCE and the authorization URL are golang.org/x/oauth2's; discovery,
// registration, the choice of scopes and client authentication, and when
// to refresh or sign in are mcproxy's.
//
// It plugs into an upstream's HTTP client as a RoundTripper (Client.Wrap);
// it does not speak MCP, and it decides nothing about reconnecting: it
// reports a server that needs a user with *SignInError and shows when new
// tokens appear (Client.Stamp).
//
// mcp-go's client transports have an OAuthHandler; it is not used here
// because it lacks what the spec's clients must do beyond the basic flow
// (scope selection from challenges, step-up, the root protected resource
// fallback, client ID metadata documents, client credentials, choosing the
// registration's auth method) and its strict issuer check rejects
// authorization servers whose issuer omits their tenant path.
package oauth
