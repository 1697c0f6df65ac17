package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The host runs noa incrementally (noa.Engine); with Options.verify every
// turn is also computed by noa.ProcessTurn over the whole stream, and the
// views, nudges, refs and states must be equal. The scripts mix what a
// session meets: small and oversize (cut) results, a protected tool, user
// and reasoning messages, calls whose result never comes, turns with
// nothing new, Compress calls (good and bad) when noa nudges, and a reopen
// from disk halfway.
func TestHostEngineEqualsProcessTurn(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			opts := testOptions(t)
			opts.Noa.ProtectedTools = []string{"vault:*"}
			opts.Noa.Compress.MinCompressRange = 2000
			opts.verify = true
			h := openHost(t, opts, "s")
			rng := newRand(seed)
			ctx := context.Background()
			nudges, compressed, cuts := 0, 0, 0
			for step := 0; step < 160; step++ {
				if step == 80 {
					if err := h.Close(); err != nil {
						t.Fatal(err)
					}
					h = openHost(t, opts, "s")
				}
				var turn Turn
				switch k := rng.Intn(20); {
				case k < 10:
					turn = call(t, h, fmt.Sprintf("fs:read_%d", rng.Intn(5)), words(rng, 50+rng.Intn(600)))
				case k < 11:
					turn = call(t, h, "fs:read_big", words(rng, 4000)) // above MaxResultTokens: cut
					rec := turn.Recorded[0]
					if rec.Original == "" {
						t.Fatalf("step %d: a 4000-word result was not cut", step)
					}
					cuts++
					ref, ok := h.Ref(rec.ID)
					if !ok || !strings.Contains(rec.Text, fmt.Sprintf(`"ref":%q`, ref.Ref)) {
						t.Fatalf("step %d: the cut result's pointer does not name its ref %v (%v)", step, ref.Ref, ok)
					}
				case k < 12:
					turn = call(t, h, "vault:get", words(rng, 80))
				case k < 14:
					var err error
					turn, err = h.Turn(ctx, Message{CoreMessage: noa.CoreMessage{Role: noa.RoleUser, ContentType: noa.CTText, Text: words(rng, 30)}})
					if err != nil {
						t.Fatal(err)
					}
				case k < 15:
					var err error
					turn, err = h.Turn(ctx,
						Message{CoreMessage: noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTReasoning, Text: words(rng, 40)}},
						Message{CoreMessage: noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTText, Text: words(rng, 20)}})
					if err != nil {
						t.Fatal(err)
					}
				case k < 16:
					if _, err := h.Record(ctx, toolCall("fs:hang", []byte(`{"path":"/slow"}`))); err != nil {
						t.Fatal(err)
					}
					continue
				case k < 17:
					var err error
					if turn, err = h.Turn(ctx); err != nil {
						t.Fatal(err)
					}
				case k < 18:
					compress(t, h, []byte(`{"content": "everything"}`))
					continue
				default:
					turn = call(t, h, "fs:list", words(rng, 20))
				}
				if turn.Nudge != "" {
					nudges++
					if r := rangesOf(turn.Nudge); len(r) > 0 {
						if p := compress(t, h, compressArgs(r[:1])); len(p.Blocks) > 0 {
							compressed++
						}
					}
				}
				if m := h.verify.mismatches; len(m) > 0 {
					t.Fatalf("step %d: the engine and ProcessTurn differ:\n%s", step, strings.Join(m, "\n"))
				}
			}
			if nudges == 0 || compressed == 0 || cuts == 0 {
				t.Fatalf("the script met %d nudges, %d compressions and %d cuts; want some of each", nudges, compressed, cuts)
			}
		})
	}
}
