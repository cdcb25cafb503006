package devcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// AuditEvent is one request as the API server's audit log records it
// (level Metadata: who asked what, and the answer's code).
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditEvents are the requests of user that the API server has answered
// so far. The control plane's own requests are not logged.
func (c *Cluster) AuditEvents(user string) ([]AuditEvent, error) {
	f, err := os.Open(c.auditLogPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []AuditEvent
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if e.User.Username == user && e.Stage == "ResponseComplete" {
			events = append(events, e)
		}
	}
	return events, lines.Err()
}
