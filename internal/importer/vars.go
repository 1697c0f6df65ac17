package importer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// value rewrites one string of a client's file into mcproxy's syntax:
//
//	${env:X}, ${X}, ${X:-d}   -> ${X}, ${X:-d} (expanded when mcproxy loads)
//	${workspaceFolder}, ${cwd} -> Options.Workspace
//	${workspaceFolderBasename} -> its last element
//	${userHome}                -> Options.Home, or ${HOME}
//	${pathSeparator}, ${/}     -> the path separator
//	${input:ID}                -> the value Options.Prompt gives (asked once per ID)
//
// Literal text that mcproxy would read as a reference ($$) is escaped.
func (p *parser) value(path, s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if strings.HasPrefix(s[i:], "$$") {
			b.WriteString("$$$$")
			i++
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%s: unterminated ${ in %q", path, s)
		}
		out, literal, err := p.variable(path, s[i+2:i+end])
		if err != nil {
			return "", err
		}
		if literal {
			out = strings.ReplaceAll(out, "$", "$$")
		}
		b.WriteString(out)
		i += end
	}
	return b.String(), nil
}

// variable resolves the inside of one ${...}. literal is true when the
// result is plain text rather than an mcproxy reference.
func (p *parser) variable(path, v string) (out string, literal bool, err error) {
	switch {
	case strings.HasPrefix(v, "env:"):
		return "${" + strings.TrimPrefix(v, "env:") + "}", false, nil
	case v == "workspaceFolder" || v == "cwd" || v == "workspaceFolderBasename":
		if p.opts.Workspace == "" {
			return "", false, fmt.Errorf("%s: ${%s} needs the project folder: pass --workspace DIR", path, v)
		}
		if v == "workspaceFolderBasename" {
			return filepath.Base(p.opts.Workspace), true, nil
		}
		return p.opts.Workspace, true, nil
	case v == "userHome":
		if p.opts.Home == "" {
			return "${HOME}", false, nil
		}
		return p.opts.Home, true, nil
	case v == "pathSeparator" || v == "/":
		return string(filepath.Separator), true, nil
	case strings.HasPrefix(v, "input:"):
		id := strings.TrimPrefix(v, "input:")
		if a, ok := p.answers[id]; ok {
			return a, true, nil
		}
		in := Input{ID: id, Description: id}
		for _, x := range p.inputs {
			if x.ID == id {
				in = x
			}
		}
		if p.opts.Prompt == nil {
			return "", false, fmt.Errorf("%s: ${input:%s} needs a value: pass --input %s=VALUE", path, id, id)
		}
		a, err := p.opts.Prompt(in)
		if err != nil {
			return "", false, fmt.Errorf("%s: asking for input %q: %w", path, id, err)
		}
		p.answers[id] = a
		return a, true, nil
	case isEnvName(strings.SplitN(v, ":-", 2)[0]):
		return "${" + v + "}", false, nil // Claude Code's own syntax is mcproxy's
	}
	return "", false, fmt.Errorf("%s: ${%s} is a variable mcproxy cannot resolve; replace it with its value", path, v)
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
