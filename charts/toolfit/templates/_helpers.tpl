{{/* The namespace every object goes to. */}}
{{- define "toolfit.namespace" -}}
{{- .Values.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* The Gateway targetRef list of the gateway attachments. */}}
{{- define "toolfit.gatewayRef" -}}
- group: gateway.networking.k8s.io
  kind: Gateway
  name: {{ .Values.gateway.name }}
{{- end -}}

{{/* A file of deploy/ (symlinked into files/) as an object, in the release's namespace. */}}
{{- define "toolfit.fromFile" -}}
{{- $o := .root.Files.Get .file | fromYaml -}}
{{- $_ := set $o.metadata "namespace" (include "toolfit.namespace" .root) -}}
{{- include "toolfit.label" (dict "root" .root "o" $o) -}}
{{- toYaml $o -}}
{{- end -}}

{{/* Whether toolfit-extproc runs: the ext_proc delivery. */}}
{{- define "toolfit.extproc" -}}
{{- if eq .Values.delivery "extproc" }}true{{ end -}}
{{- end -}}

{{/* An object's metadata: its name, the namespace, its labels with commonLabels over them. */}}
{{- define "toolfit.metadata" -}}
name: {{ .name }}
namespace: {{ include "toolfit.namespace" .root }}
{{- $l := merge (deepCopy .root.Values.commonLabels) (.labels | default dict) }}
{{- with $l }}
labels: {{ toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* commonLabels set over the labels of an object read from a file (.o). */}}
{{- define "toolfit.label" -}}
{{- if .root.Values.commonLabels -}}
{{- $_ := set .o.metadata "labels" (merge (deepCopy .root.Values.commonLabels) (.o.metadata.labels | default dict)) -}}
{{- end -}}
{{- end -}}

{{/* Istio's failStrategy (WasmPlugin, TrafficExtension) for wasm.failurePolicy */}}
{{- define "toolfit.failStrategy" -}}
{{- get (dict "reload" "FAIL_RELOAD" "open" "FAIL_OPEN" "closed" "FAIL_CLOSE") .Values.wasm.failurePolicy -}}
{{- end }}
