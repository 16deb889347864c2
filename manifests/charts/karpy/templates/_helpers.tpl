{{/* The app.kubernetes.io/name label: `karpenter` (Karpenter's chart name, so dashboards,
alerts and `kubectl -l app.kubernetes.io/name=karpenter` select karpy), or nameOverride. */}}
{{- define "karpy.name" -}}
{{- default "karpenter" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of every object, as Karpenter's chart computes it: fullnameOverride, else the
release name when it contains the name (release `karpenter` -> `karpenter`), else
<release>-<name>. */}}
{{- define "karpy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "karpy.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "karpy.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "karpy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "karpy.labels" -}}
helm.sh/chart: {{ include "karpy.chart" . }}
{{ include "karpy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.labels and, when there are any, metadata.annotations of every object. */}}
{{- define "karpy.metadata" -}}
labels:
  {{- include "karpy.labels" . | nindent 2 }}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "karpy.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpy.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository:tag@digest when image.digest is set. */}}
{{- define "karpy.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The feature gates karpy knows, in settings.featureGates spelling. */}}
{{- define "karpy.knownFeatureGates" -}}
nodeRepair reservedCapacity spotToSpotConsolidation nodeOverlay staticCapacity capacityBuffer
{{- end }}

{{/* settings.featureGates as FEATURE_GATES (nodeRepair: true -> NodeRepair=true, sorted), only
the gates karpy knows: as with Karpenter's chart, a gate of an older or newer release (drift)
is left out rather than stopping karpy; NOTES.txt names it. */}}
{{- define "karpy.featureGates" -}}
{{- $known := splitList " " (include "karpy.knownFeatureGates" .) }}
{{- $gates := list }}
{{- range $name, $on := .Values.settings.featureGates }}
{{- if has $name $known }}
{{- $gates = append $gates (printf "%s%s=%v" (upper (substr 0 1 $name)) (substr 1 -1 $name) $on) }}
{{- end }}
{{- end }}
{{- join "," $gates }}
{{- end }}

{{/* The keys of settings.featureGates that karpy does not know, sorted. */}}
{{- define "karpy.unknownFeatureGates" -}}
{{- $known := splitList " " (include "karpy.knownFeatureGates" .) }}
{{- $unknown := list }}
{{- range $name, $_ := .Values.settings.featureGates }}
{{- if not (has $name $known) }}
{{- $unknown = append $unknown $name }}
{{- end }}
{{- end }}
{{- join " " $unknown }}
{{- end }}

{{/* A map as YAML without its empty nested maps, at any depth: Karpenter's values carry
`seccompProfile: {}` and the like, which the apiserver refuses when rendered ("type: Required
value"); Karpenter's templates leave them out, so does this. Nulls go too. */}}
{{- define "karpy.pruneEmpty" -}}
{{- $out := dict }}
{{- range $key, $value := . }}
{{- if kindIs "map" $value }}
{{- $inner := include "karpy.pruneEmpty" $value | fromYaml }}
{{- if $inner }}
{{- $_ := set $out $key $inner }}
{{- end }}
{{- else if not (kindIs "invalid" $value) }}
{{- $_ := set $out $key $value }}
{{- end }}
{{- end }}
{{- if $out }}
{{- toYaml $out }}
{{- end }}
{{- end }}

{{/* The image pull policy: image.pullPolicy, else Karpenter's top-level imagePullPolicy. */}}
{{- define "karpy.imagePullPolicy" -}}
{{- default .Values.imagePullPolicy .Values.image.pullPolicy | default "IfNotPresent" }}
{{- end }}

{{/* The provider, checked: the RBAC depends on it. */}}
{{- define "karpy.provider" -}}
{{- if not (has .Values.provider (list "aws" "azure" "kwok")) }}
{{- fail (printf "provider must be aws, azure or kwok (got %q)" (toString .Values.provider)) }}
{{- end }}
{{- .Values.provider }}
{{- end }}

{{/* settings.tags as ADDITIONAL_TAGS reads them: key=value pairs, by key, comma-separated. */}}
{{- define "karpy.tagPairs" -}}
{{- $pairs := list }}
{{- range $key, $value := . }}
{{- $pairs = append $pairs (printf "%s=%s" $key (toString $value)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}
