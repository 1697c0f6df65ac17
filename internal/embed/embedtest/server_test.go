package embedtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbedModel(t *testing.T) {
	a := Embed("Get the weather forecast for a city", 64)
	if cos(a, Embed("Get the weather forecast for a city", 64)) < 0.9999 {
		t.Errorf("same text: got different vectors, want identical")
	}
	if got := cos(a, Embed("will I need an umbrella", 64)); got <= 0.3 {
		t.Errorf("paraphrase: got cosine %.3f, want > 0.3 (the synonym table links umbrella to weather)", got)
	}
	if got := cos(Embed("forecasts", 64), Embed("forecasting", 64)); got < 0.9999 {
		t.Errorf("stems: got cosine %.3f between forecasts and forecasting, want 1", got)
	}
	if got := cos(a, Embed("list commits of a branch", 64)); got > 0.3 {
		t.Errorf("unrelated text: got cosine %.3f, want <= 0.3", got)
	}
}

func TestWireFormat(t *testing.T) {
	s := New(Options{Dimensions: 8})
	t.Cleanup(s.Close)
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(s.URL+"/embeddings", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := post(`{"model": "m", "input": "one string"}`)
	data, _ := out["data"].([]any)
	if code != 200 || len(data) != 1 || out["model"] != "m" || out["usage"] == nil {
		t.Errorf("string input: got %d %v, want 200 with one embedding, the model and usage", code, out)
	}
	if code, _ := post(`{"model": "m", "input": [[1, 2, 3]]}`); code != 400 {
		t.Errorf("token-array input: got %d, want 400", code)
	}
	if code, _ := post(`{"input": ["x"]}`); code != 404 {
		t.Errorf("no model: got %d, want 404", code)
	}
	if s.Requests() != 3 || s.Inputs() != 1 {
		t.Errorf("got %d requests, %d inputs; want 3, 1", s.Requests(), s.Inputs())
	}
}
