// Command nettools is the curl and nc of the suite's agnhost image, which
// has Alpine's: the specs exec them in agnhost containers. Debian's are
// dynamically linked and the image is busybox-static, whose nc has no UDP.
// It does only what the node conformance specs ask of them, by the name it
// is called as:
//
//	curl [-g] [-q] [-s] [--max-time S] [--connect-timeout S] [-o FILE] [-w '%{http_code}'] URL
//	nc [-w S] -u HOST PORT        (sends stdin as one datagram, prints the reply)
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	var err error
	switch name := filepath.Base(os.Args[0]); name {
	case "curl":
		err = curl(os.Args[1:])
	case "nc":
		err = nc(os.Args[1:])
	default:
		err = fmt.Errorf("called as %q: want curl or nc", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		// curl's "couldn't connect" and nc's failure.
		os.Exit(7)
	}
}

func seconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Second)), err
}

func curl(args []string) error {
	var url, out, format string
	maxTime, connectTimeout := time.Duration(0), 30*time.Second
	quiet := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			i++
			if i < len(args) {
				return args[i]
			}
			return ""
		}
		var err error
		switch a {
		case "-g", "-q", "--globoff":
		case "-s", "--silent":
			quiet = true
		case "--max-time", "-m":
			maxTime, err = seconds(next())
		case "--connect-timeout":
			connectTimeout, err = seconds(next())
		case "-o":
			out = next()
		case "-w":
			format = next()
		default:
			if strings.HasPrefix(a, "-") {
				return fmt.Errorf("curl: option %s is not supported", a)
			}
			url = a
		}
		if err != nil {
			return fmt.Errorf("curl: %s: %w", a, err)
		}
	}
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	ctx := context.Background()
	if maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxTime)
		defer cancel()
	}
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: connectTimeout}).DialContext}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		if quiet {
			os.Exit(7)
		}
		return err
	}
	defer resp.Body.Close()
	w := io.Writer(os.Stdout)
	if out != "" && out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return err
	}
	if format != "" {
		fmt.Print(strings.ReplaceAll(format, "%{http_code}", fmt.Sprintf("%03d", resp.StatusCode)))
	}
	return nil
}

func nc(args []string) error {
	wait := time.Duration(0)
	udp := false
	var rest []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-u":
			udp = true
		case "-w":
			i++
			if i == len(args) {
				return fmt.Errorf("nc: -w needs seconds")
			}
			var err error
			if wait, err = seconds(args[i]); err != nil {
				return fmt.Errorf("nc: -w: %w", err)
			}
		default:
			rest = append(rest, args[i])
		}
	}
	if !udp || len(rest) != 2 {
		return fmt.Errorf("nc: want -u [-w S] HOST PORT")
	}
	if wait == 0 {
		wait = time.Second
	}
	conn, err := net.Dial("udp", net.JoinHostPort(rest[0], rest[1]))
	if err != nil {
		return err
	}
	defer conn.Close()
	msg, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	// Like OpenBSD nc -w: print replies until the line is quiet for S.
	buf := make([]byte, 65536)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		if err != nil {
			return nil
		}
		os.Stdout.Write(buf[:n])
	}
}
