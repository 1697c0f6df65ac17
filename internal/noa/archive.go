package noa

import (
	"fmt"
	"strings"
)

// Archiver is the host's side of archiving. It exists so noa can choose and
// format what gets saved while staying free of file I/O; the host picks the
// location and writes.
type Archiver interface {
	// Write saves one block's archive and reports both its absolute path and
	// its path under the archive root. Implementations must write all or
	// nothing: a truncated file behind a block's pointer is a broken promise.
	Write(tier Tier, blockID, startRef, endRef string, content []byte) (abs, rel string, err error)
	// Remove undoes a Write when a later step of the same call fails.
	Remove(abs string) error
}

// ArchiveFileName names an archive file, e.g. "b3_m00001-m00040.md". The
// block id keeps names distinct; the refs let a reader spot the span quickly.
func ArchiveFileName(blockID, startRef, endRef string) string {
	return blockID + "_" + startRef + "-" + endRef + ".md"
}

// ArchiveTierDir groups archives by tier, e.g. "tier2".
func ArchiveTierDir(t Tier) string { return fmt.Sprintf("tier%d", t) }

// archiveRel is the conventional relative path of a block's archive.
func archiveRel(b CompressionBlock) string {
	if b.ArchiveRel != "" {
		return b.ArchiveRel
	}
	return ArchiveTierDir(b.Tier) + "/" + ArchiveFileName(b.BlockID, b.StartRef, b.EndRef)
}

// ArchiveTag tells the model where a block's full text was saved; rendering
// puts it at the end of each summary.
func ArchiveTag(b CompressionBlock) string {
	return "[originals of " + b.BlockID + " archived verbatim: " + archiveRel(b) + "]"
}

// ArchiveEntry is a piece of a tier-2/3 archive. Exactly one of Block and
// Message is non-nil.
type ArchiveEntry struct {
	// Block: a lower-tier block folded into this one.
	Block *CompressionBlock
	// Message: a raw message that sat between folded blocks.
	Message *CoreMessage
	// Ref: the message's ref, or "" if it never got one.
	Ref string
}

// ArchiveRenderInput holds the inputs of RenderArchive.
type ArchiveRenderInput struct {
	BlockID   string
	Tier      Tier
	SessionID string
	// CreatedAt (RFC3339) comes from the host; noa has no clock.
	CreatedAt string
	StartRef  string
	EndRef    string
	Topic     string
	Summary   string
	// Entries follow the order of the view, merged blocks and stray
	// messages mixed exactly where they sat.
	Entries []ArchiveEntry
	// OriginalTokens: tokens the archived content took up in context.
	OriginalTokens int
}

// RenderArchive builds one archive's markdown. Text goes in whole and
// unshortened, since nothing else can bring the originals back. Each body's
// fence is longer than any backtick run inside it, so content can never
// close its own fence.
func RenderArchive(in ArchiveRenderInput) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (tier %d) %s–%s\n\n", in.BlockID, in.Tier, in.StartRef, in.EndRef)
	if in.SessionID != "" {
		fmt.Fprintf(&b, "- session: %s\n", in.SessionID)
	}
	if in.CreatedAt != "" {
		fmt.Fprintf(&b, "- created: %s\n", in.CreatedAt)
	}
	if in.Topic != "" {
		fmt.Fprintf(&b, "- topic: %s\n", in.Topic)
	}
	fmt.Fprintf(&b, "- original tokens: %d\n- entries: %d\n\n", in.OriginalTokens, len(in.Entries))
	b.WriteString("## Summary\n\n")
	writeFenced(&b, in.Summary)
	b.WriteString("\n## Originals\n")
	for _, e := range in.Entries {
		switch {
		case e.Block != nil:
			blk := e.Block
			fmt.Fprintf(&b, "\n### block %s (tier %d) %s–%s", blk.BlockID, blk.Tier, blk.StartRef, blk.EndRef)
			if blk.Topic != "" {
				fmt.Fprintf(&b, " — %s", blk.Topic)
			}
			fmt.Fprintf(&b, "\n\n- archive: %s\n- messages: %d\n\n", archiveRel(*blk), len(blk.EffectiveMessageIDs))
			writeFenced(&b, blk.Summary)
		case e.Message != nil:
			m := e.Message
			ref := e.Ref
			if ref == "" {
				ref = "(no ref)"
			}
			fmt.Fprintf(&b, "\n### %s %s %s", ref, m.Role, m.ContentType)
			if m.ToolName != "" {
				fmt.Fprintf(&b, " %s", m.ToolName)
			}
			if m.ToolCallID != "" {
				fmt.Fprintf(&b, " [call %s]", m.ToolCallID)
			}
			fmt.Fprintf(&b, "\n\n- id: %s\n\n", m.ID)
			writeFenced(&b, m.Text)
		}
	}
	return []byte(b.String())
}

func writeFenced(b *strings.Builder, text string) {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	b.WriteString(fence)
	b.WriteString("text\n")
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(fence)
	b.WriteString("\n")
}
