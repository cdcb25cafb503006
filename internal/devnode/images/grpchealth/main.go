// Command grpchealth is a gRPC health server (grpc.health.v1.Health/Check)
// for the gRPC probes of end-to-end tests, in the standard library alone so
// that devnode can build it anywhere: gRPC is HTTP/2 without TLS (h2c),
// one length-prefixed protobuf message each way and a grpc-status trailer.
// It answers SERVING, or NOT_SERVING while the file named by -unhealthy
// exists. It is built statically (CGO_ENABLED=0) into the image
// localhost/busybox:1 as /bin/grpchealth; see internal/devnode.
package main

import (
	"encoding/binary"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
)

// The grpc.health.v1.HealthCheckResponse.ServingStatus values it answers.
const (
	serving    = 1
	notServing = 2
)

func main() {
	addr := flag.String("addr", ":9090", "address to listen on")
	unhealthy := flag.String("unhealthy", "/tmp/unhealthy", "while this file exists, the answer is NOT_SERVING")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /grpc.health.v1.Health/Check", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the request names a service; every one has the same health here
		status := byte(serving)
		if _, err := os.Stat(*unhealthy); err == nil {
			status = notServing
		}
		// HealthCheckResponse{status}: field 1, varint.
		msg := []byte{0x08, status}
		frame := make([]byte, 5, 5+len(msg)) // uncompressed flag, then the length
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(http.StatusOK)
		w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
	})
	srv := &http.Server{Addr: *addr, Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(srv.ListenAndServe())
}
