// grafana-schema-check: checks Grafana dashboard JSON files against Grafana's dashboard
// schema as the Grafana Foundation SDK (Apache-2.0) generates it, in Go types, from
// Grafana's own CUE schema. Per file: a strict decode (an unknown field, a wrong type or
// a missing required field is an error; each panel's options and field config by its
// panel type, each target by its datasource type), then the schema's constraints
// (Validate: grid sizes, ranges). Only the panel and datasource types dyno's dashboards
// use are registered (timeseries, stat, table; prometheus), which keeps the build small;
// a panel of any other type is refused rather than checked loosely.
//
// Usage: grafana-schema-check FILE.json...  (exit 0: all valid; 1: some invalid, each
// error named by file and JSON path on stderr; 2: a file cannot be read)
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The panel types whose options are checked strictly.
var panelTypes = map[string]bool{"timeseries": true, "stat": true, "table": true}

// orNil turns the SDK's empty error list (a typed nil some decoders return) into nil.
func orNil(err error) error {
	if list, ok := err.(cog.BuildErrors); ok && len(list) == 0 {
		return nil
	}
	return err
}

// check returns what is wrong with one dashboard file, or nil.
func check(raw []byte) error {
	var d dashboard.Dashboard
	if err := orNil(d.UnmarshalJSONStrict(raw)); err != nil {
		return fmt.Errorf("does not decode as a Grafana dashboard: %v", err)
	}
	if err := orNil(d.Validate()); err != nil {
		return fmt.Errorf("breaks the dashboard schema's constraints: %v", err)
	}
	// Panels as plain JSON, for their types (a row panel has none of its own options).
	var loose struct {
		Panels []struct {
			Type  string `json:"type"`
			Title string `json:"title"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &loose); err != nil {
		return err
	}
	for i, p := range loose.Panels {
		if !panelTypes[p.Type] && p.Type != "row" {
			return fmt.Errorf("panels[%d] (%q): type %q is not one this check knows; add its schema to scripts/ci/grafana-schema/main.go", i, p.Title, p.Type)
		}
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grafana-schema-check FILE.json...")
		os.Exit(2)
	}
	runtime := cog.NewRuntime()
	runtime.RegisterPanelcfgVariant(timeseries.VariantConfig())
	runtime.RegisterPanelcfgVariant(stat.VariantConfig())
	runtime.RegisterPanelcfgVariant(table.VariantConfig())
	runtime.RegisterDataqueryVariant(prometheus.VariantConfig())
	invalid := 0
	for _, file := range os.Args[1:] {
		raw, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			os.Exit(2)
		}
		if err := check(raw); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			invalid++
			continue
		}
		fmt.Printf("%s: valid\n", file)
	}
	if invalid > 0 {
		os.Exit(1)
	}
}
