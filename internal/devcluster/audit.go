package devcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// AuditEvent is one request as the API server's audit log records it
// (level Metadata: who asked what, and the answer's code).
type AuditEvent struct {
	// AuditID is the request's: a watch logs ResponseStarted, then
	// ResponseComplete when it ends.
	AuditID                  string    `json:"auditID"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	Stage                    string    `json:"stage"`
	Verb                     string    `json:"verb"`
	RequestURI               string    `json:"requestURI"`
	UserAgent                string    `json:"userAgent"`
	User                     struct {
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
	return c.readAudit(func(e AuditEvent) bool { return e.User.Username == user && e.Stage == "ResponseComplete" })
}

// RequestCount is how many requests of user the API server received in
// [from, to), each counted once, watches as they start. A request is
// logged when answered (a watch when it starts), so a count read right
// after to misses only requests still unanswered.
func (c *Cluster) RequestCount(user string, from, to time.Time) (int, error) {
	events, err := c.readAudit(func(e AuditEvent) bool {
		return e.User.Username == user && !e.RequestReceivedTimestamp.Before(from) && e.RequestReceivedTimestamp.Before(to)
	})
	if err != nil {
		return 0, err
	}
	ids := map[string]bool{}
	for _, e := range events {
		ids[e.AuditID] = true
	}
	return len(ids), nil
}

// readAudit reads the audit log's events that keep says to keep.
func (c *Cluster) readAudit(keep func(AuditEvent) bool) ([]AuditEvent, error) {
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
		if keep(e) {
			events = append(events, e)
		}
	}
	return events, lines.Err()
}
