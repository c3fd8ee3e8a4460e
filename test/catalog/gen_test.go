package catalog

import (
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gen makes pod specs that cover every control of the Pod Security
// Standards: each control's allowed and forbidden values, unset fields,
// empty strings, nil and empty structs, in init, regular and ephemeral
// containers and at the pod level.
type gen struct{ r *rand.Rand }

func (g gen) chance(p float64) bool { return g.r.Float64() < p }
func (g gen) pick(n int) int        { return g.r.IntN(n) }

func one[T any](g gen, xs ...T) T { return xs[g.pick(len(xs))] }

func ptr[T any](v T) *T { return &v }

// optBool is nil, true or false.
func (g gen) optBool() *bool { return one(g, nil, ptr(true), ptr(false)) }

// pod is what a generated object carries: the pod template's metadata and
// spec.
type pod struct {
	meta metav1.ObjectMeta
	spec corev1.PodSpec
}

// compliant is a container that passes the restricted level.
func compliant(name string) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: "registry.example.com/app:1.0",
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			RunAsNonRoot:             ptr(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

func bare(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "registry.example.com/app:1.0"}
}

// base is a pod to mutate: restricted-compliant, bare (nothing set), or
// compliant at the pod level only; with 0-3 containers, 0-2 init and 0-2
// ephemeral containers, some unnamed.
func (g gen) base() pod {
	p := pod{meta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}}}
	style := g.pick(3)
	mk := func(name string) corev1.Container {
		if g.chance(0.05) {
			name = ""
		}
		switch style {
		case 0:
			return compliant(name)
		case 1:
			return bare(name)
		}
		c := bare(name)
		c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		return c
	}
	if style == 2 {
		p.spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")}}
	}
	n := one(g, 1, 1, 1, 2, 3, 0)
	if n == 0 && g.chance(0.5) {
		p.spec.Containers = []corev1.Container{} // empty, not nil
	}
	for i := range n {
		p.spec.Containers = append(p.spec.Containers, mk("c"+string(rune('0'+i))))
	}
	for i := range one(g, 0, 0, 1, 2) {
		p.spec.InitContainers = append(p.spec.InitContainers, mk("i"+string(rune('0'+i))))
	}
	for i := range one(g, 0, 0, 0, 1, 2) {
		c := mk("e" + string(rune('0'+i)))
		p.spec.EphemeralContainers = append(p.spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)})
	}
	if g.chance(0.3) {
		p.spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	}
	return p
}

// container returns one of the pod's containers (init, regular or
// ephemeral), adding one when it has none.
func (g gen) container(p *pod) *corev1.Container {
	n := len(p.spec.InitContainers) + len(p.spec.Containers) + len(p.spec.EphemeralContainers)
	if n == 0 {
		p.spec.Containers = append(p.spec.Containers, bare("added"))
		return &p.spec.Containers[0]
	}
	i := g.pick(n)
	if i < len(p.spec.InitContainers) {
		return &p.spec.InitContainers[i]
	}
	i -= len(p.spec.InitContainers)
	if i < len(p.spec.Containers) {
		return &p.spec.Containers[i]
	}
	i -= len(p.spec.Containers)
	return (*corev1.Container)(&p.spec.EphemeralContainers[i].EphemeralContainerCommon)
}

