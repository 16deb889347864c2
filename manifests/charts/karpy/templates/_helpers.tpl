{{/* The chart name, or nameOverride: the app.kubernetes.io/name label. */}}
{{- define "karpy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of every object: fullnameOverride, else the release name (when it already
contains the chart name), else <release>-<name>. */}}
{{- define "karpy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
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

{{/* settings.featureGates as FEATURE_GATES: nodeRepair: true -> NodeRepair=true, sorted. */}}
{{- define "karpy.featureGates" -}}
{{- $gates := list }}
{{- range $name, $on := .Values.settings.featureGates }}
{{- $gates = append $gates (printf "%s%s=%v" (upper (substr 0 1 $name)) (substr 1 -1 $name) $on) }}
{{- end }}
{{- join "," $gates }}
{{- end }}

{{/* The provider, checked: the RBAC depends on it. */}}
{{- define "karpy.provider" -}}
{{- if not (has .Values.provider (list "aws" "kwok")) }}
{{- fail (printf "provider must be aws or kwok (got %q)" (toString .Values.provider)) }}
{{- end }}
{{- .Values.provider }}
{{- end }}
