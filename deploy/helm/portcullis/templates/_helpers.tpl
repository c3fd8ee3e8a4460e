{{- define "portcullis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "portcullis.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A name derived from the full name, kept within 63 characters. */}}
{{- define "portcullis.child" -}}
{{- $full := include "portcullis.fullname" .root -}}
{{- printf "%s-%s" ($full | trunc (int (sub 62 (len .suffix)))) .suffix | trimSuffix "-" -}}
{{- end -}}

{{- define "portcullis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "portcullis.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "portcullis.selector" -}}
app.kubernetes.io/name: {{ include "portcullis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "portcullis.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "portcullis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "portcullis.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "portcullis.databaseSecret" -}}
{{- .Values.database.existingSecret | default (include "portcullis.child" (dict "root" . "suffix" "database")) -}}
{{- end -}}

{{/* The database Secret's key of the direct URL (--database-direct-url);
required when the main URL goes through PgBouncer in transaction mode. */}}
{{- define "portcullis.databaseDirectKey" -}}
{{- if .Values.database.transactionPooling -}}
{{- required "database.directUrlKey is required when database.transactionPooling is true: LISTEN, partition maintenance and migrations need a session, which PgBouncer in transaction mode does not keep" .Values.database.directUrlKey -}}
{{- else -}}
{{- .Values.database.directUrlKey -}}
{{- end -}}
{{- end -}}

{{/* The database URLs, as the environment of the gateway and of admin. */}}
{{- define "portcullis.databaseEnv" -}}
- name: PORTCULLIS_DATABASE_URL_FILE
  value: /etc/portcullis/database/{{ .Values.database.urlKey }}
{{- with (include "portcullis.databaseDirectKey" .) }}
- name: PORTCULLIS_DATABASE_DIRECT_URL_FILE
  value: /etc/portcullis/database/{{ . }}
{{- end }}
{{- end -}}

{{- define "portcullis.tlsSecret" -}}
{{- .Values.tls.existingSecret | default (include "portcullis.child" (dict "root" . "suffix" "tls")) -}}
{{- end -}}

{{/* The pod-level settings the gateway and the migration hook share. */}}
{{- define "portcullis.podCommon" -}}
serviceAccountName: {{ include "portcullis.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* durationSeconds turns a Go duration made of h, m and s into seconds. */}}
{{- define "portcullis.durationSeconds" -}}
{{- $total := 0 -}}
{{- range $part := regexFindAll "[0-9]+(h|m|s)" . -1 -}}
{{- $n := int (trimSuffix "h" (trimSuffix "m" (trimSuffix "s" $part))) -}}
{{- if hasSuffix "h" $part }}{{ $total = add $total (mul $n 3600) }}{{ else if hasSuffix "m" $part }}{{ $total = add $total (mul $n 60) }}{{ else }}{{ $total = add $total $n }}{{ end -}}
{{- end -}}
{{- $total -}}
{{- end -}}