func csc(c *corev1.Container) *corev1.SecurityContext {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

func psc(p *pod) *corev1.PodSecurityContext {
	if p.spec.SecurityContext == nil {
		p.spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.spec.SecurityContext
}

// A mutation sets one control to a random value (which may be its allowed
// value, unset, or an edge case).
type mutation struct {
	name string
	fn   func(g gen, p *pod)
}

var mutations = []mutation{
	{"hostProcess/pod", func(g gen, p *pod) {
		psc(p).WindowsOptions = one(g, nil, &corev1.WindowsSecurityContextOptions{}, &corev1.WindowsSecurityContextOptions{HostProcess: g.optBool()})
	}},
	{"hostProcess/container", func(g gen, p *pod) {
		csc(g.container(p)).WindowsOptions = one(g, nil, &corev1.WindowsSecurityContextOptions{}, &corev1.WindowsSecurityContextOptions{HostProcess: g.optBool(), RunAsUserName: ptr("")})
	}},
	{"hostNamespaces", func(g gen, p *pod) {
		switch g.pick(3) {
		case 0:
			p.spec.HostNetwork = g.chance(0.5)
		case 1:
			p.spec.HostPID = g.chance(0.5)
		default:
			p.spec.HostIPC = g.chance(0.5)
		}
	}},
	{"privileged", func(g gen, p *pod) { csc(g.container(p)).Privileged = g.optBool() }},
	{"capabilities/add", func(g gen, p *pod) {
		sc := csc(g.container(p))
		if sc.Capabilities == nil || g.chance(0.2) {
			sc.Capabilities = &corev1.Capabilities{}
		}
		for range g.pick(3) {
			sc.Capabilities.Add = append(sc.Capabilities.Add, one[corev1.Capability](g, "NET_BIND_SERVICE", "CHOWN", "KILL", "SYS_CHROOT",
				"AUDIT_WRITE", "SETUID", "MKNOD", "NET_RAW", "SYS_ADMIN", "ALL", "", "net_bind_service", "CAP_CHOWN"))
		}
	}},
	{"capabilities/drop", func(g gen, p *pod) {
		sc := csc(g.container(p))
		switch g.pick(4) {
		case 0:
			sc.Capabilities = nil
		case 1:
			sc.Capabilities = &corev1.Capabilities{}
		default:
			if sc.Capabilities == nil {
				sc.Capabilities = &corev1.Capabilities{}
			}
			sc.Capabilities.Drop = nil
			for range g.pick(3) {
				sc.Capabilities.Drop = append(sc.Capabilities.Drop, one[corev1.Capability](g, "ALL", "all", "", "NET_RAW", "CHOWN"))
			}
		}
	}},
	{"volumes", func(g gen, p *pod) {
		v := corev1.Volume{Name: one(g, "v", "data", "")}
		s := &v.VolumeSource
		switch g.pick(17) {
		case 0:
			s.HostPath = &corev1.HostPathVolumeSource{Path: one(g, "/", "/var/run", "")}
		case 1:
			s.ConfigMap = &corev1.ConfigMapVolumeSource{}
		case 2:
			s.Secret = &corev1.SecretVolumeSource{SecretName: "s"}
		case 3:
			s.EmptyDir = &corev1.EmptyDirVolumeSource{}
		case 4:
			s.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}
		case 5:
			s.Projected = &corev1.ProjectedVolumeSource{}
		case 6:
			s.DownwardAPI = &corev1.DownwardAPIVolumeSource{}
		case 7:
			s.CSI = &corev1.CSIVolumeSource{Driver: "d"}
		case 8:
			s.Ephemeral = &corev1.EphemeralVolumeSource{}
		case 9:
			s.Image = &corev1.ImageVolumeSource{Reference: "img"}
		case 10:
			s.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/"}
		case 11:
			s.GitRepo = &corev1.GitRepoVolumeSource{Repository: "r"}
		case 12:
			s.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "v"}
		case 13:
			s.ISCSI = &corev1.ISCSIVolumeSource{}
		case 14:
			s.FlexVolume = &corev1.FlexVolumeSource{Driver: "d"}
		case 15:
			s.RBD = &corev1.RBDVolumeSource{}
		}
		// case 16: a volume with no source at all
		p.spec.Volumes = append(p.spec.Volumes, v)
	}},
	{"hostPorts", func(g gen, p *pod) {
		c := g.container(p)
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 8080, HostPort: one[int32](g, 0, 0, 80, 8080, -1)})
	}},
	{"probeHost", func(g gen, p *pod) {
		c := g.container(p)
		host := one(g, "", "", "localhost", "10.0.0.1")
		var h corev1.ProbeHandler
		if g.chance(0.5) {
			h.HTTPGet = &corev1.HTTPGetAction{Host: host, Path: "/"}
		} else {
			h.TCPSocket = &corev1.TCPSocketAction{Host: host}
		}
		probe := &corev1.Probe{ProbeHandler: h}
		switch g.pick(3) {
		case 0:
			c.LivenessProbe = probe
		case 1:
			c.ReadinessProbe = probe
		default:
			c.StartupProbe = probe
		}
	}},
	{"lifecycleHost", func(g gen, p *pod) {
		c := g.container(p)
		host := one(g, "", "localhost")
		var h corev1.LifecycleHandler
		switch g.pick(3) {
		case 0:
			h.HTTPGet = &corev1.HTTPGetAction{Host: host}
		case 1:
			h.TCPSocket = &corev1.TCPSocketAction{Host: host}
		default:
			h.Exec = &corev1.ExecAction{Command: []string{"true"}}
		}
		c.Lifecycle = &corev1.Lifecycle{}
		if g.chance(0.5) {
			c.Lifecycle.PostStart = &h
		} else {
			c.Lifecycle.PreStop = &h
		}
	}},
	{"appArmor/pod", func(g gen, p *pod) { psc(p).AppArmorProfile = g.appArmor() }},
	{"appArmor/container", func(g gen, p *pod) { csc(g.container(p)).AppArmorProfile = g.appArmor() }},
	{"appArmor/annotation", func(g gen, p *pod) {
		if p.meta.Annotations == nil {
			p.meta.Annotations = map[string]string{}
		}
		key := one(g, "container.apparmor.security.beta.kubernetes.io/c0", "container.apparmor.security.beta.kubernetes.io/",
			"container.apparmor.security.beta.kubernetes.io/other", "example.com/note", "container.apparmor.security.beta.kubernetes.io")
		p.meta.Annotations[key] = one(g, "runtime/default", "localhost/prof", "localhost/", "unconfined", "", "runtime/defaultx", "docker/default")
	}},
	{"seLinux/pod", func(g gen, p *pod) { psc(p).SELinuxOptions = g.seLinux() }},
	{"seLinux/container", func(g gen, p *pod) { csc(g.container(p)).SELinuxOptions = g.seLinux() }},
	{"procMount", func(g gen, p *pod) {
		csc(g.container(p)).ProcMount = one(g, nil, ptr(corev1.DefaultProcMount), ptr(corev1.UnmaskedProcMount), ptr(corev1.ProcMountType("")))
	}},
	{"hostUsers", func(g gen, p *pod) { p.spec.HostUsers = g.optBool() }},
	{"seccomp/pod", func(g gen, p *pod) { psc(p).SeccompProfile = g.seccomp() }},
	{"seccomp/container", func(g gen, p *pod) { csc(g.container(p)).SeccompProfile = g.seccomp() }},
	{"seccomp/annotation", func(g gen, p *pod) {
		if p.meta.Annotations == nil {
			p.meta.Annotations = map[string]string{}
		}
		p.meta.Annotations[one(g, "seccomp.security.alpha.kubernetes.io/pod", "container.seccomp.security.alpha.kubernetes.io/c0")] = one(g, "unconfined", "runtime/default")
	}},
	{"sysctls", func(g gen, p *pod) {
		sc := psc(p)
		for range 1 + g.pick(2) {
			sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Value: "1", Name: one(g, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
				"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
				"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
				"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat",
				"kernel.msgmax", "net.ipv4.ip_forward", "", "net.ipv4.tcp_syncookies ")})
		}
	}},
	{"allowPrivilegeEscalation", func(g gen, p *pod) { csc(g.container(p)).AllowPrivilegeEscalation = g.optBool() }},
	{"runAsNonRoot/pod", func(g gen, p *pod) { psc(p).RunAsNonRoot = g.optBool() }},
	{"runAsNonRoot/container", func(g gen, p *pod) { csc(g.container(p)).RunAsNonRoot = g.optBool() }},
	{"runAsUser/pod", func(g gen, p *pod) { psc(p).RunAsUser = one(g, nil, ptr[int64](0), ptr[int64](1000), ptr[int64](-1)) }},
	{"runAsUser/container", func(g gen, p *pod) { csc(g.container(p)).RunAsUser = one(g, nil, ptr[int64](0), ptr[int64](1000)) }},
	{"os", func(g gen, p *pod) {
		p.spec.OS = one(g, nil, &corev1.PodOS{Name: corev1.Linux}, &corev1.PodOS{Name: corev1.Windows}, &corev1.PodOS{}, &corev1.PodOS{Name: "Windows"})
	}},
	{"securityContext/nil", func(g gen, p *pod) {
		if g.chance(0.5) {
			p.spec.SecurityContext = one(g, nil, &corev1.PodSecurityContext{})
		} else {
			g.container(p).SecurityContext = one(g, nil, &corev1.SecurityContext{})
		}
	}},
}

