package embed_test

import (
	"context"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/index"
)

// Example shows the whole cycle against the toy test server: index a
// server's tools, then answer a query whose words BM25 would not find by
// fusing the (here empty) BM25 hits with the dense ranking.
func Example() {
	srv := embedtest.New(embedtest.Options{})
	defer srv.Close()

	client, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: "toy"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dense := embed.New(client, embed.Options{})
	defer dense.Close()

	dense.Upsert("weather", []config.ToolMetadata{
		{Name: "get_forecast", ServerName: "weather", Description: "Get the weather forecast for a city."},
		{Name: "get_alerts", ServerName: "weather", Description: "List storm warnings for a region."},
	})
	if err := dense.Sync(context.Background()); err != nil {
		fmt.Println(err)
		return
	}

	var lexical []index.Hit // what BM25 found for the query: nothing
	hits, err := dense.Hybrid(context.Background(), "will I need an umbrella", lexical, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hits {
		fmt.Println(h.ID)
	}
	// Output: weather:get_forecast
}
