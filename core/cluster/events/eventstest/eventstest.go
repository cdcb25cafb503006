// Package eventstest helps tests read what client-go's FakeRecorder
// recorded.
package eventstest

import "k8s.io/client-go/tools/record"

// Drain returns the events rec holds, in order, without waiting for more.
func Drain(rec *record.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-rec.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}
