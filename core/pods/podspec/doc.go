// Package podspec turns pod manifests into pods the core can run: it
// decodes core/v1 Pods and PodLists from YAML or JSON, applies the API
// server's defaults that matter on a node, gives static pods their identity
// (UID, name, annotations) as the kubelet does, and validates the result
// with the API server's rules and messages. Every problem it reports names
// the line of the manifest it is on when that can be told.
package podspec
