{{/*
The --tls-* flags of every component from tls.profile and tls.custom (docs/tls.md): one TLS profile
for every server (metrics, catalogd content, CatalogMetadata API) and outgoing client (image, HTTP and
git sources) of the three controllers.
*/}}
{{- define "olmv1.tlsProfileArgs" -}}
{{- $profile := .Values.tls.profile | default "Intermediate" -}}
{{- $custom := .Values.tls.custom | default dict -}}
{{- if and (ne $profile "Custom") (or $custom.minVersion $custom.cipherSuites $custom.curves) -}}
{{- fail (printf "tls.custom is set but tls.profile is %q: set tls.profile=Custom, or drop tls.custom" $profile) -}}
{{- end -}}
- --tls-profile={{ $profile }}
{{- if eq $profile "Custom" }}
{{- with $custom.minVersion }}
- --tls-min-version={{ . }}
{{- end }}
{{- with $custom.cipherSuites }}
- --tls-cipher-suites={{ join "," . }}
{{- end }}
{{- with $custom.curves }}
- --tls-curves={{ join "," . }}
{{- end }}
{{- end }}
{{- end -}}
