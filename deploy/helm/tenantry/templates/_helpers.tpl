{{/* Full name of the release's objects. */}}
{{- define "tenantry.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tenantry.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tenantry.labels" -}}
{{ include "tenantry.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tenantry.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tenantry.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Whether a component runs: include "tenantry.has" (list . "gateway") */}}
{{- define "tenantry.has" -}}
{{- if has (index . 1) (index . 0).Values.components -}}true{{- end -}}
{{- end -}}

{{/*
How the pods know kube-apiserver: --webhook-client-ca with the CA bundle's file, or
--allow-anonymous-admission; one of them is required while the webhooks run.
*/}}
{{- define "tenantry.apiServerClientFlag" -}}
{{- $client := .Values.apiServerClient -}}
{{- if and $client.caBundle $client.allowAnonymous -}}
{{- fail "apiServerClient: give either caBundle or allowAnonymous, not both" -}}
{{- else if $client.caBundle -}}
- --webhook-client-ca=/etc/tenantry/apiserver-client/ca.crt
{{- else if $client.allowAnonymous -}}
- --allow-anonymous-admission
{{- else if include "tenantry.has" (list . "webhooks") -}}
{{- fail "apiServerClient.caBundle: the CA bundle (PEM) that signs kube-apiserver's webhook client certificate is required with the webhooks component (--set-file apiServerClient.caBundle=ca.crt; README, kube-apiserver's webhook client certificate), or apiServerClient.allowAnonymous=true where kube-apiserver cannot present one" -}}
{{- end -}}
{{- end -}}
