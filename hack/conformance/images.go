package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/microlet/microlet/internal/devnode"
)

// suiteImages are the images the node conformance specs run, under the names
// the suite gives them (k8s.io/kubernetes test/utils/image/manifest.go),
// built from local parts because nothing can be pulled here: Debian's
// busybox-static stands in for each image's base (alpine, busybox, debian),
// the programs are built from the k8s.io/kubernetes module
// (hack/tools/conformance/build.sh) into kubeBin, and the web servers are
// busybox httpd serving the directory the original serves.
//
// They differ from the originals where no spec of the focused set looks:
// agnhost lacks bind-tools, iperf and coredns, and its curl and nc are
// hack/tools/conformance/nettools; nginx and httpd are not
// nginx and Apache.
func suiteImages(kubeBin, agnhostSrc string) []devnode.Image {
	busybox := devnode.BusyboxImage("registry.k8s.io/e2e-test-images/busybox:1.37.0-1")
	busybox.Layers = append(busybox.Layers, binApplets(busyboxBin))
	on := func(ref string, extra devnode.FileLayer) devnode.Image {
		img := busybox
		img.Ref = ref
		img.Layers = append(append([]devnode.Layer{}, busybox.Layers...), extra)
		return img
	}
	bytes := func(s string) devnode.Content { return devnode.Bytes([]byte(s)) }

	// agnhost's Dockerfile: the binary at /, a second name for it, an
	// upload directory, porter's certificate, and a user and group some
	// specs look up by name.
	agnhost := on("registry.k8s.io/e2e-test-images/agnhost:2.56", devnode.FileLayer{
		{Path: "/agnhost", Mode: 0o755, Content: devnode.HostFile(filepath.Join(kubeBin, "agnhost"))},
		{Path: "/agnhost-2", Mode: fs.ModeSymlink, Link: "agnhost"},
		{Path: "/uploads", Mode: fs.ModeDir | 0o755},
		{Path: "/localhost.crt", Content: devnode.HostFile(filepath.Join(agnhostSrc, "porter", "localhost.crt"))},
		{Path: "/localhost.key", Content: devnode.HostFile(filepath.Join(agnhostSrc, "porter", "localhost.key"))},
		{Path: "/etc/passwd", Content: bytes("root:x:0:0:root:/root:/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" +
			"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n")},
		{Path: "/etc/group", Content: bytes("root:x:0:\nnobody:x:65534:\nuser-defined-in-image:x:1000:\n" +
			"group-defined-in-image:x:50000:user-defined-in-image\n")},
		{Path: "/home/user-defined-in-image", Mode: fs.ModeDir | 0o755},
		// Ahead of busybox's on PATH: Alpine's curl and nc (UDP) in the
		// original.
		{Path: "/usr/local/bin/nettools", Mode: 0o755, Content: devnode.HostFile(filepath.Join(kubeBin, "nettools"))},
		{Path: "/usr/local/bin/curl", Mode: fs.ModeSymlink, Link: "nettools"},
		{Path: "/usr/local/bin/nc", Mode: fs.ModeSymlink, Link: "nettools"},
		// Alpine's shell, unlike Debian's busybox, finds nc on PATH:
		// busybox's ash runs its own applets first.
		{Path: "/bin/bash", Mode: 0o755, Content: devnode.HostFile(bashStatic)},
		{Path: "/bin/sh", Mode: fs.ModeSymlink, Link: "bash"},
	})
	agnhost.Entrypoint, agnhost.Cmd = []string{"/agnhost"}, []string{"pause"}

	// nginx and httpd serve a page on port 80 in the foreground.
	nginx := on("registry.k8s.io/e2e-test-images/nginx:1.14-4", devnode.FileLayer{
		{Path: "/usr/share/nginx/html/index.html", Content: bytes("<h1>Welcome to nginx!</h1>\n")},
	})
	nginx.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"}
	httpd := on("registry.k8s.io/e2e-test-images/httpd:2.4.38-4", devnode.FileLayer{
		{Path: "/usr/local/apache2/htdocs/index.html", Content: bytes("<html><body><h1>It works!</h1></body></html>\n")},
	})
	httpd.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/usr/local/apache2/htdocs"}

	// nonewprivs: a setuid-root program printing its effective uid.
	nonewprivs := on("registry.k8s.io/e2e-test-images/nonewprivs:1.3", devnode.FileLayer{
		{Path: "/usr/local/bin/nnp", Mode: fs.ModeSetuid | 0o755, Content: devnode.HostFile(filepath.Join(kubeBin, "nonewprivs"))},
	})
	nonewprivs.Cmd = []string{"nnp"}

	// nonroot: busybox run as a user other than root.
	nonroot := busybox
	nonroot.Ref, nonroot.User = "registry.k8s.io/e2e-test-images/nonroot:1.4", "1234"

	return []devnode.Image{
		busybox, agnhost, nginx, httpd, nonewprivs, nonroot,
		devnode.PauseImage("registry.k8s.io/pause:3.10.1"),
	}
}

// busyboxBin is Debian's busybox-static; bashStatic is Debian's
// bash-static.
const (
	busyboxBin = "/bin/busybox"
	bashStatic = "/bin/bash-static"
)

// binApplets is a layer with every applet of the busybox binary it names
// in /bin, where the busybox image has them all: specs run /bin/sysctl,
// which Debian's busybox lists under /sbin.
type binApplets string

func (b binApplets) Files() ([]devnode.File, error) {
	out, err := exec.Command(string(b), "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list the applets of %s: %w", b, err)
	}
	var files []devnode.File
	for _, name := range strings.Fields(string(out)) {
		if name != "busybox" {
			files = append(files, devnode.File{Path: "/bin/" + name, Mode: fs.ModeSymlink, Link: "busybox"})
		}
	}
	return files, nil
}

// checkImageParts fails, naming the fix, when a program the images hold
// is not built.
func checkImageParts(kubeBin, agnhostSrc string) error {
	for _, p := range []string{filepath.Join(kubeBin, "agnhost"), filepath.Join(kubeBin, "nonewprivs"), filepath.Join(kubeBin, "nettools"),
		filepath.Join(agnhostSrc, "porter", "localhost.crt"), bashStatic} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("image part missing (hack/tools/conformance/build.sh builds the programs; apt-get install bash-static): %w", err)
		}
	}
	return nil
}
