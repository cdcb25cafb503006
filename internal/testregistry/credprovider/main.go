// Command credprovider is a kubelet credential provider exec plugin for
// tests: it reads a CredentialProviderRequest on stdin and answers with
// the credentials in $CREDPROVIDER_USER and $CREDPROVIDER_PASSWORD for the
// image asked about, cached per image, in the request's apiVersion. With
// --log FILE it appends each request to FILE, so a test sees that it ran.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func main() {
	logFile := flag.String("log", "", "append each request to this file")
	flag.Parse()
	if err := run(*logFile); err != nil {
		fmt.Fprintln(os.Stderr, "credprovider:", err)
		os.Exit(1)
	}
}

func run(logFile string) error {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return err
	}
	if req.Kind != "CredentialProviderRequest" || req.Image == "" {
		return fmt.Errorf("not a CredentialProviderRequest for an image: %s", data)
	}
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "%s\n", data); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(credentialproviderv1.CredentialProviderResponse{
		TypeMeta:     metav1.TypeMeta{APIVersion: req.APIVersion, Kind: "CredentialProviderResponse"},
		CacheKeyType: credentialproviderv1.ImagePluginCacheKeyType,
		Auth: map[string]credentialproviderv1.AuthConfig{
			req.Image: {Username: os.Getenv("CREDPROVIDER_USER"), Password: os.Getenv("CREDPROVIDER_PASSWORD")},
		},
	})
}
