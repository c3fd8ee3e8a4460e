package admission

import "strings"

// commonKeys are field names that recur in almost every Kubernetes object.
// The parser reuses these strings instead of allocating each key again; a
// lookup with string(bytes) as the index does not allocate. The table is
// fixed, so hostile input cannot grow it.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`
		apiVersion kind metadata spec status name namespace uid labels annotations
		generateName ownerReferences controller blockOwnerDeletion resourceVersion
		generation creationTimestamp deletionTimestamp finalizers managedFields
		manager operation time fieldsType fieldsV1 subresource
		app team template selector matchLabels matchExpressions key operator values
		replicas strategy type rollingUpdate maxSurge maxUnavailable
		containers initContainers ephemeralContainers image imagePullPolicy command args
		workingDir ports containerPort hostPort protocol env envFrom value valueFrom
		fieldRef fieldPath secretKeyRef configMapKeyRef resourceFieldRef
		resources requests limits cpu memory ephemeral-storage claims
		volumeMounts mountPath readOnly subPath volumes emptyDir sizeLimit configMap
		secret secretName defaultMode items path projected sources serviceAccountToken
		expirationSeconds downwardAPI persistentVolumeClaim claimName hostPath
		livenessProbe readinessProbe startupProbe httpGet tcpSocket exec grpc port
		scheme host httpHeaders initialDelaySeconds timeoutSeconds periodSeconds
		successThreshold failureThreshold terminationGracePeriodSeconds
		securityContext runAsNonRoot runAsUser runAsGroup fsGroup privileged
		allowPrivilegeEscalation readOnlyRootFilesystem capabilities add drop
		seccompProfile seLinuxOptions procMount
		serviceAccountName serviceAccount automountServiceAccountToken nodeName
		nodeSelector affinity podAffinity podAntiAffinity nodeAffinity
		requiredDuringSchedulingIgnoredDuringExecution
		preferredDuringSchedulingIgnoredDuringExecution weight podAffinityTerm
		labelSelector topologyKey tolerations effect tolerationSeconds
		restartPolicy dnsPolicy schedulerName enableServiceLinks preemptionPolicy
		priority priorityClassName hostNetwork hostPID hostIPC
		terminationMessagePath terminationMessagePolicy stdin tty lifecycle
		conditions phase podIP podIPs hostIP startTime containerStatuses qosClass
		lastProbeTime lastTransitionTime reason message ready restartCount state
		running startedAt imageID containerID started
		pod-template-hash app.kubernetes.io/name app.kubernetes.io/instance
		app.kubernetes.io/version app.kubernetes.io/component app.kubernetes.io/part-of
		app.kubernetes.io/managed-by kubernetes.io/metadata.name`) {
		m[k] = k
	}
	return m
}()

// key returns the object key b as a string, shared when it is common.
func key(b []byte) string {
	if k, ok := commonKeys[string(b)]; ok {
		return k
	}
	return string(b)
}
