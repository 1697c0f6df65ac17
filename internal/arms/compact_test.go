package arms

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestCompactSignature(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"no schema", ``, `s:t()|Desc.`},
		{"no properties", `{"type":"object","properties":{},"required":[]}`, `s:t()|Desc.`},
		{"required order then optional sorted",
			`{"type":"object","properties":{"z":{"type":"string"},"b":{"type":"integer"},"a":{"type":"boolean"},"y":{"type":"number"}},"required":["y","b"]}`,
			`s:t(y:number, b:integer, a?:boolean, z?:string)|Desc.`},
		{"array element types", `{"properties":{"paths":{"type":"array","items":{"type":"string"}},"any":{"type":"array"}},"required":["paths"]}`,
			`s:t(paths:string[], any?:any[])|Desc.`},
		{"array of objects", `{"properties":{"edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"},"new":{"type":"string"},"n":{"type":"integer"}},"required":["old","new"]}}},"required":["edits"]}`,
			`s:t(edits:{old:string, new:string, n?:integer}[])|Desc.`},
		{"string enum", `{"properties":{"sort":{"type":"string","enum":["name","size"],"default":"name"}}}`,
			`s:t(sort?:"name"|"size")|Desc.`},
		{"mixed enum", `{"properties":{"v":{"enum":[1,"two",null,true]}}}`, `s:t(v?:1|"two"|null|true)|Desc.`},
		{"const", `{"properties":{"kind":{"const":"image"}},"required":["kind"]}`, `s:t(kind:"image")|Desc.`},
		{"optional with null default drops null", `{"properties":{"c":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}}}`, `s:t(c?:string)|Desc.`},
		{"optional nullable without default keeps null", `{"properties":{"c":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, `s:t(c?:string|null)|Desc.`},
		{"optional nullable with a real default keeps null", `{"properties":{"c":{"type":["integer","null"],"default":30}}}`, `s:t(c?:integer|null)|Desc.`},
		{"required nullable keeps null", `{"properties":{"c":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},"required":["c"]}`, `s:t(c:string|null)|Desc.`},
		{"null inside a nested union kept", `{"properties":{"c":{"type":"array","items":{"type":["string","null"]},"default":null}}}`, `s:t(c?:(string|null)[])|Desc.`},
		{"only null stays", `{"properties":{"c":{"type":"null","default":null}}}`, `s:t(c?:null)|Desc.`},
		{"type list", `{"properties":{"n":{"type":["integer","null"]}}}`, `s:t(n?:integer|null)|Desc.`},
		{"union of arrays parenthesized", `{"properties":{"x":{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"number"}]}}}}`, `s:t(x?:(string|number)[])|Desc.`},
		{"oneOf of consts", `{"properties":{"r":{"oneOf":[{"const":0},{"const":188}],"default":0}}}`, `s:t(r?:0|188)|Desc.`},
		{"allOf", `{"properties":{"x":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"anyOf":[{"type":"string"},{"type":"null"}]}]}}}`,
			`s:t(x?:{a?:string}&(string|null))|Desc.`},
		{"map", `{"properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`, `s:t(env?:{[key:string]:string})|Desc.`},
		{"map with fixed keys", `{"properties":{"h":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":{"type":"string"}}}}`, `s:t(h?:{id:integer, [key:string]:string})|Desc.`},
		{"top-level map", `{"type":"object","additionalProperties":{"type":"number"}}`, `s:t([key:string]:number)|Desc.`},
		{"top-level additionalProperties true adds nothing", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, `s:t(a?:string)|Desc.`},
		{"plain object", `{"properties":{"o":{"type":"object","additionalProperties":false}}}`, `s:t(o?:object)|Desc.`},
		{"tuple", `{"properties":{"p":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}]}}}`, `s:t(p?:[number, number])|Desc.`},
		{"draft-04 tuple", `{"properties":{"p":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`, `s:t(p?:[string, integer])|Desc.`},
		{"no type inferred", `{"properties":{"a":{},"o":{"properties":{"k":{"type":"string"}}},"l":{"items":{"type":"number"}}}}`,
			`s:t(a?:any, l?:number[], o?:{k?:string})|Desc.`},
		{"boolean schemas", `{"properties":{"yes":true,"no":false}}`, `s:t(no?:never, yes?:any)|Desc.`},
		{"required but undescribed", `{"properties":{},"required":["ghost"]}`, `s:t(ghost:any)|Desc.`},
		{"duplicate required once", `{"properties":{"a":{"type":"string"}},"required":["a","a"]}`, `s:t(a:string)|Desc.`},
		{"odd names quoted", `{"properties":{"a b":{"type":"string"},"x,y":{"type":"string"},"ok-name.v2":{"type":"string"}}}`,
			`s:t("a b"?:string, ok-name.v2?:string, "x,y"?:string)|Desc.`},
		{"local ref expanded", `{"$defs":{"Pt":{"type":"object","properties":{"x":{"type":"number"}}}},"properties":{"p":{"$ref":"#/$defs/Pt"}}}`,
			`s:t(p?:{x?:number})|Desc.`},
		{"recursive ref named", `{"$defs":{"Node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"properties":{"root":{"$ref":"#/$defs/Node"}}}`,
			`s:t(root?:{kids?:Node[]})|Desc.`},
		{"remote ref named", `{"properties":{"r":{"$ref":"https://example.com/schemas/Thing"}}}`, `s:t(r?:Thing)|Desc.`},
		{"ref into properties", `{"properties":{"a":{"type":"integer"},"b":{"$ref":"#/properties/a"}}}`, `s:t(a?:integer, b?:integer)|Desc.`},
		{"defaults left out", `{"properties":{"xs":{"type":"array","items":{"type":"string"},"default":[]},"f":{"type":"number","default":1.50}}}`, `s:t(f?:number, xs?:string[])|Desc.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "Desc.", Schema: json.RawMessage(tc.schema)}
			got, err := NewCompact().EncodeTool(tool)
			if err != nil {
				t.Fatalf("EncodeTool: %v", err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			md, err := NewCompact().EncodeIndexMetadata(tool)
			if err != nil {
				t.Fatal(err)
			}
			if want := "s:t(" + md.ParamsJSON + ")|Desc."; got != want {
				t.Errorf("index ParamsJSON %q is not the signature's parameter text: got %s", md.ParamsJSON, got)
			}
		})
	}
}

func TestCompactNoDescription(t *testing.T) {
	got, err := NewCompact().EncodeTool(config.Tool{ID: "s:t", Server: "s", Name: "t"})
	if err != nil || got != "s:t()" {
		t.Errorf("got %q, %v, want %q", got, err, "s:t()")
	}
}

func TestCompactRejectsMalformedSchemas(t *testing.T) {
	tests := []struct{ name, schema, wantErr string }{
		{"properties not an object", `{"properties":[]}`, "#/properties must be an object"},
		{"required not an array", `{"properties":{},"required":"a"}`, "#/required must be an array"},
		{"required item not a string", `{"properties":{},"required":[1]}`, "#/required/0 must be a string"},
		{"property schema a string", `{"properties":{"a":"string"}}`, "#/properties/a: a schema must be an object or a boolean"},
		{"empty enum", `{"properties":{"a":{"enum":[]}}}`, "#/properties/a/enum must be a non-empty array"},
		{"anyOf not an array", `{"properties":{"a":{"anyOf":{}}}}`, "#/properties/a/anyOf must be a non-empty array"},
		{"type a number", `{"properties":{"a":{"type":3}}}`, "#/properties/a/type must be a string"},
		{"nested properties not an object", `{"properties":{"o":{"type":"object","properties":3}}}`, "#/properties/o/properties must be an object"},
		{"bad additionalProperties schema", `{"properties":{"o":{"type":"object","additionalProperties":{"type":7}}}}`, "#/properties/o/additionalProperties/type must be a string"},
		{"nested error path", `{"properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":7}}}}}`, "#/properties/a/items/properties/b"},
		{"ref not a string", `{"properties":{"a":{"$ref":1}}}`, "$ref must be a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := config.Tool{ID: "s:t", Server: "s", Name: "t", Schema: json.RawMessage(tc.schema)}
			_, err := NewCompact().EncodeTool(tool)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"s:t"`) {
				t.Errorf("got error %v, want one naming the tool and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCompactDeepSchemaFails(t *testing.T) {
	schema := `{"type":"string"}`
	for range maxSchemaDepth + 2 {
		schema = `{"type":"array","items":` + schema + `}`
	}
	tool := config.Tool{ID: "s:t", Server: "s", Name: "t", Schema: json.RawMessage(`{"properties":{"a":` + schema + `}}`)}
	if got, err := NewCompact().EncodeTool(tool); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("got %q, %v, want a nesting error", got, err)
	}
}
