package policystore

import (
	"fmt"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const vapYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
  labels:
    team: platform
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= %d"
    message: "too many replicas"
`

const bindingYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
`

func vap(max int) []byte { return []byte(fmt.Sprintf(vapYAML, max)) }
