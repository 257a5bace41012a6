{{/*
Registry mirrors of catalogd's and rukpak's image pulls (values registryMirrors; docs/sources.md,
"Registry mirrors"). registriesConf is rendered into the ConfigMap of configmap-registries.yaml and
mounted as a directory (not with subPath, which would hide updates): catalogd and rukpak read the
file again when it changes, without a restart.
*/}}
{{- define "olmv1.registryMirrorsArgs" -}}
{{- if .Values.registryMirrors.registriesConf }}
- --registries-conf=/etc/olmv1/registries/registries.conf
{{- end }}
{{- if not .Values.registryMirrors.imageMirrorSets }}
- --image-mirror-sets=false
{{- end }}
{{- end -}}

{{- define "olmv1.registryMirrorsVolumeMounts" -}}
{{- if .Values.registryMirrors.registriesConf }}
- {name: registries-conf, mountPath: /etc/olmv1/registries, readOnly: true}
{{- end }}
{{- end -}}

{{- define "olmv1.registryMirrorsVolumes" -}}
{{- if .Values.registryMirrors.registriesConf }}
- name: registries-conf
  configMap:
    name: registries-conf
{{- end }}
{{- end -}}

{{/* ClusterRole rules: list the mirror sets (cluster-scoped; listed at most every 30 s, never watched). */}}
{{- define "olmv1.registryMirrorsRules" -}}
{{- if .Values.registryMirrors.imageMirrorSets }}
# Registry mirrors: ImageDigestMirrorSets and ImageTagMirrorSets, when the cluster serves them (OpenShift).
- apiGroups: [config.openshift.io]
  resources: [imagedigestmirrorsets, imagetagmirrorsets]
  verbs: [list]
{{- end }}
{{- end -}}
