{{/*
The prefix of every object's name. The release "mcp-operator" gives the
names `kubectl apply -k config/default` gives (namePrefix mcp-operator-).
Short enough that "<prefix>-controller-manager" stays a valid name.
*/}}
{{- define "mcp-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Labels on every object: config/default's app.kubernetes.io/name and the
labels Helm users expect.
*/}}
{{- define "mcp-operator.labels" -}}
app.kubernetes.io/name: mcp-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The manager's pod labels, exactly config/default's Deployment selector: a
selector cannot change, so moving from `kubectl apply -k` to Helm keeps it.
*/}}
{{- define "mcp-operator.selectorLabels" -}}
app.kubernetes.io/name: mcp-operator
app.kubernetes.io/component: manager
{{- end -}}

{{- define "mcp-operator.serviceAccountName" -}}
{{ include "mcp-operator.fullname" . }}-controller-manager
{{- end -}}

{{/*
The image reference: a digest wins over a tag; an empty tag is appVersion.
*/}}
{{- define "mcp-operator.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}


{{/*
The leader election Lease: one per release, created by the chart so that
helm uninstall deletes it.
*/}}
{{- define "mcp-operator.leaseName" -}}
{{ include "mcp-operator.fullname" . }}-leader-election
{{- end -}}
