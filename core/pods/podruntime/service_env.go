package podruntime

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/status"
)

// ServiceLister lists the cluster's Services for containers' service
// variables (core/cluster/services implements it).
type ServiceLister interface {
	// HasSynced reports whether the Services have been listed once.
	HasSynced() bool
	// List is the Services of namespace and of the default namespace;
	// callers must not modify them.
	List(namespace string) []*v1.Service
}

// masterService is the API server's Service in the default namespace,
// whose variables every pod gets, as upstream's masterServices.
const masterService = "kubernetes"

// errServicesNotSynced is upstream's error while the Services have not been
// listed: an API pod would miss KUBERNETES_SERVICE_HOST, which in-cluster
// clients need, so its containers wait.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// serviceEnv is the service variables of pod's containers, as upstream's
// getServiceEnvVarMap: nothing on a standalone node; else the master
// service's, and with enableServiceLinks those of every Service of the
// pod's namespace.
func (m *Manager) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if pod.Spec.EnableServiceLinks == nil {
		return nil, errors.New("nil pod.spec.enableServiceLinks encountered, cannot construct envvars")
	}
	if m.opts.Services == nil {
		return nil, nil
	}
	if !status.IsStaticPod(pod) && !m.opts.Services.HasSynced() {
		return nil, errServicesNotSynced
	}
	return serviceVariables(m.opts.Services.List(pod.Namespace), pod.Namespace, *pod.Spec.EnableServiceLinks), nil
}

// serviceVariables are the variables of the Services a pod of namespace
// sees: the master service of the default namespace always, the
// namespace's own Services with links enabled (one of the namespace named
// like the master service replaces it), each with a cluster IP.
func serviceVariables(services []*v1.Service, namespace string, links bool) map[string]string {
	seen := map[string]*v1.Service{}
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			if _, ok := seen[s.Name]; !ok {
				seen[s.Name] = s
			}
		case s.Namespace == namespace && links:
			seen[s.Name] = s
		}
	}
	env := map[string]string{}
	for _, s := range seen {
		addServiceVariables(env, s)
	}
	return env
}

// addServiceVariables adds one Service's variables, as upstream's
// envvars.FromServices: <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (the first
// port) and _SERVICE_PORT_<PORT NAME> for named ports, and Docker's link
// variables <NAME>_PORT and <NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
func addServiceVariables(env map[string]string, s *v1.Service) {
	if len(s.Spec.Ports) == 0 {
		return // validation requires a port for a Service with a cluster IP
	}
	prefix := envVariableName(s.Name)
	ip := s.Spec.ClusterIP
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env[prefix+"_SERVICE_PORT_"+envVariableName(p.Name)] = strconv.Itoa(int(p.Port))
		}
	}
	for i, p := range s.Spec.Ports {
		protocol := strings.ToLower(string(v1.ProtocolTCP))
		if p.Protocol != "" {
			protocol = strings.ToLower(string(p.Protocol))
		}
		url := fmt.Sprintf("%s://%s", protocol, net.JoinHostPort(ip, strconv.Itoa(int(p.Port))))
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(protocol))
		env[portPrefix] = url
		env[portPrefix+"_PROTO"] = protocol
		env[portPrefix+"_PORT"] = strconv.Itoa(int(p.Port))
		env[portPrefix+"_ADDR"] = ip
	}
}

// envVariableName is a Service or port name as a variable name, as
// upstream's makeEnvVariableName.
func envVariableName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
