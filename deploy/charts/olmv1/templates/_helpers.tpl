{{/*
Helpers shared by the templates. A "component" is one of catalogd, rukpak, operator-controller; its
values live under .Values.catalogd, .Values.rukpak and .Values.operatorController.
*/}}

{{- define "olmv1.namespace" -}}
{{- .Values.namespace.name -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "olmv1.labels" -}}
app.kubernetes.io/part-of: olmv1
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of a component: (dict "root" $ "name" "catalogd"). */}}
{{- define "olmv1.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* All labels of a component's objects. */}}
{{- define "olmv1.componentLabels" -}}
{{ include "olmv1.labels" .root }}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Name of a cluster-scoped object of a component: <release>-<name>, so that releases do not collide. */}}
{{- define "olmv1.clusterName" -}}
{{- printf "%s-%s" .root.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The values of a component. */}}
{{- define "olmv1.values" -}}
{{- if eq .name "operator-controller" -}}
{{- toYaml .root.Values.operatorController -}}
{{- else -}}
{{- toYaml (index .root.Values .name) -}}
{{- end -}}
{{- end -}}

{{/* Image reference of a component: (dict "root" $ "name" "catalogd" "v" <component values>). */}}
{{- define "olmv1.image" -}}
{{- $repo := printf "%s/%s" (trimSuffix "/" .root.Values.image.registry) .v.image.repository -}}
{{- if .v.image.digest -}}
{{- printf "%s@%s" $repo .v.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (.v.image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* Name of the Secret holding a component's serving certificate (tls.crt, tls.key). */}}
{{- define "olmv1.tlsSecret" -}}
{{- printf "%s-tls" . -}}
{{- end -}}

{{/* DNS names of a component's Service. */}}
{{- define "olmv1.serviceDNSNames" -}}
{{- $ns := include "olmv1.namespace" .root -}}
- {{ .name }}
- {{ .name }}.{{ $ns }}
- {{ .name }}.{{ $ns }}.svc
- {{ .name }}.{{ $ns }}.svc.cluster.local
{{- end -}}

{{/* rukpak's --webhook-cert-provider for the webhooks of installed registry+v1 bundles. */}}
{{- define "olmv1.webhookCertProvider" -}}
{{- $m := dict "selfSigned" "self-signed" "certManager" "cert-manager" "openshiftServiceCA" "openshift-service-ca" -}}
{{- index $m .Values.tls.mode -}}
{{- end -}}

{{/* Pod securityContext: non-root (the images' user 65532), RuntimeDefault seccomp. */}}
{{- define "olmv1.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container securityContext: read-only root filesystem, no privilege escalation, no capabilities. */}}
{{- define "olmv1.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Scheduling of a component: its own settings, else the global ones. */}}
{{- define "olmv1.scheduling" -}}
{{- with (.v.nodeSelector | default .root.Values.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.v.tolerations | default .root.Values.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.v.affinity | default .root.Values.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.v.topologySpreadConstraints | default .root.Values.topologySpreadConstraints) }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- else }}
{{- if gt (int .v.replicas) 1 }}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "olmv1.selectorLabels" (dict "root" .root "name" .name "v" .v) | nindent 6 }}
{{- end }}
{{- end }}
{{- with .root.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Probes on the plain-HTTP probe port (kubelet probes; nothing else is served there). */}}
{{- define "olmv1.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: probes}
  initialDelaySeconds: 10
  periodSeconds: 20
readinessProbe:
  httpGet: {path: /readyz, port: probes}
  periodSeconds: 10
startupProbe:
  httpGet: {path: /healthz, port: probes}
  periodSeconds: 5
  failureThreshold: 60
{{- end -}}

{{/* Flags every component takes (platform/boot). --tls-cert-dir is the serving certificate of every
TLS server of the component: metrics, and catalogd's content endpoint and CatalogMetadata API. */}}
{{- define "olmv1.commonArgs" -}}
- --metrics-bind-address=:{{ .v.ports.metrics }}
- --tls-cert-dir=/etc/olmv1/tls
- --health-probe-bind-address=:{{ .v.ports.probes }}
- --leader-elect=true
- --leader-election-namespace={{ include "olmv1.namespace" .root }}
- --log-level={{ .v.logLevel | default .root.Values.logLevel }}
{{- end -}}

{{/* The serving-certificate volume and the writable /tmp every component mounts. */}}
{{- define "olmv1.commonVolumes" -}}
- name: tls
  secret:
    secretName: {{ include "olmv1.tlsSecret" .name }}
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{- define "olmv1.commonVolumeMounts" -}}
- {name: tls, mountPath: /etc/olmv1/tls, readOnly: true}
- {name: tmp, mountPath: /tmp}
{{- end -}}

{{/* Name of the CatalogMetadata APIService (Kubernetes fixes it to <version>.<group>). */}}
{{- define "olmv1.apiServiceName" -}}
v1alpha1.metadata.catalogd.operatorframework.io
{{- end -}}

{{/* Whether rukpak renews the selfSigned certificates: selfSigned mode (rukpak is enabled by the caller). */}}
{{- define "olmv1.platformCerts" -}}
{{- if eq .Values.tls.mode "selfSigned" }}true{{ end -}}
{{- end -}}

{{/* The enabled components (those with a serving certificate), as a YAML list. */}}
{{- define "olmv1.enabledComponents" -}}
{{- range $name, $key := dict "catalogd" "catalogd" "rukpak" "rukpak" "operator-controller" "operatorController" }}
{{- if (index $.Values $key).enabled }}
- {{ $name }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Names of the Secrets rukpak renews in selfSigned mode: the CA and every serving Secret. */}}
{{- define "olmv1.platformCertSecrets" -}}
- olmv1-ca
{{- range (include "olmv1.enabledComponents" . | fromYamlArray) }}
- {{ include "olmv1.tlsSecret" . }}
{{- end }}
{{- end -}}

{{/* Whether the chart registers the CatalogMetadata APIService. */}}
{{- define "olmv1.apiServiceEnabled" -}}
{{- if and .Values.catalogd.enabled .Values.catalogd.metadataAPI.enabled }}true{{ end -}}
{{- end -}}

{{/*
rukpak's --platform-* flags (selfSigned mode): the CA Secret, each serving Secret with its DNS names,
the APIService whose caBundle it keeps, and the validity of what it issues.
*/}}
{{- define "olmv1.platformCertArgs" -}}
{{- $ns := include "olmv1.namespace" . -}}
- --platform-ca-secret={{ $ns }}/olmv1-ca
{{- range (include "olmv1.enabledComponents" . | fromYamlArray) }}
- --platform-serving-secret={{ $ns }}/{{ include "olmv1.tlsSecret" . }}:{{ include "olmv1.serviceDNSNames" (dict "root" $ "name" .) | fromYamlArray | join "," }}
{{- end }}
{{- if include "olmv1.apiServiceEnabled" . }}
- --platform-apiservice={{ include "olmv1.apiServiceName" . }}
{{- end }}
- --platform-cert-validity={{ mul (int .Values.tls.selfSigned.validityDays) 24 }}h
{{- end -}}
