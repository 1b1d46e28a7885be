{{/* The prefix of every name: "rollgate" for a release of that name, as config/default has it; 35
characters at most, so that the longest name made of it (-leader-election-rolebinding) fits 63. */}}
{{- define "rollgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 35 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 35 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 35 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "rollgate.labels" -}}
app.kubernetes.io/name: rollgate
app.kubernetes.io/part-of: rollgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "rollgate.selector" -}}
app.kubernetes.io/component: manager
app.kubernetes.io/name: rollgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rollgate.serviceAccount" -}}
{{ include "rollgate.fullname" . }}-controller-manager
{{- end -}}

{{- define "rollgate.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}
