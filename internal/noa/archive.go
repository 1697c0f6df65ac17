package noa

import (
	"fmt"
	"strings"
)

// Archiver writes a block's original content to durable storage. noa decides
// what to archive and renders it; the host decides where and does the I/O.
type Archiver interface {
	// Write stores content for a block and returns its absolute path and the
	// path relative to the archive root. It must be atomic: a partial archive
	// would let a block claim recoverability it cannot deliver.
	Write(tier Tier, blockID, startRef, endRef string, content []byte) (abs, rel string, err error)
	// Remove deletes an archive; used to roll back a failed batch.
	Remove(abs string) error
}

// ArchiveFileName is the archive's basename: block id first so it is unique,
// then the ref span so a person can find it by eye ("b3_m00001-m00040.md").
func ArchiveFileName(blockID, startRef, endRef string) string {
	return blockID + "_" + startRef + "-" + endRef + ".md"
}

// ArchiveTierDir is the subdirectory a tier's archives live in ("tier2").
func ArchiveTierDir(t Tier) string { return fmt.Sprintf("tier%d", t) }

// archiveRel is the conventional relative path of a block's archive.
func archiveRel(b CompressionBlock) string {
	if b.ArchiveRel != "" {
		return b.ArchiveRel
	}
	return ArchiveTierDir(b.Tier) + "/" + ArchiveFileName(b.BlockID, b.StartRef, b.EndRef)
}

// ArchiveTag is the pointer to a block's originals; it is the last line of
// every rendered summary.
func ArchiveTag(b CompressionBlock) string {
	return "[originals of " + b.BlockID + " archived verbatim: " + archiveRel(b) + "]"
}

// ArchiveEntry is one item of a tier-2/3 archive: an absorbed block, or a
// loose message swept up with it.
type ArchiveEntry struct {
	// Block is set for an absorbed lower-tier block.
	Block *CompressionBlock
	// Message is set for an uncompressed message inside the range.
	Message *CoreMessage
	// Ref is the message's ref, when it has one.
	Ref string
}

// ArchiveRenderInput is everything needed to render one archive file.
type ArchiveRenderInput struct {
	BlockID   string
	Tier      Tier
	SessionID string
	// CreatedAt is an RFC3339 timestamp supplied by the caller.
	CreatedAt string
	StartRef  string
	EndRef    string
	Topic     string
	Summary   string
	// Entries are in view order: absorbed summaries and loose messages
	// interleaved as the model saw them.
	Entries []ArchiveEntry
	// OriginalTokens is the cost of what this archive replaces.
	OriginalTokens int
}

// RenderArchive produces the markdown for one archive file. Message text is
// written verbatim and never truncated: the archive is the only way back to
// the originals. Each body is fenced with a fence longer than any backtick
// run inside it, so no content can break the layout.
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
