//go:build tools

// The Gateway API Inference Extension's Endpoint Picker, pinned in go.mod, built by tests/envoy/epp.py:
//
//	go build -o epp sigs.k8s.io/gateway-api-inference-extension/cmd/epp
package epp

import _ "sigs.k8s.io/gateway-api-inference-extension/cmd/epp"
