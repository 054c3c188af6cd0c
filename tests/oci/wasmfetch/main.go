// wasmfetch fetches a Wasm module the way Istio's agent does for a WasmPlugin: through Istio's own
// module cache (istio.io/istio/pkg/wasm, the code pilot-agent runs), from an `oci://` or `http(s)://`
// URL, checked against the WasmPlugin's `sha256`. It prints the path of the cached module, or the error
// Istio would report, and exits 1.
//
//	wasmfetch URL SHA256|"" [insecure]
package main

import (
	"fmt"
	"os"
	"time"

	"istio.io/istio/pkg/util/sets"
	"istio.io/istio/pkg/wasm"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: wasmfetch URL SHA256|\"\" [insecure]")
		os.Exit(2)
	}
	url, sum := os.Args[1], os.Args[2]
	dir, err := os.MkdirTemp("", "wasmfetch-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// the agent's defaults (pkg/wasm/options.go), with every registry taken over plain HTTP when asked
	// (its WASM_INSECURE_REGISTRIES="*")
	opts := wasm.Options{
		PurgeInterval:         wasm.DefaultPurgeInterval,
		ModuleExpiry:          wasm.DefaultModuleExpiry,
		InsecureRegistries:    sets.New[string](),
		HTTPRequestTimeout:    wasm.DefaultHTTPRequestTimeout,
		HTTPRequestMaxRetries: wasm.DefaultHTTPRequestMaxRetries,
	}
	if len(os.Args) > 3 && os.Args[3] == "insecure" {
		opts.InsecureRegistries.Insert("*")
	}
	cache := wasm.NewLocalFileCache(dir, opts)
	defer cache.Cleanup()
	path, err := cache.Get(url, wasm.GetOptions{Checksum: sum, ResourceName: "toolfit", ResourceVersion: "1", RequestTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(path)
}
