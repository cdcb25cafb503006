package logrotation

import (
	"reflect"
	"testing"
)

func TestPlanRotation(t *testing.T) {
	const l = "/logs/0.log"
	for _, tc := range []struct {
		name     string
		rotated  []string
		maxFiles int
		want     Plan
	}{
		{name: "first rotation", maxFiles: 5},
		{
			name: "newest rotation is compressed", maxFiles: 5,
			rotated: []string{l + ".20260101-000000"},
			want:    Plan{Compress: []string{l + ".20260101-000000"}},
		},
		{
			name: "compressed rotations are kept", maxFiles: 5,
			rotated: []string{l + ".20260101-000001", l + ".20260101-000000.gz"},
			want:    Plan{Compress: []string{l + ".20260101-000001"}},
		},
		{
			name: "oldest beyond the limit are removed", maxFiles: 3,
			rotated: []string{l + ".20260101-000002", l + ".20260101-000000.gz", l + ".20260101-000001.gz"},
			want: Plan{
				Remove:   []string{l + ".20260101-000000.gz", l + ".20260101-000001.gz"},
				Compress: []string{l + ".20260101-000002"},
			},
		},
		{
			name: "two files keep no old rotation", maxFiles: 2,
			rotated: []string{l + ".20260101-000000"},
			want:    Plan{Remove: []string{l + ".20260101-000000"}},
		},
		{
			name: "leftovers of an interrupted compression go first", maxFiles: 5,
			rotated: []string{l + ".20260101-000000", l + ".20260101-000000.gz", l + ".20260101-000001", l + ".20260101-000001.gz.tmp"},
			want: Plan{
				Remove:   []string{l + ".20260101-000000", l + ".20260101-000001.gz.tmp"},
				Compress: []string{l + ".20260101-000001"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanRotation(tc.rotated, tc.maxFiles); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PlanRotation(%q, %d) = %+v, want %+v", tc.rotated, tc.maxFiles, got, tc.want)
			}
		})
	}
}

func TestParseMaxSize(t *testing.T) {
	for in, want := range map[string]int64{"10Mi": 10 << 20, "1Ki": 1024, "100": 100, "-1": -1} {
		if got, err := ParseMaxSize(in); err != nil || got != want {
			t.Errorf("ParseMaxSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ten", "0.5"} {
		if _, err := ParseMaxSize(in); err == nil {
			t.Errorf("ParseMaxSize(%q) succeeded", in)
		}
	}
}
