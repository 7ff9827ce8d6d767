// hclcheck parses each file given with HashiCorp's HCL 2 parser (the one Nomad's job
// specification is written in) and prints every diagnostic: syntax, block structure,
// and template interpolations (`${...}`, `$${...}` escapes). It does not know Nomad's
// job schema (block and attribute names, their types): Nomad's jobspec package is not
// served by the Go module proxy, and its releases after 1.6.5 are BUSL-licensed.
//
// usage: hclcheck FILE...   (exit 1 on any error diagnostic)
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hclcheck FILE...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// Every expression is parsed too, templates and their interpolations included.
		_, diags := hclsyntax.ParseConfig(src, path, hcl.Pos{Line: 1, Column: 1})
		for _, d := range diags {
			fmt.Fprintln(os.Stderr, d.Error())
		}
		if diags.HasErrors() {
			failed = true
		} else {
			fmt.Printf("%s: valid HCL\n", path)
		}
	}
	if failed {
		os.Exit(1)
	}
}