func (g gen) appArmor() *corev1.AppArmorProfile {
	switch g.pick(6) {
	case 0:
		return nil
	case 1:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case 2:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("p")}
	case 3:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case 4:
		return &corev1.AppArmorProfile{}
	}
	return &corev1.AppArmorProfile{Type: "runtime/default"}
}

func (g gen) seLinux() *corev1.SELinuxOptions {
	if g.chance(0.15) {
		return nil
	}
	return &corev1.SELinuxOptions{
		Type:  one(g, "", "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t", "spc_t", "unconfined_t"),
		User:  one(g, "", "", "", "system_u"),
		Role:  one(g, "", "", "", "system_r"),
		Level: one(g, "", "s0:c1,c2"),
	}
}

func (g gen) seccomp() *corev1.SeccompProfile {
	switch g.pick(5) {
	case 0:
		return nil
	case 1:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	case 2:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")}
	case 3:
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}
	return &corev1.SeccompProfile{}
}

// pod makes one generated pod: most with one or two mutations, so that a
// single control decides the verdict, some with many.
func (g gen) pod() pod {
	p := g.base()
	n := one(g, 0, 1, 1, 1, 1, 2, 2, 3, 6)
	for range n {
		mutations[g.pick(len(mutations))].fn(g, &p)
	}
	return p
}
